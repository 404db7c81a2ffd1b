"""A task's pod, as every workload model runs it: the pod template (security, volumes, the
container, its environment and resources; where it may run is pod_placement.py's). The JobSet's
Jobs, the StatefulSets and the chief's Job all take it from here.
"""

from __future__ import annotations

from typing import Any, Optional

from ..plan import labels as L
from ..plan.experiment import Experiment
from ..plan.tf_config import TF_PORT
from ..plan.workloads import TaskGroup
from ..spec.program import PROGRAM_MOUNT
from ..spec.roles import CHECKPOINT_MOUNT, checkpoint_volume_folder
from ..spec.task_roles import TaskRole, role_of
from ..spec.trainer_contract import (  # noqa: F401 (looked up here)
    FIRST_INDEX_ENV,
    TASK_INDEX_ENV,
    TASK_TYPE_ENV,
    TF_PORT_NAME,
    TRAINER_COMMAND,
    TRAINER_PACKAGE,
)
from .log_shipping import with_log_shipper
from .pod_placement import affinity, reads_checkpoint_volume, tolerations, topology_spread
from .program_container import (
    program_command,
    program_mounts,
    program_task_env,
    program_volumes,
    task_index_source,
)
from .start_barrier import start_barrier
from .task_shell import shell_started

Manifest = dict[str, Any]

CONTAINER_NAME = "tensorflow"
TRAINER_VOLUME = "trainer"
SCRATCH_VOLUME = "scratch"
CODE_ROOT = "/opt/tfk8s"
SCRATCH_DIR = "/scratch"
# The stock TensorFlow image runs as root; pods run as an unprivileged user.
RUN_AS_USER = 1000
# Settings and environment are shared by every task: one ConfigMap (trainer_env_config_map), not N
# copies. A cluster too large for an environment variable: its own ConfigMap, mounted as a file.
CLUSTER_VOLUME = "cluster"
CLUSTER_MOUNT = "/etc/tfk8s"
CLUSTER_FILE = "cluster.json"
CHECKPOINT_VOLUME = "checkpoints"


def restricted_pod_security() -> Manifest:
    """The restricted Pod Security Standard's pod fields, as every pod tfk8s makes sets them."""
    return {
        "runAsNonRoot": True,
        "runAsUser": RUN_AS_USER,
        "runAsGroup": RUN_AS_USER,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def restricted_container_security() -> Manifest:
    """The restricted Pod Security Standard's container fields, and a read-only root."""
    return {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]}}


def pod_template(experiment: Experiment, group: TaskGroup) -> Manifest:
    cluster = experiment.config.cluster
    restart_policy = _restart_policy(experiment, group)
    main = _container(experiment, group)
    spec: Manifest = {
        **({"restartPolicy": restart_policy} if restart_policy else {}),
        "automountServiceAccountToken": False,
        # Services never become env vars: the trainer reads TF_CONFIG only.
        "enableServiceLinks": False,
        "securityContext": restricted_pod_security(),
        "affinity": affinity(experiment, group),
        "containers": [main],
        "volumes": [
            # Bounded: a task that fills it is evicted, not the server's disk.
            {"name": SCRATCH_VOLUME, "emptyDir": {"sizeLimit": experiment.scratch_size(group.task_type)}},
        ],
    }
    if experiment.program is None:
        spec["volumes"].insert(0, {"name": TRAINER_VOLUME, "configMap": {"name": experiment.names.trainer_config_map}})
    else:
        spec["volumes"] += program_volumes(experiment)
        if any(not volume.read_only for volume in experiment.program.volumes):
            # A claim the unprivileged task writes to (TensorBoard's events, a TFJob's output folder,
            # written as root under TFJob): its files become the task's group, as the checkpoint's.
            with_volumes_of_its_group(spec)
    if experiment.cluster_as_file:
        spec["volumes"].append({"name": CLUSTER_VOLUME, "configMap": {"name": experiment.names.cluster_config_map}})
    # The evaluator waits for no one: it never decides whether the experiment started.
    if role_of(group.task_type).waits_at_start_barrier:
        barrier = start_barrier(experiment, main, [m for m in main["volumeMounts"] if m["name"] == CLUSTER_VOLUME])
        if barrier is not None:
            spec["initContainers"] = [barrier]
    if reads_checkpoint_volume(experiment, group):
        with_checkpoint_claim(experiment, spec)
    with_log_shipper(experiment, group, spec, main)
    if cluster.priority_class is not None:
        spec["priorityClassName"] = cluster.priority_class
    tolerated = tolerations(experiment, group)
    if tolerated:
        spec["tolerations"] = tolerated
    spread = topology_spread(experiment, group)
    if spread:
        spec["topologySpreadConstraints"] = spread
    if cluster.image_pull_secrets:
        spec["imagePullSecrets"] = [{"name": name} for name in cluster.image_pull_secrets]
    return {
        "metadata": {
            # A production experiment's pods say so too: in a team's namespace, which tfk8s does not
            # label, the policy pack learns it from them.
            "labels": {
                **L.pod_labels(experiment.stack, group),
                **({L.PRODUCTION: "true"} if cluster.production else {}),
                **L.program_labels(runs_tfk8s_trainer=experiment.program is None),
            },
            # Mounted code and envFrom do not restart pods when they change; a
            # changed hash does, and shows in `pulumi preview`.
            "annotations": {L.TRAINER_HASH_ANNOTATION: experiment.trainer_hash},
        },
        "spec": spec,
    }


def with_checkpoint_claim(experiment: Experiment, spec: Manifest) -> None:
    """Give the pod `spec` the chief's checkpoint claim, writable at the pod, its files the pod's group
    (with_volumes_of_its_group), so the unprivileged chief can write them. A pod that only reads it (the evaluator,
    TensorBoard) asks the same and mounts it read-only in its container alone: Kubernetes re-owns a
    local volume only for the first pod that mounts it, and only through a writable mount (seen on
    real nodes: an evaluator that mounted the claim read-only first left its root to root, and the
    chief could write no checkpoint).
    """
    spec["volumes"].append(
        {"name": CHECKPOINT_VOLUME, "persistentVolumeClaim": {"claimName": experiment.names.checkpoint_claim}}
    )
    with_volumes_of_its_group(spec)


def with_volumes_of_its_group(spec: Manifest) -> None:
    """The pod's volumes' files belong to its group: re-owned only when a volume's root is not the group's
    yet, not file by file at every start of a pod whose volume holds many files (checkpoints, logs)."""
    spec["securityContext"] |= {"fsGroup": RUN_AS_USER, "fsGroupChangePolicy": "OnRootMismatch"}


def _restart_policy(experiment: Experiment, group: TaskGroup) -> Optional[str]:
    """Every task a Job runs is retried as a new pod (`Never`), as its Pod failure policy requires
    (components/objects/failure_rules.py: `failOn`, and evictions that never count); the failed
    pod stays with its exit code and log for `status`. So a retried chief starts from the last
    checkpoint that outlives its pod (`chief.checkpointVolume`, or a remote `checkpointDir`).

    A JobSet's PS never restarts in place: a lost PS fails its Job, which restarts the
    experiment. A StatefulSet's PS and workers, which serve until destroyed, take the default (Always).
    """
    if role_of(group.task_type).runs_to_completion or experiment.workload == "jobset":
        return "Never"
    return None


def _container(experiment: Experiment, group: TaskGroup) -> Manifest:
    program = experiment.program
    archived = experiment.config.logs is not None
    role = role_of(group.task_type)
    container: Manifest = {
        "name": CONTAINER_NAME,
        # The GPU build where the role takes GPUs (ClusterSpec.worker_image: the CPU build without them).
        "image": experiment.config.cluster.worker_image if role.takes_gpus else experiment.config.cluster.image,
        **(_trainer_command(archived) if program is None else program_command(program, group.task_type, archived)),
        # envFrom is read first and env in order, so TF_CONFIG's $(TFK8S_CLUSTER)
        # and its index variable expand to the shared cluster and this pod's index.
        "env": _task_env(experiment, group) if program is None else program_task_env(experiment, group),
        "envFrom": [{"configMapRef": {"name": experiment.names.trainer_env_config_map}}],
        "resources": _resources(experiment, role),
        "securityContext": restricted_container_security(),
        "volumeMounts": [{"name": SCRATCH_VOLUME, "mountPath": SCRATCH_DIR}],
        # A failed task's last log lines stay in its pod's status, for `status` to say why it failed.
        "terminationMessagePolicy": "FallbackToLogsOnError",
    }
    if program is None:
        # ConfigMap volumes are always mounted read-only.
        container["volumeMounts"].insert(0, {"name": TRAINER_VOLUME, "mountPath": f"{CODE_ROOT}/{TRAINER_PACKAGE}"})
    else:
        container["volumeMounts"] += program_mounts(experiment)
        if program.working_dir is not None:
            container["workingDir"] = program.working_dir
        elif experiment.program_source is not None:
            container["workingDir"] = PROGRAM_MOUNT
    if experiment.cluster_as_file:
        container["volumeMounts"].append({"name": CLUSTER_VOLUME, "mountPath": CLUSTER_MOUNT})
    if role.in_training_cluster:
        # The evaluator serves nothing: it is not in the training cluster.
        container["ports"] = [{"name": TF_PORT_NAME, "containerPort": TF_PORT}]
    if role.ready_when_serving:
        # The gRPC server answering is what "ready" means for PS and workers.
        container["readinessProbe"] = {"tcpSocket": {"port": TF_PORT_NAME}}
    if reads_checkpoint_volume(experiment, group):
        read_only = role.checkpoint_access == "read"
        container["volumeMounts"].append(
            {"name": CHECKPOINT_VOLUME, "mountPath": CHECKPOINT_MOUNT} | ({"readOnly": True} if read_only else {})
        )
        if read_only:
            container["volumeMounts"] += _scalars_mount(experiment)
    return container


def _scalars_mount(experiment: Experiment) -> list[Manifest]:
    """TensorBoard's folder on the volume, the one a reader (the evaluator) may write (its eval_loss): the kubelet
    makes a missing subPath folder with the mode and, under fsGroup, the group of the volume's root."""
    log_dir = experiment.tensorboard_log_dir
    folder = checkpoint_volume_folder(log_dir) if log_dir is not None else None
    if not folder:
        # A remote logDir, none, or the volume's root, which the stack's checks refuse with an evaluator.
        return []
    return [{"name": CHECKPOINT_VOLUME, "mountPath": log_dir, "subPath": folder}]


def _trainer_command(archived: bool) -> Manifest:
    # Writable: a worker records its task index here for its input pipeline.
    command = shell_started(list(TRAINER_COMMAND), archived=True) if archived else {"command": list(TRAINER_COMMAND)}
    return command | {"workingDir": SCRATCH_DIR}


def _task_env(experiment: Experiment, group: TaskGroup) -> list[Manifest]:
    """Which task a pod runs (components/plan/tf_config.py)."""
    if experiment.workload == "jobset":
        # The trainer adds the Job's JOB_COMPLETION_INDEX to the group's first index.
        return [
            {"name": TASK_TYPE_ENV, "value": group.task_type},
            {"name": FIRST_INDEX_ENV, "value": str(group.first_index)},
        ]
    return [
        {"name": TASK_INDEX_ENV, **task_index_source(experiment, group)},
        {"name": "TF_CONFIG", "value": experiment.tf_config.render(group.task_type)},
    ]


def _resources(experiment: Experiment, role: TaskRole) -> Manifest:
    cluster = experiment.config.cluster
    cpu, memory = cluster.role(role.name).cpu, experiment.memory_of(role.name)
    requests = {"cpu": cpu, "memory": memory}
    # A memory limit, no CPU limit: the CPU request reserves the task's share, and
    # a limit would make the kernel throttle TensorFlow's bursts of gRPC and op
    # threads even on an idle server (benchmarks/real_node.py measures both).
    limits = {"memory": memory}
    if role.checkpoint_access == "write":
        # Room for the checkpoints it keeps on scratch: scheduled where the disk has it.
        requests["ephemeral-storage"] = experiment.scratch_size(role.name)
    # GPUs only on workers and only when asked; never on PS (seed 001: PS work
    # is memory-bound lookups and updates).
    if role.takes_gpus and cluster.workers.gpus:
        limits[L.GPU_RESOURCE] = str(cluster.workers.gpus)
    return {"requests": requests, "limits": limits}
