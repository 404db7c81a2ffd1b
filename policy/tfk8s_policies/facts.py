"""What the pack knows of tfk8s, copied because it imports no tfk8s code (pulumi-policy pins
protobuf 5.29, the trainer needs 6): the names of trainer/shared_names.py, under the same names,
the rows of the role table (components/spec/task_roles.py) with the traits the rules read, and a
few facts of its own; tests/policy/test_copies.py holds each copy against its original."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Optional

TF_PORT = 2222
TF_PORT_NAME = "tf-grpc"  # the name tfk8s gives the port in pods and Services
GPU_RESOURCE = "nvidia.com/gpu"
GPU_PRODUCT = "nvidia.com/gpu.product"  # GPU Feature Discovery's
TFK8S_GPU_PRODUCT = "tfk8s.io/gpu-product"  # tfk8s's own, on the nodes it labels
GPU_PRODUCT_LABELS = (GPU_PRODUCT, TFK8S_GPU_PRODUCT)
INSTANCE = "app.kubernetes.io/instance"
COMPONENT = "app.kubernetes.io/component"
SETTINGS_ENV = "TFK8S_TRAINER"
# The label on every task pod of tfk8s's own trainer (components/objects/pods.py), on no team
# program's: the rules derived from tfk8s's model apply to the pods that carry it.
PROGRAM = "tfk8s.io/program"
TRAINER_PROGRAM = "tfk8s-trainer"
PRODUCTION = "tfk8s.io/production"
REMOVED_API_VERSIONS = ("extensions/v1beta1", "apps/v1beta1", "apps/v1beta2")
WORKLOAD_KINDS = ("Pod", "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob", "JobSet")
OPTIMIZER_SLOTS = {"sgd": 0, "adagrad": 1, "adam": 2}
QUANTITY_SUFFIX = {
    "": 1,
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "P": 10**15,
    "E": 10**18,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
    "m": 1e-3,
}
POD_INDEX = "apps.kubernetes.io/pod-index"
# A JobSet task's TF_CONFIG is composed by the trainer from these (trainer/cluster.py).
CLUSTER_ENV = "TFK8S_CLUSTER"
CLUSTER_FILE_ENV = "TFK8S_CLUSTER_FILE"  # past one variable's limit: a file from a mounted ConfigMap
TASK_TYPE_ENV = "TFK8S_TASK_TYPE"
FIRST_INDEX_ENV = "TFK8S_FIRST_INDEX"
COMPLETION_INDEX_ENV = "JOB_COMPLETION_INDEX"
# Set on pods by the Job and JobSet controllers.
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"


# The table's own literals: a rule that asks for a load the table has not is a type error.
CheckpointAccess = Literal["none", "read", "write"]
Load = Literal["variables", "steps", "coordination", "evaluation"]


@dataclass(frozen=True)
class Role:
    """A row of components/spec/task_roles.py, with only the traits the rules read: the pack treats
    one role unlike another by these, never by its name, so that a new row is checked as tfk8s runs it."""

    name: str  # TF_CONFIG's task type, the pods' component label
    one_task: bool  # it runs task 0 alone
    in_training_cluster: bool  # listed in TF_CONFIG's cluster (the evaluator is not)
    checkpoint_access: CheckpointAccess  # "write" for the role whose checkpoints a replaced pod must find
    load: Load  # "variables" (the PS), "steps" (workers), "coordination" (the chief), "evaluation"


# In the table's order, which is TF_CONFIG's.
ROLES = (
    Role("chief", one_task=True, in_training_cluster=True, checkpoint_access="write", load="coordination"),
    Role("ps", one_task=False, in_training_cluster=True, checkpoint_access="none", load="variables"),
    Role("worker", one_task=False, in_training_cluster=True, checkpoint_access="none", load="steps"),
    Role("evaluator", one_task=True, in_training_cluster=False, checkpoint_access="read", load="evaluation"),
)


def role_of(task_type: object) -> Optional[Role]:
    """The row of a task type; None for one tfk8s has no row for (a team's own, a typo)."""
    return next((role for role in ROLES if role.name == task_type), None)


def role_by_load(load: Load) -> Role:
    """The role whose work is that load: `variables` for the PS, `steps` for the workers,
    `coordination` for the chief (the task that builds the model and decides the steps)."""
    return next(role for role in ROLES if role.load == load)


def checkpoint_writer() -> Role:
    """The role that writes the checkpoints (the chief): its volume is where a replaced pod finds them."""
    return next(role for role in ROLES if role.checkpoint_access == "write")
