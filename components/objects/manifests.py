"""Kubernetes objects of an experiment, as plain dicts (no Pulumi here).

The components hand these dicts to pulumi_kubernetes unchanged, and the tests
validate the same dicts against the Kubernetes OpenAPI schema.
"""

from __future__ import annotations

from typing import Any, Optional

from components.plan import labels as L
from components.plan.experiment import CHECKPOINT_MOUNT, Experiment
from components.plan.tf_config import TF_PORT
from components.plan.trainer_bundle import TRAINER_PACKAGE
from components.plan.workloads import TaskGroup, pod_hostname, pod_subdomain
from components.spec.models import NodePoolSpec
from trainer.cluster import CLUSTER_ENV, FIRST_INDEX_ENV, TASK_INDEX_ENV, TASK_TYPE_ENV
from trainer.settings import SETTINGS_ENV

Manifest = dict[str, Any]

TF_PORT_NAME = "tf-grpc"
CONTAINER_NAME = "tensorflow"
TRAINER_VOLUME = "trainer"
SCRATCH_VOLUME = "scratch"
CODE_ROOT = "/opt/tfk8s"
SCRATCH_DIR = "/scratch"
# The stock TensorFlow image runs as root; pods run as an unprivileged user.
RUN_AS_USER = 1000
NETWORK_POLICY_NAME = "tf-grpc-from-experiment-only"
TRAINER_CONFIG_MAP = "tfk8s-trainer"
# Settings and environment shared by every task: one ConfigMap, not N copies.
TRAINER_ENV_CONFIG_MAP = "tfk8s-trainer-env"
SKIP_AWAIT = "pulumi.com/skipAwait"
CHECKPOINT_CLAIM = "tfk8s-checkpoints"
CHECKPOINT_VOLUME = "checkpoints"


def namespace(experiment: Experiment) -> Manifest:
    labels = {
        **L.experiment_labels(experiment.stack),
        # The pods meet the restricted Pod Security Standard; enforce it.
        "pod-security.kubernetes.io/enforce": "restricted",
    }
    if experiment.config.cluster.production:
        labels[L.PRODUCTION] = "true"
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": experiment.namespace, "labels": labels},
    }


def network_policy(experiment: Experiment) -> Manifest:
    """Only this experiment's pods may reach TensorFlow's unauthenticated gRPC port."""
    experiment_pods = {"matchLabels": L.experiment_selector(experiment.stack)}
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": metadata(experiment, NETWORK_POLICY_NAME),
        "spec": {
            "podSelector": experiment_pods,
            "policyTypes": ["Ingress"],
            "ingress": [
                {
                    "from": [{"podSelector": experiment_pods}],
                    "ports": [{"protocol": "TCP", "port": TF_PORT}],
                }
            ],
        },
    }


def checkpoint_claim(experiment: Experiment) -> Optional[Manifest]:
    """The chief's checkpoint volume, when the stack asks for one."""
    volume = experiment.config.cluster.chief.checkpoint_volume
    if volume is None:
        return None
    spec: Manifest = {
        "accessModes": ["ReadWriteOnce"],  # one chief at a time writes it
        "resources": {"requests": {"storage": volume.size}},
    }
    if volume.storage_class is not None:
        spec["storageClassName"] = volume.storage_class
    meta = metadata(experiment, CHECKPOINT_CLAIM)
    # A claim of a WaitForFirstConsumer class binds only once the chief's pod
    # exists, and that pod waits for the claim: `pulumi up` must not wait.
    meta["annotations"] = {SKIP_AWAIT: "true"}
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec}


def trainer_config_map(experiment: Experiment) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(experiment, TRAINER_CONFIG_MAP),
        "data": experiment.trainer_bundle.config_map_data(),
    }


def trainer_env_config_map(experiment: Experiment) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(experiment, TRAINER_ENV_CONFIG_MAP),
        "data": trainer_env(experiment),
    }


def trainer_env(experiment: Experiment) -> dict[str, str]:
    """Environment of every task but TF_CONFIG: trainer settings and the TF cluster it refers to."""
    return {
        SETTINGS_ENV: experiment.trainer_settings_json,
        CLUSTER_ENV: experiment.tf_config.cluster_json,
        "PYTHONPATH": CODE_ROOT,
        "PYTHONDONTWRITEBYTECODE": "1",  # the code mount is read-only
        "PYTHONUNBUFFERED": "1",
        "HOME": SCRATCH_DIR,
        "TMPDIR": SCRATCH_DIR,
    }


def role_service(experiment: Experiment, task_type: str) -> Manifest:
    """Headless Service of a role: each of its pods gets a stable DNS name, even before it is ready."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(experiment, task_type, L.role_labels(experiment.stack, task_type)),
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": L.role_selector(experiment.stack, task_type),
            "ports": [{"name": TF_PORT_NAME, "port": TF_PORT}],
        },
    }


def group_workload(experiment: Experiment, group: TaskGroup) -> Manifest:
    """StatefulSet model: the chief is a Job (it finishes); PS and workers serve until destroyed."""
    template = pod_template(experiment, group)
    meta = metadata(experiment, group.name, L.group_labels(experiment.stack, group))
    if group.task_type == "chief":
        meta["annotations"] = {SKIP_AWAIT: "true"}  # `pulumi up` must not wait for training
        # The Job's pods get random names; the host name gives the chief its DNS name.
        template["spec"]["hostname"] = pod_hostname(group, group.first_index, experiment.workload)
        template["spec"]["subdomain"] = pod_subdomain(group, experiment.workload)
        return {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": meta,
            "spec": {
                "completions": 1,
                "parallelism": 1,
                "backoffLimit": experiment.config.cluster.chief.restarts,
                **chief_deadline(experiment),
                # Never a second chief while the first is still terminating.
                "podReplacementPolicy": "Failed",
                "template": template,
            },
        }
    # A StatefulSet never runs two pods of one ordinal, that is of one task, at once.
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": meta,
        "spec": {
            "replicas": group.count,
            # Ordinals are task indexes: pod `<group>-<index>`, label apps.kubernetes.io/pod-index.
            "ordinals": {"start": group.first_index},
            # Every task is needed from the start: no one-by-one start.
            "podManagementPolicy": "Parallel",
            "serviceName": group.task_type,
            "selector": {"matchLabels": L.group_selector(experiment.stack, group)},
            "template": template,
        },
    }


def pod_template(experiment: Experiment, group: TaskGroup) -> Manifest:
    cluster = experiment.config.cluster
    restart_policy = _restart_policy(experiment, group)
    spec: Manifest = {
        **({"restartPolicy": restart_policy} if restart_policy else {}),
        "automountServiceAccountToken": False,
        # Services never become env vars: the trainer reads TF_CONFIG only.
        "enableServiceLinks": False,
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": RUN_AS_USER,
            "runAsGroup": RUN_AS_USER,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "affinity": _affinity(experiment, group),
        "containers": [_container(experiment, group)],
        "volumes": [
            {
                "name": TRAINER_VOLUME,
                "configMap": {"name": TRAINER_CONFIG_MAP},
            },
            # Bounded: a task that fills it is evicted, not the server's disk.
            {"name": SCRATCH_VOLUME, "emptyDir": {"sizeLimit": experiment.scratch_size(group.task_type)}},
        ],
    }
    if group.task_type == "chief" and experiment.config.cluster.chief.checkpoint_volume is not None:
        spec["volumes"].append(
            {"name": CHECKPOINT_VOLUME, "persistentVolumeClaim": {"claimName": CHECKPOINT_CLAIM}}
        )
        # The volume's files belong to the pod's group, so the unprivileged chief can write them;
        # re-owned only when the volume's root is not the group's yet, not file by file at every
        # start of a chief whose volume holds many checkpoints.
        spec["securityContext"]["fsGroup"] = RUN_AS_USER
        spec["securityContext"]["fsGroupChangePolicy"] = "OnRootMismatch"
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
            "labels": L.pod_labels(experiment.stack, group),
            # Mounted code and envFrom do not restart pods when they change; a
            # changed hash does, and shows in `pulumi preview`.
            "annotations": {L.TRAINER_HASH_ANNOTATION: experiment.trainer_hash},
        },
        "spec": spec,
    }


def chief_deadline(experiment: Experiment) -> Manifest:
    """The chief Job's activeDeadlineSeconds, when the stack sets one: past it the Job fails
    (DeadlineExceeded), which fails the experiment."""
    deadline = experiment.config.cluster.chief.active_deadline_seconds
    return {"activeDeadlineSeconds": deadline} if deadline is not None else {}


def _restart_policy(experiment: Experiment, group: TaskGroup) -> Optional[str]:
    """In place, a restarted chief container keeps its scratch volume (its checkpoints).

    A JobSet's PS never restarts in place: a lost PS fails its Job, which restarts the
    experiment. A JobSet's worker is replaced by a new pod, whose Job backs off per task
    (`backoffLimitPerIndex`, which needs `Never`). A StatefulSet's PS and workers take the
    default (Always).
    """
    if group.task_type == "chief":
        return "OnFailure"
    if experiment.workload == "jobset":
        return "Never"
    return None


def node_labels(experiment: Experiment, pool: NodePoolSpec) -> dict[str, str]:
    """Labels a NodePool writes on each of its nodes."""
    node_labels = {
        L.node_pool_key(experiment.stack): pool.name,
        L.node_role_key(experiment.stack): experiment.pool_role(pool.name),
    }
    if pool.gpu_labeller == "tfk8s":
        # Never a label under nvidia.com/: GPU Feature Discovery owns those.
        node_labels[L.TFK8S_GPU_PRODUCT] = pool.gpu.product
    return node_labels


def node_patch(experiment: Experiment, node: str, pool: NodePoolSpec) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        # No pulumi.com/patchFieldManager annotation: it would be written on the node, one
        # value per experiment, and two experiments would conflict over it. Without it
        # pulumi-kubernetes gives each NodePatch a field manager of its own, so destroy
        # still releases exactly that patch's labels.
        "metadata": {"name": node, "labels": node_labels(experiment, pool)},
    }


# -- pieces -------------------------------------------------------------------


def metadata(
    experiment: Experiment, name: str, object_labels: Optional[dict[str, str]] = None
) -> Manifest:
    """An experiment's object `name` in its namespace, with the experiment's labels (or `object_labels`)."""
    return {
        "name": name,
        "namespace": experiment.namespace,
        "labels": object_labels or L.experiment_labels(experiment.stack),
    }


def _container(experiment: Experiment, group: TaskGroup) -> Manifest:
    container: Manifest = {
        "name": CONTAINER_NAME,
        "image": experiment.config.cluster.worker_image if group.task_type == "worker" else experiment.config.cluster.image,
        "command": ["python", "-m", TRAINER_PACKAGE],
        # Writable: a worker records its task index here for its input pipeline.
        "workingDir": SCRATCH_DIR,
        # envFrom is read first and env in order, so TF_CONFIG's $(TFK8S_CLUSTER)
        # and $(TFK8S_TASK_INDEX) expand to the shared cluster and this pod's index.
        "env": _task_env(experiment, group),
        "envFrom": [{"configMapRef": {"name": TRAINER_ENV_CONFIG_MAP}}],
        "ports": [{"name": TF_PORT_NAME, "containerPort": TF_PORT}],
        "resources": _resources(experiment, group.task_type),
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
        "volumeMounts": [
            # ConfigMap volumes are always mounted read-only.
            {"name": TRAINER_VOLUME, "mountPath": f"{CODE_ROOT}/{TRAINER_PACKAGE}"},
            {"name": SCRATCH_VOLUME, "mountPath": SCRATCH_DIR},
        ],
    }
    if group.task_type != "chief":
        # The gRPC server answering is what "ready" means for PS and workers.
        container["readinessProbe"] = {"tcpSocket": {"port": TF_PORT_NAME}}
    elif experiment.config.cluster.chief.checkpoint_volume is not None:
        container["volumeMounts"].append({"name": CHECKPOINT_VOLUME, "mountPath": CHECKPOINT_MOUNT})
    return container


def _task_env(experiment: Experiment, group: TaskGroup) -> list[Manifest]:
    """Which task a pod runs (components/plan/tf_config.py)."""
    if experiment.workload == "jobset":
        # The trainer adds the Job's JOB_COMPLETION_INDEX to the group's first index.
        return [
            {"name": TASK_TYPE_ENV, "value": group.task_type},
            {"name": FIRST_INDEX_ENV, "value": str(group.first_index)},
        ]
    return [
        {"name": TASK_INDEX_ENV, **_task_index_source(group)},
        {"name": "TF_CONFIG", "value": experiment.tf_config.render(group.task_type)},
    ]


def _task_index_source(group: TaskGroup) -> Manifest:
    """A StatefulSet pod's index is its ordinal label; the chief's Job runs task 0 only."""
    if group.task_type == "chief":
        return {"value": str(group.first_index)}
    return {"valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{L.POD_INDEX}']"}}}


def _resources(experiment: Experiment, task_type: str) -> Manifest:
    cluster = experiment.config.cluster
    if task_type == "ps":
        cpu, memory = cluster.ps.cpu, experiment.ps_memory
    elif task_type == "worker":
        cpu, memory = cluster.workers.cpu, cluster.workers.memory
    else:
        cpu, memory = cluster.chief.cpu, experiment.chief_memory
    requests = {"cpu": cpu, "memory": memory}
    # A memory limit, no CPU limit: the CPU request reserves the task's share, and
    # a limit would make the kernel throttle TensorFlow's bursts of gRPC and op
    # threads even on an idle server (benchmarks/real_node.py measures both).
    limits = {"memory": memory}
    if task_type == "chief":
        # Room for the checkpoints it keeps on scratch: scheduled where the disk has it.
        requests["ephemeral-storage"] = experiment.scratch_size(task_type)
    # GPUs only on workers and only when asked; never on PS (seed 001: PS work
    # is memory-bound lookups and updates).
    if task_type == "worker" and cluster.workers.gpus:
        limits[L.GPU_RESOURCE] = str(cluster.workers.gpus)
    return {"requests": requests, "limits": limits}


def _has_gpus(experiment: Experiment, group: TaskGroup) -> bool:
    return group.task_type == "worker" and experiment.config.cluster.workers.gpus > 0


def _tolerations(experiment: Experiment, group: TaskGroup) -> list[Manifest]:
    """GPU workers tolerate the GPU taint; every role adds the stack's own tolerations."""
    cluster = experiment.config.cluster
    own = {"chief": cluster.chief, "ps": cluster.ps, "worker": cluster.workers}[group.task_type].tolerations
    tolerations = [{"key": L.GPU_TAINT, "operator": "Exists", "effect": "NoSchedule"}] if _has_gpus(experiment, group) else []
    return tolerations + [toleration.manifest() for toleration in own if toleration.manifest() not in tolerations]


def _pool_expressions(pool: NodePoolSpec, stack: str) -> list[Manifest]:
    if pool.selector is not None:
        return [
            {"key": key, "operator": "In", "values": [value]}
            for key, value in sorted(pool.selector.items())
        ]
    # The experiment's own key: another experiment's pool of the same name is not this one.
    # On a named node it also keeps the pod Pending until tfk8s has labelled the server.
    return [{"key": L.node_pool_key(stack), "operator": "In", "values": [pool.name]}]


def _affinity(experiment: Experiment, group: TaskGroup) -> Manifest:
    """Strict: exactly the planned server. Preferred: the pool, the server if it is up.

    Unpinned tasks (chief, spread placement) may run anywhere in their pool.
    """
    pool = experiment.config.pools[group.pool]
    strict_server = group.server is not None and experiment.plan.strict
    expressions = _pool_expressions(pool, experiment.stack)
    if _has_gpus(experiment, group) and pool.gpu:
        expressions.append({"key": L.gpu_product_label(pool.gpu_labeller), "operator": "In", "values": [pool.gpu.product]})

    required_term: Manifest = {"matchExpressions": expressions}
    node_affinity: Manifest = {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [required_term]}
    }
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
    return {"nodeAffinity": node_affinity}


def _topology_spread(experiment: Experiment, group: TaskGroup) -> list[Manifest]:
    if experiment.plan.strategy != "spread" or group.task_type == "chief":
        return []
    return [
        {
            "maxSkew": 1,
            "topologyKey": L.HOSTNAME,
            # PS are kept apart; workers spread as well as the nodes allow.
            "whenUnsatisfiable": "DoNotSchedule" if group.task_type == "ps" else "ScheduleAnyway",
            "labelSelector": {"matchLabels": L.role_selector(experiment.stack, group.task_type)},
        }
    ]
