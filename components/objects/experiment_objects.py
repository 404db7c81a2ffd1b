"""Every Kubernetes object of an experiment, in apply order (no Pulumi here).

The one list both consumers read: the Pulumi components register these objects
under these resource names, and `python -m components render` writes them as
YAML for `kubectl apply --server-side` or a GitOps tool. They cannot drift,
because neither builds an object of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..plan.experiment import Experiment
from ..plan.object_names import JOBSET
from ..plan.workloads import TaskGroup
from ..spec.pools import NodePoolSpec
from ..spec.task_roles import TRAINING_CLUSTER
from . import jobset, manifests
from .log_archive import log_archive_objects
from .manifests import Manifest
from .tensorboard import tensorboard_objects


@dataclass(frozen=True)
class KubeObject:
    # The Pulumi resource is `<component name>-<suffix>`: a task name, a node name, ...
    suffix: str
    manifest: Manifest
    # The task group this workload runs; None for every other object.
    group: Optional[TaskGroup] = None
    # `pulumi destroy` leaves it on the cluster: the checkpoints, the trained model.
    kept_on_destroy: bool = False

    @property
    def kind(self) -> str:
        return self.manifest["kind"]


def labelled_pools(experiment: Experiment) -> list[NodePoolSpec]:
    """Pools whose nodes tfk8s labels: the used pools that list their nodes."""
    if not experiment.labels_nodes:
        return []  # placeBy: hostname writes nothing outside the namespace
    return [pool for pool in experiment.used_pools() if pool.pinnable]


def node_pool_objects(experiment: Experiment, pool: NodePoolSpec) -> list[KubeObject]:
    """One label patch per node of `pool`."""
    if pool.nodes is None:
        raise ValueError(f"pool '{pool.name}' is given by a selector; tfk8s labels no nodes")
    return [KubeObject(node, manifests.node_patch(experiment, node, pool)) for node in pool.nodes]


def namespace_object(experiment: Experiment) -> Optional[KubeObject]:
    """The experiment's own namespace; None in a team's namespace, which tfk8s never creates."""
    if experiment.shares_namespace:
        return None
    # Deleting a namespace deletes what is in it: it stays while it holds the kept checkpoints.
    return KubeObject("namespace", manifests.namespace(experiment), kept_on_destroy=keeps_checkpoints(experiment))


def keeps_checkpoints(experiment: Experiment) -> bool:
    """`pulumi destroy` keeps the chief's checkpoint claim (checkpointVolume.keep, the default)."""
    volume = experiment.config.cluster.chief.checkpoint_volume
    return volume is not None and volume.keep


def kept_on_destroy_note(experiment: Experiment) -> Optional[str]:
    """What `pulumi destroy` leaves on the cluster, and how to delete it; None when nothing."""
    if not keeps_checkpoints(experiment):
        return None
    namespace, claim = experiment.namespace, experiment.names.checkpoint_claim
    if experiment.shares_namespace:
        kept, delete = (
            f"the checkpoint claim {claim} in namespace {namespace}",
            f"kubectl -n {namespace} delete pvc {claim}",
        )
    else:
        kept = f"namespace {namespace} with the checkpoint claim {claim} (and nothing else of the experiment)"
        delete = f"kubectl delete namespace {namespace}"
    return (
        f"stack '{experiment.stack}': pulumi destroy keeps {kept}, so the next pulumi up resumes from the "
        f"last checkpoint; to delete the checkpoints: {delete}, or set "
        "tfk8s:cluster.chief.checkpointVolume.keep: false and pulumi up before destroying"
    )


def shared_objects(experiment: Experiment) -> list[KubeObject]:
    """What the tasks need in the namespace before they start."""
    objects = [KubeObject("network-policy", manifests.network_policy(experiment))]
    egress = manifests.egress_policy(experiment)
    if egress is not None:
        objects.append(KubeObject("egress-policy", egress))
    program = manifests.program_config_map(experiment)
    secret = manifests.program_secret(experiment)
    if secret is not None:
        objects.append(KubeObject("program-env", secret))
    if program is not None:
        objects.append(KubeObject("program", program))
    elif experiment.program is None:
        objects.append(KubeObject("trainer", manifests.trainer_config_map(experiment)))
    objects.append(KubeObject("trainer-env", manifests.trainer_env_config_map(experiment)))
    cluster = manifests.cluster_config_map(experiment)
    if cluster is not None:
        objects.append(KubeObject("cluster", cluster))
    claim = manifests.checkpoint_claim(experiment)
    if claim is not None:
        objects.append(KubeObject("checkpoints", claim, kept_on_destroy=keeps_checkpoints(experiment)))
    # The collector first: a task's first lines find it listening.
    objects.extend(KubeObject(suffix, manifest) for suffix, manifest in log_archive_objects(experiment))
    return objects


def role_services(experiment: Experiment) -> list[KubeObject]:
    """StatefulSet model: one headless Service per role, the DNS names in TF_CONFIG (a JobSet has its own)."""
    if experiment.workload == "jobset":
        return []
    return [
        KubeObject(f"{task_type}-service", manifests.role_service(experiment, task_type))
        for task_type in TRAINING_CLUSTER
    ]


def workload_objects(experiment: Experiment) -> list[KubeObject]:
    """What runs the tasks: the JobSet (after its LocalQueue, if queued), or one workload per
    task group: the chief's Job, then PS and worker StatefulSets; then TensorBoard, if asked."""
    tensorboard = [KubeObject(suffix, manifest) for suffix, manifest in tensorboard_objects(experiment)]
    if experiment.workload == "jobset":
        queue = jobset.local_queue(experiment)
        return [
            *([KubeObject("local-queue", queue)] if queue is not None else []),
            KubeObject(JOBSET, jobset.jobset(experiment)),  # the Pulumi name: steady URNs,
            *tensorboard,
        ]
    groups = [KubeObject(group.name, manifests.group_workload(experiment, group), group) for group in experiment.groups]
    return groups + tensorboard


def experiment_objects(experiment: Experiment) -> list[KubeObject]:
    """All objects in the order they can be applied: node labels, namespace, shared, Services, workloads."""
    objects = [obj for pool in labelled_pools(experiment) for obj in node_pool_objects(experiment, pool)]
    namespace = namespace_object(experiment)
    if namespace is not None:
        objects.append(namespace)
    objects.extend(shared_objects(experiment))
    objects.extend(role_services(experiment))
    objects.extend(workload_objects(experiment))
    return objects
