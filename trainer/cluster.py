"""The task this process is, from TF_CONFIG, and the servers PS and workers run."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Mapping

from .kubelet_expansion import references
from .settings import SETTINGS_ENV, TrainerSettings
from .shared_names import (  # noqa: F401 (the variables a task reads, looked up here)
    CLUSTER_ENV,
    CLUSTER_FILE_ENV,
    COMPLETION_INDEX_ENV,
    EVALUATOR,
    FIRST_INDEX_ENV,
    POD_INDEX,
    TASK_INDEX_ENV,
    TASK_TYPE_ENV,
    TRAINER_ROLES,
    TRAINING_CLUSTER,
    TrainerRole,
    role_of,
    task_name,
)

TF_CONFIG_ENV = "TF_CONFIG"
# The training cluster's roles, in TF_CONFIG's order; the evaluator (EVALUATOR) is outside it.
# components/spec/task_roles.py holds every role's traits; tests/plan/test_task_roles.py holds the
# trainer's table (trainer/shared_names.py: the trainer imports nothing from components/) to it.
ROLES = TRAINING_CLUSTER


class ClusterConfigError(ValueError):
    pass


@dataclass(frozen=True)
class TaskConfig:
    cluster: dict[str, list[str]]
    task_type: str
    task_index: int

    @property
    def ps_count(self) -> int:
        return len(self.cluster.get("ps", []))

    @property
    def worker_count(self) -> int:
        return len(self.cluster.get("worker", []))

    @property
    def name(self) -> str:
        return task_name(self.task_type, self.task_index)

    @property
    def role(self) -> TrainerRole:
        """What the trainer does as this task: its row of trainer/shared_names.py's table."""
        role = role_of(self.task_type)
        if role is None:  # read_task_config refuses such a task first
            raise ClusterConfigError(f"task type '{self.task_type}' has no row in tfk8s's trainer")
        return role

    def tf_config_json(self) -> str:
        return json.dumps({"cluster": self.cluster, "task": {"type": self.task_type, "index": self.task_index}})


def composed_tf_config(environ: Mapping[str, str]) -> str | None:
    """A JobSet pod's TF_CONFIG from its pieces; None where the pod has none of them."""
    if not environ.get(TASK_TYPE_ENV):
        return None
    cluster = cluster_json(environ)
    missing = [name for name in (FIRST_INDEX_ENV, COMPLETION_INDEX_ENV) if not environ.get(name)]
    if missing or cluster is None:
        missing = ([] if cluster is not None else [f"{CLUSTER_ENV} (or {CLUSTER_FILE_ENV})"]) + missing
        raise ClusterConfigError(
            f"{TASK_TYPE_ENV} is set but {', '.join(missing)} not: a JobSet task needs the cluster from "
            f"the shared ConfigMap, its group's first index and its Job completion index (an Indexed Job)"
        )
    try:
        index = int(environ[FIRST_INDEX_ENV]) + int(environ[COMPLETION_INDEX_ENV])
    except ValueError:
        raise ClusterConfigError(
            f"{FIRST_INDEX_ENV}={environ[FIRST_INDEX_ENV]!r} and {COMPLETION_INDEX_ENV}="
            f"{environ[COMPLETION_INDEX_ENV]!r} must be whole numbers"
        ) from None
    task = json.dumps({"type": environ[TASK_TYPE_ENV], "index": index}, separators=(",", ":"))
    return f'{{"cluster":{cluster},"task":{task}}}'


def cluster_json(environ: Mapping[str, str]) -> str | None:
    """The cluster JSON from its variable, or from the file its file variable names."""
    if environ.get(CLUSTER_ENV):
        return environ[CLUSTER_ENV]
    path = environ.get(CLUSTER_FILE_ENV)
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError as error:
        raise ClusterConfigError(f"{CLUSTER_FILE_ENV}={path}: cannot read the cluster: {error.strerror}") from None


def read_task_config(environ: Mapping[str, str] = os.environ) -> TaskConfig:
    raw = environ.get(TF_CONFIG_ENV) or composed_tf_config(environ)
    if not raw:
        raise ClusterConfigError(f"{TF_CONFIG_ENV} is not set; tfk8s sets it on every task")
    if environ.get(TASK_INDEX_ENV) == "":
        # The downward API gives an empty value for a label the pod does not have.
        raise ClusterConfigError(
            f"{TASK_INDEX_ENV} is empty: the pod has no {POD_INDEX} label, which "
            "StatefulSets set from Kubernetes 1.28 on; tfk8s needs Kubernetes 1.28 or newer"
        )
    unexpanded = references(raw)
    if unexpanded:
        # In a pod the kubelet expands $(TFK8S_CLUSTER) from the shared ConfigMap
        # and $(TFK8S_TASK_INDEX) from the pod's index label.
        raise ClusterConfigError(
            f"{TF_CONFIG_ENV} still holds an unexpanded reference ($({unexpanded[0]})): "
            "outside Kubernetes, set it in full"
        )
    try:
        parsed = json.loads(raw)
        cluster = {role: list(addresses) for role, addresses in parsed["cluster"].items()}
        task_type, task_index = parsed["task"]["type"], int(parsed["task"]["index"])
    except (ValueError, KeyError, TypeError) as error:
        raise ClusterConfigError(f"{TF_CONFIG_ENV} is malformed: {error}") from None
    role = role_of(task_type)
    if role is None:
        known = ", ".join(row.name for row in TRAINER_ROLES)
        raise ClusterConfigError(f"task type '{task_type}' is not one of {known}")
    if not role.in_training_cluster:
        if role.one_task and task_index != 0:
            raise ClusterConfigError(f"task {task_type}-{task_index}: an experiment has one {task_type}, index 0")
        if task_type in cluster:
            raise ClusterConfigError(
                f"the cluster lists {task_type}: a role outside the training cluster (TensorFlow's side-car "
                "evaluator) stays out of the training cluster"
            )
    elif not 0 <= task_index < len(cluster.get(task_type, [])):
        raise ClusterConfigError(f"task {task_type}-{task_index} is not in the cluster")
    if not cluster.get("ps") or not cluster.get("worker"):
        raise ClusterConfigError("the cluster needs at least one ps and one worker")
    return TaskConfig(cluster, task_type, task_index)


def read_settings(environ: Mapping[str, str] = os.environ) -> TrainerSettings:
    """The settings the Pulumi program validated, from their env JSON; the defaults where unset."""
    if environ.get(SETTINGS_ENV):
        return TrainerSettings.from_json(environ[SETTINGS_ENV])
    return TrainerSettings()


_PS_DEVICE = re.compile(r"/job:ps/replica:\d+/task:(\d+)")


def ps_named_in(message: str) -> int | None:
    """The PS index a TensorFlow error message names, if any."""
    match = _PS_DEVICE.search(message)
    return int(match.group(1)) if match else None


def serve(task: TaskConfig) -> None:
    """Run this PS or worker's gRPC server until the process is stopped."""
    import tensorflow as tf

    from .data import write_task_index
    from .devices import log_devices

    if task.role.runs_steps:
        write_task_index(task.task_index)
    server = tf.distribute.Server(
        tf.train.ClusterSpec(task.cluster),
        job_name=task.task_type,
        task_index=task.task_index,
        protocol="grpc",
        start=True,
    )
    print(f"{task.name}: serving on {task.cluster[task.task_type][task.task_index]}", flush=True)
    log_devices(task.name)  # after the server starts: a replaced worker is waited for (0.2 s here)
    server.join()
