"""`tfk8s:logs`: the log archive's objects (plain dicts, no Pulumi here); what each task is given to
send its log there is components/objects/log_shipping.py.

Each task's program writes into a pipe that the log shipper (trainer/log_shipper.py, started by the
task's shell) copies to the container's output, as before, and streams to the collector
(trainer/log_collector.py): one pod beside the tasks (components/objects/side_pods.py) that keeps
each task's last runs on its volume. Both run on the tasks' python3; their code is a ConfigMap (with
the protocol both import, trainer/log_protocol.py), and the collector's pod carries its hash. So the
logs outlive the pods, which JobSet deletes once the experiment ends, with no right to read pods'
logs in the namespace and nothing installed on the servers. `python -m components logs` reads the
archive through a port-forward to the collector's read port, which listens on its pod's loopback:
the collector's NetworkPolicy admits the experiment's tasks to its ingest port only, and lets the
collector connect nowhere.
"""

from __future__ import annotations

from typing import Any

from ..plan import labels as L
from ..plan.experiment import Experiment
from ..spec.logs import CODE_MOUNT, INGEST_PORT, KEPT_RUNS, READ_PORT, LogsSpec
from ..spec.logs_rules import run_bytes
from ..spec.trainer_contract import log_protocol
from .log_shipping import shipper_mount, shipper_volume
from .manifests import SKIP_AWAIT
from .pods import restricted_container_security, with_volumes_of_its_group
from .side_pods import headless_service, side_deployment, side_metadata, side_network_policy, side_pod_spec

Manifest = dict[str, Any]

PORT_NAME = "logs"
ARCHIVE_VOLUME = "archive"
ARCHIVE_DIR = "/logs"


def log_archive_objects(experiment: Experiment) -> list[tuple[str, Manifest]]:
    """(Pulumi suffix, manifest) of each object, in apply order; none without tfk8s:logs."""
    spec = experiment.config.logs
    if spec is None:
        return []
    name = experiment.names.log_archive
    objects = [
        ("log-archive-code", _code_config_map(experiment)),
        ("log-archive-policy", _network_policy(experiment)),
        ("log-archive-service", headless_service(experiment, name, L.LOG_COLLECTOR, PORT_NAME, INGEST_PORT)),
    ]
    if spec.storage_class is not None:
        objects.append(("log-archive-claim", _claim(experiment, spec)))
    objects.append(("log-archive", _deployment(experiment, spec)))
    return objects


def _code_config_map(experiment: Experiment) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": side_metadata(experiment, experiment.names.log_archive, L.LOG_COLLECTOR),
        "data": dict(sorted(experiment.trainer_bundle.log_archive_files.items())),
    }


def _network_policy(experiment: Experiment) -> Manifest:
    tasks = {"from": [{"podSelector": {"matchLabels": L.experiment_selector(experiment.stack)}}]}
    # It only listens: no egress rule, so it connects nowhere.
    ingress = [tasks | {"ports": [{"protocol": "TCP", "port": INGEST_PORT}]}]
    return side_network_policy(experiment, experiment.names.log_archive, L.LOG_COLLECTOR, ingress, egress=[])


def _claim(experiment: Experiment, spec: LogsSpec) -> Manifest:
    assert spec.storage_class is not None
    meta = side_metadata(experiment, experiment.names.log_archive, L.LOG_COLLECTOR)
    # A WaitForFirstConsumer class binds once the collector's pod exists: `pulumi up` must not wait.
    meta["annotations"] = {SKIP_AWAIT: "true"}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": meta,
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": spec.size}},
            "storageClassName": spec.storage_class,
        },
    }


def _deployment(experiment: Experiment, spec: LogsSpec) -> Manifest:
    container: Manifest = {
        "name": L.LOG_COLLECTOR,
        # The tasks' image: it has the python3 the shipper needs anyway.
        "image": experiment.config.cluster.image,
        "command": [
            "python3",
            f"{CODE_MOUNT}/{log_protocol.COLLECTOR}",
            *("--dir", ARCHIVE_DIR, "--ingest-port", str(INGEST_PORT), "--read-port", str(READ_PORT)),
            *("--run-bytes", str(run_bytes(experiment.config)), "--keep-runs", str(KEPT_RUNS)),
        ],
        "env": [{"name": "PYTHONDONTWRITEBYTECODE", "value": "1"}],
        "ports": [{"name": PORT_NAME, "containerPort": INGEST_PORT}],
        "readinessProbe": {"tcpSocket": {"port": PORT_NAME}},
        "resources": {"requests": {"cpu": spec.cpu, "memory": spec.memory}, "limits": {"memory": spec.memory}},
        "securityContext": restricted_container_security(),
        "volumeMounts": [shipper_mount(), {"name": ARCHIVE_VOLUME, "mountPath": ARCHIVE_DIR}],
    }
    if spec.storage_class is not None:
        archive: Manifest = {"persistentVolumeClaim": {"claimName": experiment.names.log_archive}}
    else:
        archive = {"emptyDir": {"sizeLimit": spec.size}}
    pod = side_pod_spec(experiment, container, [shipper_volume(experiment), {"name": ARCHIVE_VOLUME, **archive}])
    if spec.storage_class is not None:
        # The claim's files belong to the pod's group, so the unprivileged collector can write them.
        with_volumes_of_its_group(pod)
    deployment = side_deployment(experiment, experiment.names.log_archive, L.LOG_COLLECTOR, pod)
    # Its code is a mounted ConfigMap, which does not restart a running pod when it changes; a
    # changed hash in the pod template does (its settings are its command, in the template already).
    template = deployment["spec"]["template"]
    template["metadata"]["annotations"] = {L.LOG_COLLECTOR_HASH_ANNOTATION: experiment.trainer_bundle.collector_sha256}
    return deployment
