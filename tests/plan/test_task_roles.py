"""The role table is the one place a role's traits live: the trainer's copy agrees with it, and
components/ compares no role with a string anywhere else."""

from __future__ import annotations

import ast
from typing import get_args

import pytest

from components.plan.task_roles import PLACED_ROLES, ROLES, TRAINING_CLUSTER, checkpoint_writer, role_of
from components.spec.roles import RoleName
from components.spec.stack_files import PROJECT_ROOT
from components.spec.task_counts import task_counts
from components.objects.loading import load_experiment
from trainer import cluster as trainer_cluster
from trainer import shared_names, stack_export

ROLE_NAMES = frozenset(get_args(RoleName))
NAMES_ROLES = ("components/plan/task_roles.py", "components/spec/", "components/migrate/")


def test_the_table_has_one_row_per_role_the_stack_names():
    assert [role.name for role in ROLES] == list(get_args(RoleName))
    assert all(role_of(role.name) is role for role in ROLES)


def test_the_trainers_copy_of_the_roles_is_the_tables():
    """The trainer imports nothing from components/: its roles are held equal to the table here."""
    assert trainer_cluster.ROLES == TRAINING_CLUSTER
    outside = [role.name for role in ROLES if not role.in_training_cluster]
    assert outside == [shared_names.EVALUATOR]
    # The export gives each role's command, in the table's order.
    assert stack_export.PROGRAM_ROLES == tuple(role.name for role in ROLES)


def test_every_role_is_named_by_the_one_task_name_scheme():
    from components.plan.planner import Task

    for role in ROLES:
        assert Task(role.name, 3).name == shared_names.task_name(role.name, 3) == f"{role.name}-3"
        task = trainer_cluster.TaskConfig({"worker": ["w:1"]}, role.name, 3)
        assert task.name == Task(role.name, 3).name


def test_traits_that_go_together():
    """What one trait implies of another, so that a new row cannot be half right."""
    for role in ROLES:
        # Only a task in the training cluster has an address to serve and to be waited for.
        assert role.ready_when_serving <= role.in_training_cluster
        assert role.waits_at_start_barrier == role.in_training_cluster
        # A role the plan spreads over servers has many tasks; a role of one task is not spread.
        assert not (role.placed_by_plan and role.one_task)
        assert (role.spread == "none") == (not role.placed_by_plan)
        # The experiment's outcome is never decided by a task whose loss restarts it.
        assert not (role.may_decide_outcome and role.lost_restarts_experiment)
    assert checkpoint_writer() is role_of("chief")
    assert PLACED_ROLES == ("ps", "worker")


@pytest.mark.parametrize(
    "stack, counts",
    [("scene1-case3", {"chief": 1, "ps": 10, "worker": 100, "evaluator": 0})],
)
def test_the_plan_runs_the_tasks_the_counts_say(stack, counts):
    experiment = load_experiment(stack)
    assert task_counts(experiment.config) == counts
    assert {role.name: experiment.plan.count(role.name) for role in ROLES} == counts


def _is_role(node: ast.AST) -> bool:
    """A role's name written in place, or a tuple, list or set of them."""
    if isinstance(node, ast.Constant):
        return node.value in ROLE_NAMES
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_is_role(element) for element in node.elts)
    return False


def roles_compared(source: str) -> list[int]:
    """The lines where a role is decided in place: a role name (or the old EVALUATOR constant) on either
    side of ==, !=, in, not in, <=, ...: `task_type == "ps"`, `"worker" in types`, `{"ps", "worker"} <= types`."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_is_role(side) or (isinstance(side, ast.Name) and side.id == "EVALUATOR") for side in sides):
                lines.append(node.lineno)
    return lines


def test_no_role_is_compared_with_a_string_outside_the_table():
    found = []
    for path in sorted((PROJECT_ROOT / "components").rglob("*.py")):
        relative = str(path.relative_to(PROJECT_ROOT))
        if relative.startswith(NAMES_ROLES):
            continue
        text = path.read_text(encoding="utf-8")
        found += [f"{relative}:{line}: {text.splitlines()[line - 1].strip()}" for line in roles_compared(text)]
    assert found == [], "\n".join(found)


def test_the_check_finds_a_role_compared_in_place():
    """The test above would see what it is meant to forbid."""
    for line in ('group.task_type == "ps"', "t in ('chief', EVALUATOR)", '"worker" != role', "group.task_type != EVALUATOR",
                 '"worker" in task_types', '{"ps", "worker"} <= task_types', 'x not in ["evaluator"]'):
        assert roles_compared(line), line
    for line in ('names = {"ps": 1}', 'plan.count("ps")', 'role == other', 'x in PLACED_ROLES'):
        assert not roles_compared(line), line
