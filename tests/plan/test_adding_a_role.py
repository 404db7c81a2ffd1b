"""What a fifth role takes, tried in a scratch copy of the project: its row in the table, its name
in the stack file's roles and its count. With those alone, every shipped stack (none runs the new
role yet) plans, exports and renders exactly as before, and the role guard finds no place that
decides by a role's name; the checks that hold the other copies of the table (the trainer's names,
the pack's facts.py) name what is left. docs/architecture.md's "Adding a role" lists these files."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from components.spec.stack_files import PROJECT_ROOT
from tests.runs import SHIPPED_STACKS

NEW_ROLE = "observer"
# A side-car beside the training cluster, as the evaluator is: the row a team would write first.
NEW_ROW = f'''
OBSERVER = TaskRole(
    name="{NEW_ROLE}",
    stack_key="{NEW_ROLE}",
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
'''
# Each edit of the scratch copy: (file, text found, text put in its place).
EDITS = (
    (
        "components/spec/roles.py",
        'RoleName = Literal["chief", "ps", "worker", "evaluator"]',
        f'RoleName = Literal["chief", "ps", "worker", "evaluator", "{NEW_ROLE}"]',
    ),
    (
        "components/spec/task_roles.py",
        "\n# In the order the planner lists tasks",
        f"{NEW_ROW}\n# In the order the planner lists tasks",
    ),
    ("components/spec/task_roles.py", "(CHIEF, PS, WORKER, EVALUATOR)", "(CHIEF, PS, WORKER, EVALUATOR, OBSERVER)"),
    (
        "components/spec/task_counts.py",
        '"evaluator": cluster.evaluator_count,',
        f'"evaluator": cluster.evaluator_count,\n        "{NEW_ROLE}": 0,  # no stack section yet',
    ),
)
# Each shipped stack as the program sees it: its plan, its export and every object it renders.
DUMP = """
import json, sys
from components.plan.experiment_export import experiment_export
from components.objects.experiment_objects import experiment_objects
from components.objects.loading import load_experiment
from components.spec.trainer_contract import export_text
for stack in sys.argv[1:]:
    experiment = load_experiment(stack)
    objects = [(o.suffix, o.manifest) for o in experiment_objects(experiment)]
    summary = [experiment.plan.summary(), export_text(experiment_export(experiment)), objects]
    print(stack, json.dumps(summary, sort_keys=True, default=str))
"""
STACKS = ("scene1-case3", "scene2-case1", "scene1-case2-durable")


def _project_copy(root: Path) -> Path:
    ignore = shutil.ignore_patterns("venv", "__pycache__", ".pytest_cache", ".hypothesis")
    for folder in ("components", "trainer", "stacks", "policy", "tests"):
        shutil.copytree(PROJECT_ROOT / folder, root / folder, ignore=ignore)
    for file in ("Pulumi.yaml", "__main__.py", "pytest.ini"):
        shutil.copy(PROJECT_ROOT / file, root / file)
    return root


def _dump(project: Path) -> dict[str, str]:
    done = subprocess.run(
        [sys.executable, "-c", DUMP, *STACKS], cwd=project, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(line.split(" ", 1) for line in done.stdout.splitlines())


def _pytest(project: Path, tests: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", tests],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.fixture(scope="module")
def with_a_fifth_role(tmp_path_factory) -> Path:
    project = _project_copy(tmp_path_factory.mktemp("fifth-role"))
    for file, found, put in EDITS:
        path = project / file
        text = path.read_text(encoding="utf-8")
        assert text.count(found) == 1, f"{file}: {found!r}"
        path.write_text(text.replace(found, put), encoding="utf-8")
    return project


def test_the_stacks_are_planned_and_rendered_as_before(with_a_fifth_role, tmp_path):
    assert set(STACKS) <= set(SHIPPED_STACKS)
    before = _dump(_project_copy(tmp_path / "unchanged"))
    after = _dump(with_a_fifth_role)
    assert after == before


def test_the_role_guard_finds_nothing_to_change(with_a_fifth_role):
    """No module decides by a role's name, so the new row reaches them through its traits."""
    done = _pytest(with_a_fifth_role, "tests/plan/test_task_roles.py")
    assert done.returncode != 0  # the copies of the table, below, are not yet told
    failed = set(re.findall(r"^FAILED \S+::(\w+)", done.stdout, re.MULTILINE))
    assert failed == {"test_the_trainers_copy_of_the_roles_is_the_tables"}, done.stdout[-3000:]


def test_the_other_copies_of_the_table_say_what_is_left(with_a_fifth_role):
    """The pack's copy (facts.py) and the trainer's names are held to the table: each check names
    the new role."""
    done = _pytest(with_a_fifth_role, "tests/policy/test_copies.py")
    assert done.returncode != 0 and NEW_ROLE in done.stdout, done.stdout[-3000:]


def test_the_docs_list_what_a_role_takes():
    section = (PROJECT_ROOT / "docs" / "architecture.md").read_text(encoding="utf-8").split("## Adding a role")[1]
    section = section.split("\n## ")[0]
    for file, _, _ in EDITS:
        assert f"`{file}`" in section or f"`{file.removeprefix('components/')}`" in section, file
    for copy in ("trainer/shared_names.py", "policy/tfk8s_policies/facts.py"):
        assert copy in section, copy

