"""What a task that runs the team's own program (`tfk8s:program`) is given: its container,
environment and volumes. The rest of its pod (placement, resources, security) is every task's
(components/objects/pods.py).

Everything a program reads is in its environment, where the kubelet expands it, so no
launcher of tfk8s's runs in the image and any image works: the experiment's shared ConfigMap
holds the cluster (`TFK8S_CLUSTER`), `PS_HOSTS`, `WORKER_HOSTS`, `PS_REPLICAS` and
`WORKER_REPLICAS`; the pod adds `JOB_NAME`, `TASK_INDEX` (the Job completion index, or the
StatefulSet ordinal, through the downward API) and `TF_CONFIG`, composed of both. The kubelet
expands `$(NAME)` in `command` and `args` from the same environment (the seed's `run.sh`
arguments).

A program given a `command` is started by a POSIX shell that passes SIGTERM on
(components/objects/task_shell.py). The pod shares no process namespace (the policy pack refuses
it for any TF pod). Without a `command` the image's entrypoint is PID 1 as the image made it.
"""

from __future__ import annotations

from typing import Any

from ..plan import labels as L
from ..plan.experiment import Experiment
from ..plan.workloads import TaskGroup
from ..spec.program import PROGRAM_MOUNT, TF_CONFIG, ProgramSpec, SecretRef
from ..spec.task_roles import role_of
from ..spec.trainer_contract import CLUSTER_ENV, GRPC_OPTIONS_ENV, grpc_options_value
from .task_shell import shell_started

Manifest = dict[str, Any]

PROGRAM_VOLUME = "program"
TMP_VOLUME = "tmp"
TMP_DIR = "/tmp"


def shared_program_env(experiment: Experiment, scratch_dir: str) -> dict[str, str]:
    """What every task of a program reads from the shared ConfigMap."""
    cluster = experiment.tf_config.cluster
    return {
        CLUSTER_ENV: experiment.tf_config.cluster_json,
        "PS_HOSTS": ",".join(cluster.get("ps", ())),
        "WORKER_HOSTS": ",".join(cluster["worker"]),
        "PS_REPLICAS": str(len(cluster.get("ps", ()))),
        "WORKER_REPLICAS": str(len(cluster["worker"])),
        # The root filesystem is read-only: home and temporary files go to the task's scratch.
        "HOME": scratch_dir,
        "PYTHONUNBUFFERED": "1",  # a task's log lines reach `kubectl logs` and `status` as printed
        # TensorFlow's gRPC channels retry a lost task within half a second and look its name up
        # again, as tfk8s's trainer's do: a lost worker's replacement is then reached as it serves,
        # where TensorFlow's defaults left a team's TF2 chief trying the old pod's address for 20 s
        # and its DNS name unread for up to 30 s (trainer/peers.py). A pod's own `env` wins over
        # this shared ConfigMap (its `envFrom`): a team's `program.env` entry of the name replaces it.
        GRPC_OPTIONS_ENV: grpc_options_value(),
    }


def program_task_env(experiment: Experiment, group: TaskGroup) -> list[Manifest]:
    """The pod's own variables, in an order in which each refers only to those before it."""
    program = experiment.program
    assert program is not None
    return [
        {"name": "JOB_NAME", "value": group.task_type},
        {"name": "TASK_INDEX", **task_index_source(experiment, group)},
        {"name": TF_CONFIG, "value": experiment.tf_config.render(group.task_type, "TASK_INDEX", program=True)},
        *(_env_entry(experiment, name, value) for name, value in program.env.items()),
    ]


def task_index_source(experiment: Experiment, group: TaskGroup) -> Manifest:
    """Where a pod's task index comes from: a role of one task (the chief, the evaluator) has it
    written in; a JobSet pod's is its Job completion index (set by the Job controller since
    Kubernetes 1.21), a StatefulSet pod's its ordinal (the StatefulSet controller's label), both
    through the downward API."""
    if role_of(group.task_type).one_task:
        return {"value": str(group.first_index)}
    if experiment.workload == "jobset":
        # One Job per role (components/plan/workloads.py): the completion index is the task index.
        assert group.first_index == 0, "a JobSet role is one group"
        field = f"metadata.annotations['{L.COMPLETION_INDEX}']"
    else:
        field = f"metadata.labels['{L.POD_INDEX}']"
    return {"valueFrom": {"fieldRef": {"fieldPath": field}}}


def _env_entry(experiment: Experiment, name: str, value: str | SecretRef) -> Manifest:
    if name in experiment.secret_env:
        # Set with `pulumi config set --secret`: its value is never written into the pod, the
        # kubelet reads it from the experiment's own Secret.
        return {"name": name, "valueFrom": {"secretKeyRef": {"name": experiment.names.program_secret, "key": name}}}
    if isinstance(value, SecretRef):
        return {"name": name, "valueFrom": {"secretKeyRef": {"name": value.secret, "key": value.key}}}
    return {"name": name, "value": value}


def program_command(program: ProgramSpec, task_type: str, archived: bool) -> Manifest:
    """The container's command and args: the role's own, else the program's, started by the shell
    that passes SIGTERM on; else the image's entrypoint, with the args given."""
    command, args = program.command_of(task_type)
    if command is None:
        assert not archived, "tfk8s:logs needs a command (log_archive_checks)"
        return {"args": list(args)} if args is not None else {}
    return shell_started([*command, *(args or ())], archived)


def program_volumes(experiment: Experiment) -> list[Manifest]:
    program = experiment.program
    assert program is not None
    volumes: list[Manifest] = [{"name": TMP_VOLUME, "emptyDir": {"sizeLimit": experiment.scratch_base}}]
    if experiment.program_source is not None:
        volumes.append(
            {
                "name": PROGRAM_VOLUME,
                "configMap": {
                    "name": experiment.names.program_config_map,
                    "items": experiment.program_source.volume_items(),
                },
            }
        )
    volumes += [
        {
            "name": _claim_volume_name(index),
            "persistentVolumeClaim": {"claimName": volume.claim, "readOnly": volume.read_only},
        }
        for index, volume in enumerate(program.volumes)
    ]
    return volumes


def program_mounts(experiment: Experiment) -> list[Manifest]:
    program = experiment.program
    assert program is not None
    mounts: list[Manifest] = [{"name": TMP_VOLUME, "mountPath": TMP_DIR}]
    if experiment.program_source is not None:
        mounts.append({"name": PROGRAM_VOLUME, "mountPath": PROGRAM_MOUNT, "readOnly": True})
    mounts += [
        {"name": _claim_volume_name(index), "mountPath": volume.mount_path, "readOnly": volume.read_only}
        for index, volume in enumerate(program.volumes)
    ]
    return mounts


def program_config_map_data(experiment: Experiment) -> Manifest:
    """`data` and `binaryData` of the ConfigMap that ships the program's source."""
    assert experiment.program_source is not None
    data, binary = experiment.program_source.config_map_data()
    return {**({"data": data} if data else {}), **({"binaryData": binary} if binary else {})}


def _claim_volume_name(index: int) -> str:
    return f"claim-{index}"
