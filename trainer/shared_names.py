"""The names tfk8s's objects, its pods and its policy pack must agree on, defined once (standard
library only, so that every task's pod, the Pulumi program and trainer.local import it; the pack,
which imports no tfk8s code, keeps a copy in policy/tfk8s_policies/facts.py that
tests/policy/test_copies.py holds against this module, name by name), and the roles' table: what
the trainer does differently for a chief, a PS, a worker and an evaluator.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

# TensorFlow's gRPC port on every task, and its name in pods and Services.
TF_PORT = 2222
TF_PORT_NAME = "tf-grpc"

# What every object of an experiment is labelled with (components/plan/labels.py).
INSTANCE = "app.kubernetes.io/instance"  # the stack
COMPONENT = "app.kubernetes.io/component"  # chief, ps, worker or evaluator (the roles, below)
PRODUCTION = "tfk8s.io/production"  # on the namespace and the pods: the pack advises production rules
# On every task pod of tfk8s's own trainer, and on no other pod (a team's program, tfk8s:program,
# carries none): the program a task runs, as `kubectl get pods -l` and the policy pack see it.
# The pack applies its model-derived rules (embedding shards, PS memory, checkpoints) to the pods
# that carry it; their command says nothing it can rely on (with tfk8s:logs the trainer is the
# argument of a shell).
PROGRAM = "tfk8s.io/program"
TRAINER_PROGRAM = "tfk8s-trainer"
# A GPU pool's product: GPU Feature Discovery's label, or tfk8s's own on the nodes it names.
GPU_PRODUCT = "nvidia.com/gpu.product"
TFK8S_GPU_PRODUCT = "tfk8s.io/gpu-product"
GPU_RESOURCE = "nvidia.com/gpu"

# Set by Kubernetes' controllers on the pods tfk8s's workloads make.
POD_INDEX = "apps.kubernetes.io/pod-index"  # a StatefulSet pod's ordinal: its task index
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"  # an Indexed Job pod's, label and annotation
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"

# A task's environment. A JobSet pod's TF_CONFIG is composed by the trainer (trainer/cluster.py),
# because its task index is a sum the kubelet cannot expand: the group's first index plus the
# pod's Job completion index.
CLUSTER_ENV = "TFK8S_CLUSTER"  # the cluster JSON, from the experiment's shared ConfigMap
# Past what one environment variable may hold (Linux: 128 KiB), the cluster JSON is a mounted
# file instead, and this variable names it.
CLUSTER_FILE_ENV = "TFK8S_CLUSTER_FILE"
TASK_TYPE_ENV = "TFK8S_TASK_TYPE"
FIRST_INDEX_ENV = "TFK8S_FIRST_INDEX"
COMPLETION_INDEX_ENV = "JOB_COMPLETION_INDEX"  # set by the Job controller in Indexed Jobs
TASK_INDEX_ENV = "TFK8S_TASK_INDEX"  # a StatefulSet pod's, from its ordinal label
SETTINGS_ENV = "TFK8S_TRAINER"  # tfk8s's trainer's settings, as JSON
# With tfk8s:tensorboard: the folder TensorBoard reads, where tfk8s's trainer writes its scalars.
TENSORBOARD_DIR_ENV = "TFK8S_TENSORBOARD_DIR"
# Where checkpointDir "default" is, set by trainer.local (its run's folder): the chief writes there,
# the evaluator reads there.
CHECKPOINT_DIR_ENV = "TFK8S_CHECKPOINT_DIR"

# What every task of tfk8s's own trainer runs (with tfk8s:logs, as the arguments of the log shell).
TRAINER_PACKAGE = "trainer"
TRAINER_COMMAND = ("python", "-m", TRAINER_PACKAGE)

# A task's name: its role and index (`ps-0`, `worker-17`, `chief-0`), as TF_CONFIG's cluster lists
# them and as the planner, the trainer, the start barrier, `status` and the log archive name tasks.
TASK_NAME_SEPARATOR = "-"


def task_name(task_type: str, index: int | str) -> str:
    return f"{task_type}{TASK_NAME_SEPARATOR}{index}"


def parse_task_name(name: str) -> tuple[str, int]:
    """A task's role and index from its name (`worker-17` -> ("worker", 17)); ValueError for another text."""
    task_type, separator, index = name.rpartition(TASK_NAME_SEPARATOR)
    if not (separator and task_type and index.isascii() and index.isdigit()):
        raise ValueError(f"not a task's name (role{TASK_NAME_SEPARATOR}index): {name!r}")
    return task_type, int(index)


# The task roles: TF_CONFIG's task types, the task names' prefixes, the pods' component label.
CHIEF = "chief"
PS = "ps"
WORKER = "worker"
# TensorFlow's side-car evaluator: one task (index 0) outside the cluster it evaluates.
EVALUATOR = "evaluator"


@dataclass(frozen=True)
class TrainerRole:
    """What the trainer, its local launcher and the export need of one role. They treat one role
    unlike another by these traits, never by comparing its name (tests/plan/test_task_roles.py holds
    trainer/ to that; tests/trainer/test_roles.py holds this table to components/spec/task_roles.py,
    which the trainer cannot import), so that a new role is a row here and its program in
    trainer/__main__.py."""

    name: str
    in_training_cluster: bool  # TF_CONFIG's cluster lists it (the evaluator stays outside)
    one_task: bool  # it runs task 0 alone (TensorFlow has one chief, one evaluator)
    # It runs a gRPC server until stopped, for the coordinator to place variables and steps on: the
    # chief waits for it to serve before connecting, and the local launcher starts it first.
    serves: bool
    runs_steps: bool  # the coordinator's training steps run on it, each task on its own data shard
    coordinates: bool  # it trains the model: its end is the run's, SIGUSR1 has it finish early
    may_decide_outcome: bool  # a team's program's run ends when it exits 0 (done: chief, done: workers)
    # Started again whenever it fails, as its Job replaces its pod; a local run ends when a PS or a
    # chief fails instead (but for a chief a fault drill killed: trainer/local/cluster.py restarts it).
    restarted_when_lost: bool
    # The role whose command it runs where the stack gives it none (a TFJob user's one program).
    borrows_command_of: Optional[str]


# In TF_CONFIG's order (components/'s table's): the training cluster's roles, then the evaluator.
TRAINER_ROLES = (
    TrainerRole(
        CHIEF,
        in_training_cluster=True,
        one_task=True,
        serves=False,
        runs_steps=False,
        coordinates=True,
        may_decide_outcome=True,
        restarted_when_lost=False,
        borrows_command_of=None,
    ),
    TrainerRole(
        PS,
        in_training_cluster=True,
        one_task=False,
        serves=True,
        runs_steps=False,
        coordinates=False,
        may_decide_outcome=False,
        restarted_when_lost=False,
        borrows_command_of=None,
    ),
    TrainerRole(
        WORKER,
        in_training_cluster=True,
        one_task=False,
        serves=True,
        runs_steps=True,
        coordinates=False,
        may_decide_outcome=True,
        restarted_when_lost=True,
        borrows_command_of=None,
    ),
    TrainerRole(
        EVALUATOR,
        in_training_cluster=False,
        one_task=True,
        serves=False,
        runs_steps=False,
        coordinates=False,
        may_decide_outcome=False,
        restarted_when_lost=True,
        borrows_command_of=WORKER,
    ),
)
TRAINER_ROLE_OF = {role.name: role for role in TRAINER_ROLES}
# TF_CONFIG's cluster: the task types it lists.
TRAINING_CLUSTER = tuple(role.name for role in TRAINER_ROLES if role.in_training_cluster)
# The tasks the chief waits for, in the order the local launcher starts them.
SERVING_ROLES = tuple(role.name for role in TRAINER_ROLES if role.serves)


def role_of(task_type: str) -> Optional[TrainerRole]:
    """The row of a task type; None for one the trainer has no row for (a typo, a team's own)."""
    return TRAINER_ROLE_OF.get(task_type)


def role_of_task(name: str) -> TrainerRole:
    """The row of a task by its name (`worker-3`); ValueError for a name no role of the table has."""
    role = role_of(parse_task_name(name)[0])
    if role is None:
        raise ValueError(f"task {name!r}: no role of tfk8s's trainer")
    return role
