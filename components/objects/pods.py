"""A task's pod, as every workload model runs it: the pod template (security, volumes, the
container, its environment and resources, tolerations, affinity to the planned server, topology
spread). The JobSet's Jobs, the StatefulSets and the chief's Job all take it from here.
"""

from __future__ import annotations

from typing import Any, Optional

from ..plan import labels as L
from ..plan.experiment import Experiment
from ..plan.task_roles import TaskRole, checkpoint_writer, role_of
from ..plan.tf_config import TF_PORT
from ..plan.workloads import TaskGroup
from ..spec.pools import NodePoolSpec
from ..spec.program import PROGRAM_MOUNT
from ..spec.roles import CHECKPOINT_MOUNT, checkpoint_volume_folder
from ..spec.trainer_contract import (  # noqa: F401 (looked up here)
    FIRST_INDEX_ENV,
    TASK_INDEX_ENV,
    TASK_TYPE_ENV,
    TF_PORT_NAME,
    TRAINER_COMMAND,
    TRAINER_PACKAGE,
)
from .log_shipping import with_log_shipper
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
        "affinity": _affinity(experiment, group),
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
    if experiment.cluster_as_file:
        spec["volumes"].append({"name": CLUSTER_VOLUME, "configMap": {"name": experiment.names.cluster_config_map}})
    # The evaluator waits for no one: it never decides whether the experiment started.
    if role_of(group.task_type).waits_at_start_barrier:
        barrier = start_barrier(experiment, main, [m for m in main["volumeMounts"] if m["name"] == CLUSTER_VOLUME])
        if barrier is not None:
            spec["initContainers"] = [barrier]
    if _reads_checkpoint_volume(experiment, group):
        with_checkpoint_claim(experiment, spec)
    with_log_shipper(experiment, group, spec, main)
    if cluster.priority_class is not None:
        spec["priorityClassName"] = cluster.priority_class
    tolerations = _tolerations(experiment, group)
    if tolerations:
        spec["tolerations"] = tolerations
    spread = _topology_spread(experiment, group)
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
    if _reads_checkpoint_volume(experiment, group):
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


def _reads_checkpoint_volume(experiment: Experiment, group: TaskGroup) -> bool:
    """The chief writes its checkpoint volume; the evaluator reads it."""
    return (
        role_of(group.task_type).checkpoint_access != "none"
        and experiment.config.cluster.chief.checkpoint_volume is not None
    )


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


def _has_gpus(experiment: Experiment, group: TaskGroup) -> bool:
    return role_of(group.task_type).takes_gpus and experiment.config.cluster.workers.gpus > 0


def _tolerations(experiment: Experiment, group: TaskGroup) -> list[Manifest]:
    """GPU workers tolerate the GPU taint; every role adds the stack's own tolerations."""
    own = experiment.config.cluster.role(group.task_type).tolerations
    tolerations = (
        [{"key": L.GPU_TAINT, "operator": "Exists", "effect": "NoSchedule"}] if _has_gpus(experiment, group) else []
    )
    return tolerations + [toleration.manifest() for toleration in own if toleration.manifest() not in tolerations]


def pool_expressions(experiment: Experiment, pool: NodePoolSpec) -> list[Manifest]:
    if pool.selector is not None:
        return [{"key": key, "operator": "In", "values": [value]} for key, value in sorted(pool.selector.items())]
    assert pool.nodes is not None
    if not experiment.labels_nodes:
        # placeBy: hostname: the nodes' own label, which the kubelet writes, not tfk8s.
        return [{"key": L.HOSTNAME, "operator": "In", "values": list(pool.nodes)}]
    # The experiment's own key: another experiment's pool of the same name is not this one.
    # On a named node it also keeps the pod Pending until tfk8s has labelled the server.
    return [{"key": L.node_pool_key(experiment.stack), "operator": "In", "values": [pool.name]}]


def _selects_gpu_product(experiment: Experiment, pool: NodePoolSpec) -> bool:
    """A GPU pool's product is selected by its label: GFD's, or tfk8s's on nodes it labels (placeBy:
    hostname labels none, and a named pool's nodes already say where its GPUs are)."""
    return pool.gpu is not None and (pool.gpu_labeller == "gfd" or experiment.labels_nodes)


def _affinity(experiment: Experiment, group: TaskGroup) -> Manifest:
    """Strict: exactly the planned server. Preferred: the pool, the server if it is up.

    Unpinned tasks (chief, spread placement) may run anywhere in their pool.
    """
    pool = experiment.config.pools[group.pool]
    strict_server = group.server is not None and experiment.plan.strict
    expressions = pool_expressions(experiment, pool)
    if _has_gpus(experiment, group) and pool.gpu and _selects_gpu_product(experiment, pool):
        labeller = pool.gpu_labeller
        assert labeller is not None  # a pool with a GPU always has a labeller
        expressions.append({"key": L.gpu_product_label(labeller), "operator": "In", "values": [pool.gpu.product]})

    required_term: Manifest = {"matchExpressions": expressions}
    node_affinity: Manifest = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [required_term]}}
    if group.server is not None:
        # matchFields on the node name: hostname labels need not equal node names.
        on_server = [{"key": "metadata.name", "operator": "In", "values": [group.server]}]
        if strict_server:
            required_term["matchFields"] = on_server
        else:
            # A lost server does not strand the task: it moves within the pool.
            node_affinity["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": 100, "preference": {"matchFields": on_server}}
            ]
    affinity: Manifest = {"nodeAffinity": node_affinity}
    if role_of(group.task_type).checkpoint_access == "read" and _reads_checkpoint_volume(experiment, group):
        # A ReadWriteOnce claim is mounted on one server at a time: the chief's.
        writer = {"matchLabels": L.spread_selector(experiment.stack, checkpoint_writer().name)}
        affinity["podAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": writer, "topologyKey": L.HOSTNAME}]
        }
    return affinity


def _topology_spread(experiment: Experiment, group: TaskGroup) -> list[Manifest]:
    role = role_of(group.task_type)
    if role.spread == "none":
        return []
    selector = {"matchLabels": L.spread_selector(experiment.stack, group.task_type)}
    if experiment.plan.strategy == "spread":
        return [
            {
                "maxSkew": 1,
                "topologyKey": L.HOSTNAME,
                # PS are kept apart; workers spread as well as the nodes allow.
                "whenUnsatisfiable": "DoNotSchedule" if role.spread == "apart" else "ScheduleAnyway",
                "labelSelector": selector,
            }
        ]
    if experiment.plan.pinning == "count":
        return _spread_by_count(experiment, group, selector)
    return []


def _spread_by_count(experiment: Experiment, group: TaskGroup, selector: Manifest) -> list[Manifest]:
    """Each server of the pool gets exactly its share of the role's tasks, from the scheduler itself.

    Even: no server holds two more than another (maxSkew 1 over the host name), counted over the
    servers a task may use now (nodeTaintsPolicy Honor: a cordoned or not-ready server is not one).
    Strict, capped: no server holds more than its share. Skew alone cannot say that: with one
    server down, the others would take its tasks one by one. Over tfk8s's own label of each
    server, `minDomains` (every server of the pool) makes the scheduler count a missing server as
    holding none while it is missing, so the others stay within the share and that server's
    tasks wait (Pending) for it. Two constraints need two keys: Kubernetes takes one per
    {topologyKey, whenUnsatisfiable}.
    """
    servers = len(experiment.plan.servers_of(group.pool))
    _, share = experiment.plan.share_bounds(group.task_type, group.pool)
    even: Manifest = {
        "maxSkew": 1,
        "topologyKey": L.HOSTNAME,
        "whenUnsatisfiable": "DoNotSchedule" if experiment.plan.strict else "ScheduleAnyway",
        "labelSelector": selector,
        "nodeTaintsPolicy": "Honor",
    }
    if not experiment.plan.strict:
        return [even]
    capped: Manifest = {
        "maxSkew": share,
        "topologyKey": L.node_server_key(experiment.stack),
        "whenUnsatisfiable": "DoNotSchedule",
        "minDomains": servers,
        "labelSelector": selector,
        "nodeTaintsPolicy": "Honor",
    }
    if not experiment.labels_nodes:
        return _spread_by_host_name(even, capped, servers)
    return [even, capped]


def _spread_by_host_name(even: Manifest, capped: Manifest, servers: int) -> list[Manifest]:
    """placeBy: hostname: both constraints over the host name, the one per-server key every node has.

    Kubernetes takes one constraint per {topologyKey, whenUnsatisfiable}, so the even spread becomes
    the scheduler's preference (ScheduleAnyway) and the cap stays a rule. `minDomains` one more
    than the pool's servers makes the scheduler take the global minimum as 0 always, so no server
    ever holds more than its share, whether or not a server is missing: with as many tasks as the
    shares add up to, every server holds exactly its share (with shares that differ by one, the
    preference decides which servers hold the larger one).
    """
    return [
        {**even, "whenUnsatisfiable": "ScheduleAnyway"},
        {**capped, "topologyKey": L.HOSTNAME, "minDomains": servers + 1},
    ]
