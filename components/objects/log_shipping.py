"""`tfk8s:logs`: what each task is given to send its log to the archive's collector
(components/objects/log_archive.py): the shipper's code, which task it is, and the shell that
starts its program with its output through the shipper (components/objects/task_shell.py
LOG_FORWARDER). The variables' names are the protocol's (trainer/log_protocol.py).
"""

from __future__ import annotations

from typing import Any

from ..plan import labels as L
from ..plan.experiment import Experiment
from ..plan.workloads import TaskGroup
from ..spec.logs import CODE_MOUNT, INGEST_PORT
from ..spec.trainer_contract import log_protocol
from .program_container import task_index_source

Manifest = dict[str, Any]

CODE_VOLUME = "log-archive-code"
# Where the collector is: every task reads it from the shared environment.
COLLECTOR_ENV = log_protocol.COLLECTOR_ENV


def collector_address(experiment: Experiment) -> str:
    """host:port the tasks send their logs to (the collector's headless Service)."""
    return f"{experiment.names.log_archive}.{experiment.namespace}.svc:{INGEST_PORT}"


def collector_pod_labels(experiment: Experiment) -> dict[str, str]:
    return L.side_pod_labels(experiment.stack, L.LOG_COLLECTOR)


def shipper_env(experiment: Experiment, group: TaskGroup) -> list[Manifest]:
    """Which task's log a pod sends (the collector's address is in the shared environment)."""
    return [
        {"name": log_protocol.TASK_TYPE_ENV, "value": group.task_type},
        {"name": log_protocol.TASK_INDEX_ENV, **task_index_source(experiment, group)},
        {"name": log_protocol.POD_NAME_ENV, "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
    ]


def shipper_volume(experiment: Experiment) -> Manifest:
    return {"name": CODE_VOLUME, "configMap": {"name": experiment.names.log_archive}}


def shipper_mount() -> Manifest:
    return {"name": CODE_VOLUME, "mountPath": CODE_MOUNT, "readOnly": True}


def with_log_shipper(experiment: Experiment, group: TaskGroup, pod: Manifest, container: Manifest) -> None:
    """With tfk8s:logs, give the task's pod the shipper's code and the task's name (its command is
    started by task_shell.LOG_FORWARDER)."""
    if experiment.config.logs is None:
        return
    container["env"] += shipper_env(experiment, group)
    container["volumeMounts"].append(shipper_mount())
    pod["volumes"].append(shipper_volume(experiment))


def collector_egress_rule(experiment: Experiment) -> Manifest:
    """What a task's egress policy (cluster.egress) adds: the collector's ingest port."""
    return {
        "to": [{"podSelector": {"matchLabels": collector_pod_labels(experiment)}}],
        "ports": [{"protocol": "TCP", "port": INGEST_PORT}],
    }
