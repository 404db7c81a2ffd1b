"""Names and labels of everything tfk8s writes, in one place.

Pods, Services, the NetworkPolicy and node affinities must agree on these
exactly, so they come from these helpers and nowhere else.
"""

from __future__ import annotations

from ..spec.task_roles import PLACED_ROLES

# The keys the pods and the policy pack read as well are defined once, with them.
from ..spec.trainer_contract import (  # noqa: F401 (this module is where components/ looks them up)
    COMPLETION_INDEX,
    COMPONENT,
    GPU_PRODUCT,
    GPU_RESOURCE,
    INSTANCE,
    POD_INDEX,
    PRODUCTION,
    PROGRAM,
    TFK8S_GPU_PRODUCT,
    TRAINER_PROGRAM,
)
from .workloads import TaskGroup

APP_NAME = "tensorflow"
PART_OF = "tfk8s"
MANAGED_BY = "pulumi"

NAME = "app.kubernetes.io/name"
PART_OF_KEY = "app.kubernetes.io/part-of"
MANAGED_BY_KEY = "app.kubernetes.io/managed-by"
WORKLOAD = "tfk8s.io/workload"  # the task group (StatefulSet or Job) a pod belongs to
# TensorBoard's pod (tfk8s:tensorboard): its name and component, and no task's selector.
TENSORBOARD = "tensorboard"
# The log archive's collector (tfk8s:logs), likewise no task.
LOG_COLLECTOR = "log-collector"

# Node labels written by a NodePool (they replace `kubectl label node`): a key per
# experiment, `pool.tfk8s.io/<stack>: <pool>` and `role.tfk8s.io/<stack>: ps | worker |
# mixed`, so that any number of experiments label the same servers without touching
# each other's labels (one key with one value each would be taken over by the last).
NODE_POOL_DOMAIN = "pool.tfk8s.io"
NODE_ROLE_DOMAIN = "role.tfk8s.io"
# And `server.tfk8s.io/<stack>: <server>`: a second label unique to each server, so that a
# second topology spread constraint can cap a role's tasks per server (components/objects/pods.py).
NODE_SERVER_DOMAIN = "server.tfk8s.io"
# And on pods, `task.tfk8s.io/<stack>: chief | ps | worker`: a role's pods in one requirement.
# A topology spread constraint's selector is matched against every pod of every server in the
# pool for each pod the scheduler places; one lookup instead of three cut its time at 1,000
# servers (benchmarks/cluster_apply.py).
TASK_ROLE_DOMAIN = "task.tfk8s.io"
MAX_LABEL_VALUE = 63
# The taint GPU node pools usually carry (the NVIDIA GPU Operator's and the clouds' GPU pools).
GPU_TAINT = "nvidia.com/gpu"

HOSTNAME = "kubernetes.io/hostname"

TRAINER_HASH_ANNOTATION = "tfk8s.io/trainer-sha256"
# On the log collector's pod (tfk8s:logs): its code's hash, so that a change of it rolls that pod.
LOG_COLLECTOR_HASH_ANNOTATION = "tfk8s.io/log-collector-sha256"


def experiment_labels(stack: str) -> dict[str, str]:
    """Labels every object of one experiment carries."""
    return {
        NAME: APP_NAME,
        INSTANCE: stack,
        PART_OF_KEY: PART_OF,
        MANAGED_BY_KEY: MANAGED_BY,
    }


def side_pod_labels(stack: str, component: str) -> dict[str, str]:
    """A pod beside the tasks (TensorBoard, the log collector): the stack's, not the tasks' selector."""
    return {NAME: component, INSTANCE: stack, COMPONENT: component}


def experiment_selector(stack: str) -> dict[str, str]:
    """Selects every pod of one experiment (and only those)."""
    return {INSTANCE: stack, PART_OF_KEY: PART_OF}


def selector_text(stack: str, roles: tuple[str, ...] = ()) -> str:
    """The experiment's pods, of the given roles if any, as a Kubernetes label selector string."""
    terms = [f"{key}={value}" for key, value in experiment_selector(stack).items()]
    if roles:
        terms.append(f"{COMPONENT} in ({','.join(roles)})")
    return ",".join(terms)


def role_selector(stack: str, task_type: str) -> dict[str, str]:
    return {**experiment_selector(stack), COMPONENT: task_type}


def role_labels(stack: str, task_type: str) -> dict[str, str]:
    """Labels of a role's headless Service."""
    return {**experiment_labels(stack), COMPONENT: task_type}


def group_selector(stack: str, group: TaskGroup) -> dict[str, str]:
    """Selects the pods of one task group (one workload) and no other."""
    return {**role_selector(stack, group.task_type), WORKLOAD: group.name}


def group_labels(stack: str, group: TaskGroup) -> dict[str, str]:
    return {**role_labels(stack, group.task_type), WORKLOAD: group.name}


def pod_labels(stack: str, group: TaskGroup) -> dict[str, str]:
    """A group's pods: their controller, not Pulumi, manages them."""
    return {NAME: APP_NAME, **group_selector(stack, group), **spread_selector(stack, group.task_type)}


def program_labels(runs_tfk8s_trainer: bool) -> dict[str, str]:
    """The mark of a task pod that runs tfk8s's own trainer, which the policy pack reads to apply its
    model-derived rules; none on a team's program's pods. A label on the pod template only, in no
    selector: a workload's selector cannot change, and the mark says what a pod runs, not whose it is."""
    return {PROGRAM: TRAINER_PROGRAM} if runs_tfk8s_trainer else {}


def spread_selector(stack: str, task_type: str) -> dict[str, str]:
    """A role's pods, as the scheduler counts them for topology spread: one label."""
    return {task_role_key(stack): task_type}


def node_role(task_types: set[str]) -> str:
    """Role label of a server: the one role the plan places there (ps, worker), or mixed."""
    placed = [role for role in PLACED_ROLES if role in task_types]
    return "mixed" if len(placed) > 1 else placed[0]


def gpu_product_label(labelled_by: str) -> str:
    return TFK8S_GPU_PRODUCT if labelled_by == "tfk8s" else GPU_PRODUCT


def node_pool_key(stack: str) -> str:
    """The node label that says which of the experiment's pools a server is in."""
    return f"{NODE_POOL_DOMAIN}/{stack}"


def node_role_key(stack: str) -> str:
    """The node label that says what the experiment runs on a server."""
    return f"{NODE_ROLE_DOMAIN}/{stack}"


def task_role_key(stack: str) -> str:
    """The pod label that says which of the experiment's roles a pod runs."""
    return f"{TASK_ROLE_DOMAIN}/{stack}"


def node_server_key(stack: str) -> str:
    """The node label that names each server of the experiment's pools, one value per server."""
    return f"{NODE_SERVER_DOMAIN}/{stack}"


def server_label_values(servers: list[str]) -> dict[str, str]:
    """Each server's value of `node_server_key`: its name, or `s<position>` for every server of
    the pool when one name is longer than a label value may be (node names reach 253)."""
    if all(len(server) <= MAX_LABEL_VALUE for server in servers):
        return {server: server for server in servers}
    return {server: f"s{position}" for position, server in enumerate(servers)}


def field_manager(stack: str) -> str:
    """Server-side-apply field manager of one experiment's node labels."""
    return f"tfk8s-{stack}"
