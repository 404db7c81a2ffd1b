"""The role table is the one place a role's traits live: the trainer's copy agrees with it, and
components/ compares no role with a string anywhere else."""

from __future__ import annotations

import ast
from typing import get_args

import pytest

from components.spec.task_roles import PLACED_ROLES, ROLES, TRAINING_CLUSTER, checkpoint_writer, role_of
from components.spec.roles import RoleName
from components.spec.stack_files import PROJECT_ROOT
from components.spec.task_counts import task_counts
from components.objects.loading import load_experiment
from trainer import cluster as trainer_cluster
from trainer import shared_names, stack_export

ROLE_NAMES = frozenset(get_args(RoleName))


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
    [("scene1-case3", {"chief": 1, "ps": 10, "worker": 100})],
)
def test_the_plan_runs_the_tasks_the_counts_say(stack, counts):
    """Every role the stack runs, with its count; every other role of the table, none."""
    experiment = load_experiment(stack)
    assert {role: count for role, count in task_counts(experiment.config).items() if count} == counts
    assert {role.name: experiment.plan.count(role.name) for role in ROLES} == {role.name: counts.get(role.name, 0) for role in ROLES}


# The row constants of the table (and of the trainer's and the pack's name modules): `role is CHIEF`
# or `task_type == PS` decides by name as much as `== "ps"` does.
ROW_NAMES = frozenset({"CHIEF", "PS", "WORKER", "EVALUATOR"})
# What may name roles: the table, the trainer's names module, the pack's copy of the table, and the
# import of a TFJob (components/migrate/: the mapping of its replica types, Chief, Master, PS, Worker
# and Evaluator, whose rules TFJob decides by name).
NAMES_ROLES = (
    "components/spec/task_roles.py",
    "trainer/shared_names.py",
    "policy/tfk8s_policies/facts.py",
    "components/migrate/",
)
# A stack file's sections are named as its roles are (`tfk8s:cluster.ps`, `program.roles.chief`):
# asking whether the file gives one is reading the file, not deciding a role's behaviour. Each
# such line, word for word, and why it stays; a new role touches none of them.
STACK_SECTIONS = {
    # `ps` left out, no ratio: a workers-only cluster (its default).
    ("components/spec/models.py", 'if "ps" not in data and data.get("ratio") is None:'),
    # Settings for tasks the stack runs none of: each message says how to run one.
    ("components/spec/combination_rules.py", 'if program is not None and "ps" in program.roles:'),
    ("components/spec/combination_rules.py",
     'if program is not None and "evaluator" in program.roles and cluster.evaluator_count == 0:'),
    ("components/spec/cross_checks.py",
     'if program is not None and not program.has_chief and "chief" in config.cluster.model_fields_set:'),
    ("components/spec/program.py", 'if not self.has_chief and "chief" in self.roles:'),
}
SEARCHED = ("components", "trainer", "policy/tfk8s_policies")
TEXT_MATCHES = frozenset({"startswith", "endswith", "match", "fullmatch", "search", "removeprefix"})


def _is_role(node: ast.AST) -> bool:
    """A role's name written in place or one of the table's rows by name, or a tuple, list or set of them."""
    if isinstance(node, ast.Constant):
        return node.value in ROLE_NAMES
    if isinstance(node, ast.Name):
        return node.id in ROW_NAMES
    if isinstance(node, ast.Attribute):  # PS.name, task_roles.CHIEF
        return node.attr in ROW_NAMES or (node.attr == "name" and _is_role(node.value))
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_is_role(element) for element in node.elts)
    return False


def _names_a_task(node: ast.AST) -> bool:
    """A string that begins with a role's task names: "ps-", r"worker-\\d+", f"{PS.name}-"."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return any(node.value.startswith(f"{role}-") or node.value.startswith(f"^{role}") for role in ROLE_NAMES)
    if isinstance(node, ast.JoinedStr) and node.values:
        first = node.values[0]
        return _names_a_task(first) or (isinstance(first, ast.FormattedValue) and _is_role(first.value))
    return isinstance(node, (ast.Tuple, ast.List)) and any(_names_a_task(element) for element in node.elts)


def roles_compared(source: str) -> list[int]:
    """The lines where a role is decided in place: a role's name or row on either side of ==, !=, is,
    in, <=, ... (`task_type == "ps"`, `role is CHIEF`, `{"ps", "worker"} <= types`), or a task name
    matched by its role's prefix (`name.startswith("ps-")`, `re.match(r"worker-\\d+", name)`)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare) and any(_is_role(side) for side in [node.left, *node.comparators]):
            lines.append(node.lineno)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in TEXT_MATCHES:
            if any(_names_a_task(argument) for argument in node.args[:1]):
                lines.append(node.lineno)
    return lines


def test_no_role_is_compared_with_a_string_outside_the_table():
    found = []
    for folder in SEARCHED:
        for path in sorted((PROJECT_ROOT / folder).rglob("*.py")):
            relative = str(path.relative_to(PROJECT_ROOT))
            if relative.startswith(NAMES_ROLES) or "/venv/" in relative:
                continue
            lines = path.read_text(encoding="utf-8").splitlines()
            for line in roles_compared("\n".join(lines)):
                if (relative, lines[line - 1].strip()) not in STACK_SECTIONS:
                    found.append(f"{relative}:{line}: {lines[line - 1].strip()}")
    assert found == [], "\n".join(found)


def test_every_section_line_let_through_is_still_there():
    """An entry of STACK_SECTIONS whose line changed or went would let a new comparison through."""
    missing = [
        f"{path}: {line}"
        for path, line in sorted(STACK_SECTIONS)
        if line not in {text.strip() for text in (PROJECT_ROOT / path).read_text(encoding="utf-8").splitlines()}
    ]
    assert missing == []


def test_the_check_finds_a_role_compared_in_place():
    """The test above would see what it is meant to forbid."""
    for line in ('group.task_type == "ps"', "t in ('chief', EVALUATOR)", '"worker" != role', "group.task_type != EVALUATOR",
                 '"worker" in task_types', '{"ps", "worker"} <= task_types', 'x not in ["evaluator"]',
                 "role is CHIEF", "task.role is not task_roles.EVALUATOR", "t == PS.name", 'name.startswith("ps-")',
                 're.match(r"worker-\\d+", name)', 'n.startswith(f"{PS.name}-")', 'task.endswith(("ps-0", "ps-1"))'):
        assert roles_compared(line), line
    for line in ('names = {"ps": 1}', 'plan.count("ps")', 'role == other', 'x in PLACED_ROLES', 'role.spread == "even"',
                 'name.startswith("psql")', 'role is None'):
        assert not roles_compared(line), line
