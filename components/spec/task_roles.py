"""The task roles of an experiment, one row each: what a chief, a PS, a worker and an evaluator are.

Everything that treats one role unlike another (the pods, the Jobs' retry limits and failure
rules, the JobSet's success policy, the StatefulSet model, TF_CONFIG, the Services, the stack
outputs, `status` and `top`) reads the role's traits here, as JobSet's policies target
replicated Jobs by name: no role is compared with a string outside this table (a test in
tests/plan/test_task_roles.py holds components/ to that). Adding a role is a row here, its
settings in the stack file (components/spec/roles.py) and its program (docs/architecture.md,
"Adding a role").

The trainer imports nothing from components/: its own copy of the role names
(trainer/cluster.py ROLES, trainer/shared_names.py EVALUATOR) is held equal to this table by a test.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Literal, Optional, get_args

from .roles import RoleName
from .sizing import chief_memory_request, evaluator_memory_request, ps_memory_request
from .trainer_contract import parse_task_name, task_name  # noqa: F401 (the one scheme, the trainer's)

if TYPE_CHECKING:  # annotations only: the stack's models check it by this table
    from .models import StackConfig

CheckpointAccess = Literal["none", "read", "write"]
# How a role's tasks are spread over the servers of their pool under `spread` placement:
# `apart` never puts two on one server while another has none; `even` prefers it.
Spread = Literal["none", "apart", "even"]
# How often a role's Job replaces a lost task: as the stack says (`chief.restarts`), never (the
# experiment restarts instead), or always (but for a group whose end is the experiment's, as the
# workers' without a chief: each worker then has a few retries, components/objects/jobset.py).
Retries = Literal["stack", "never", "always"]
# What the analysis counts a role's CPU as (components/insight/): serving the model's variables (the
# PS: `hot-ps`, `ps-bound`), computing steps (`worker-bound`), coordinating the steps (the chief,
# which shares the PS' servers) or evaluating (beside the training).
Load = Literal["variables", "steps", "coordination", "evaluation"]


@dataclass(frozen=True)
class TaskRole:
    name: RoleName  # TF_CONFIG's task type, the task name's prefix (`ps-0`), the pods' component label
    stack_key: str  # its settings under tfk8s:cluster (`workers` for worker tasks)
    one_task: bool  # it runs task 0 alone (TensorFlow has one chief, one evaluator)
    in_training_cluster: bool  # listed in TF_CONFIG's cluster, serves the TF gRPC port, has a Service
    ready_when_serving: bool  # "ready" is its gRPC server answering
    placed_by_plan: bool  # the planner gives each server its block of the role's tasks
    waits_at_start_barrier: bool  # starts only once every task of the training cluster has an address
    may_decide_outcome: bool  # its end is the experiment's: the first such role the plan has (table order)
    lost_restarts_experiment: bool  # its state dies with it: losing one restarts the experiment
    retries: Retries
    has_deadline: bool  # the stack's chief.activeDeadlineSeconds ends its Job, and so the experiment
    runs_to_completion: bool  # it ends by itself (a Job in the StatefulSet model); the others serve
    checkpoint_access: CheckpointAccess  # the chief's checkpoint volume: none, read-only, writable
    takes_gpus: bool  # the stack's workers.gpus; never a PS (seed 001: PS work is memory-bound)
    spread: Spread
    fails_on_exit_codes: bool  # takes the stack's `failOn`
    # The role whose command and args it runs unless `program.roles` gives its own (TFJob users write
    # one program, whose evaluator runs the worker's command); None: the program's.
    borrows_command_of: Optional[RoleName]
    load: Load
    # Its memory request and limit: derived from what it holds unless the stack gives one (the PS, the
    # chief, the evaluator), or the stack's (workers). Its CPU is its settings' `cpu`.
    memory: Callable[[StackConfig], str]


def _workers_memory(config: StackConfig) -> str:
    return config.cluster.workers.memory


CHIEF = TaskRole(
    name="chief",
    stack_key="chief",
    one_task=True,
    in_training_cluster=True,
    ready_when_serving=False,
    placed_by_plan=False,  # the coordinator stays in the PS pool, where the scheduler puts it
    waits_at_start_barrier=True,
    may_decide_outcome=True,
    lost_restarts_experiment=False,
    retries="stack",
    has_deadline=True,
    runs_to_completion=True,
    checkpoint_access="write",
    takes_gpus=False,
    spread="none",
    fails_on_exit_codes=True,
    borrows_command_of=None,
    load="coordination",
    memory=chief_memory_request,
)
PS = TaskRole(
    name="ps",
    stack_key="ps",
    one_task=False,
    in_training_cluster=True,
    ready_when_serving=True,
    placed_by_plan=True,
    waits_at_start_barrier=True,
    may_decide_outcome=False,
    lost_restarts_experiment=True,
    retries="never",
    has_deadline=False,
    runs_to_completion=False,
    checkpoint_access="none",
    takes_gpus=False,
    spread="apart",
    fails_on_exit_codes=True,
    borrows_command_of=None,
    load="variables",
    memory=ps_memory_request,
)
WORKER = TaskRole(
    name="worker",
    stack_key="workers",
    one_task=False,
    in_training_cluster=True,
    ready_when_serving=True,
    placed_by_plan=True,
    waits_at_start_barrier=True,
    may_decide_outcome=True,  # without a chief (TF1 between-graph, `done: workers`)
    lost_restarts_experiment=False,
    retries="always",
    has_deadline=False,
    runs_to_completion=False,
    checkpoint_access="none",
    takes_gpus=True,
    spread="even",
    fails_on_exit_codes=True,
    borrows_command_of=None,
    load="steps",
    memory=_workers_memory,
)
# TensorFlow's side-car evaluator: outside the training cluster, it reads the chief's checkpoints,
# waits for no one and never decides the outcome, however it exits.
EVALUATOR = TaskRole(
    name="evaluator",
    stack_key="evaluator",
    one_task=True,
    in_training_cluster=False,
    ready_when_serving=False,
    placed_by_plan=False,
    waits_at_start_barrier=False,
    may_decide_outcome=False,
    lost_restarts_experiment=False,
    retries="always",
    has_deadline=False,
    runs_to_completion=True,
    checkpoint_access="read",
    takes_gpus=False,
    spread="none",
    fails_on_exit_codes=False,
    borrows_command_of="worker",
    load="evaluation",
    memory=evaluator_memory_request,
)

# In the order the planner lists tasks, `plan` prints them and TF_CONFIG's cluster holds them.
ROLES: tuple[TaskRole, ...] = (CHIEF, PS, WORKER, EVALUATOR)
ROLE_OF: dict[str, TaskRole] = {role.name: role for role in ROLES}
# TF_CONFIG's cluster: the task types it lists (TensorFlow's guide leaves the evaluator out).
TRAINING_CLUSTER: tuple[RoleName, ...] = tuple(role.name for role in ROLES if role.in_training_cluster)
# The roles the planner gives each server its share of.
PLACED_ROLES: tuple[RoleName, ...] = tuple(role.name for role in ROLES if role.placed_by_plan)

if {role.name for role in ROLES} != set(get_args(RoleName)):
    raise AssertionError("every role the stack file names has one row in the table")


def role_of(task_type: str) -> TaskRole:
    """The row of a task type (`chief`, `ps`, `worker`, `evaluator`)."""
    return ROLE_OF[task_type]


def role_by_load(load: Load) -> TaskRole:
    """The role whose CPU is that load: `variables` for the PS, `steps` for the workers."""
    return next(role for role in ROLES if role.load == load)


def checkpoint_writer() -> TaskRole:
    """The role whose checkpoint volume the readers mount: a ReadWriteOnce claim is on its server."""
    return next(role for role in ROLES if role.checkpoint_access == "write")
