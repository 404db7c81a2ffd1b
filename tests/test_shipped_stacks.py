"""The stacks tfk8s ships are the tests' fixtures; a stack a user adds to stacks/ is theirs. A user's
own valid stack there, of any shape (here: colocated on seven servers, no `tfk8s:trainer` section),
leaves `make test` green: no test lists the folder, so none is parametrized by it or loops over it
(tried as a new user would, such a stack made tests/diagnose/test_stack_edit.py fail)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

from components.spec.stack_files import PROJECT_ROOT, STACKS_DIR, stack_path
from tests.runs import SHIPPED_STACKS

TESTS = PROJECT_ROOT / "tests"
# What lists the stacks folder: the product's listing, or a glob of it.
LISTS_THE_FOLDER = re.compile(r"\bstack_names\(|STACKS_DIR\s*\.\s*(r?glob|iterdir)\(")

USER_STACK_NAME = "my-team-experiment"
USER_STACK = """\
# A team's own experiment, written by hand: no trainer section, its program's defaults.
config:
  tfk8s:nodePools:
    - name: rack-a
      nodes: [a-01, a-02, a-03, a-04, a-05, a-06, a-07]
  tfk8s:cluster:
    placement: colocated
    ps: {replicas: 7, pool: rack-a}
    workers: {replicas: 28, pool: rack-a}
"""


def test_every_shipped_stack_is_in_stacks():
    missing = [stack for stack in SHIPPED_STACKS if not stack_path(stack).is_file()]
    assert missing == [], f"listed as shipped, not in {STACKS_DIR}: {missing}"


def test_no_test_lists_the_stacks_folder():
    """A test takes its stacks from SHIPPED_STACKS (tests/runs.py), never from what stacks/ holds now."""
    listing = {
        str(path.relative_to(PROJECT_ROOT)): [n for n, line in enumerate(path.read_text().splitlines(), 1) if LISTS_THE_FOLDER.search(line)]
        for path in TESTS.rglob("*.py")
        if path != TESTS / "test_shipped_stacks.py"
    }
    assert {path: lines for path, lines in listing.items() if lines} == {}


def test_a_users_own_stack_in_stacks_is_no_tests_fixture(tmp_path):
    """In a copy of the project with a user's stack beside the shipped ones, tfk8s plans it, and no
    test of the program's environment is parametrized by it (the trainer's tests run in their own
    environment and never read stacks/)."""
    project = tmp_path / "project"
    ignore = shutil.ignore_patterns("venv", "__pycache__", ".pytest_cache", ".hypothesis")
    for folder in ("components", "trainer", "tests", "stacks", "policy", "tools"):
        shutil.copytree(PROJECT_ROOT / folder, project / folder, ignore=ignore)
    for file in ("Pulumi.yaml", "__main__.py", "pytest.ini"):
        shutil.copy(PROJECT_ROOT / file, project / file)
    (project / "stacks" / f"Pulumi.{USER_STACK_NAME}.yaml").write_text(USER_STACK)

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, *args], cwd=project, capture_output=True, text=True, timeout=600)

    planned = run("-m", "components", "plan", USER_STACK_NAME)
    assert planned.returncode == 0, planned.stderr
    assert "a-07" in planned.stdout, planned.stdout
    collected = run("-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "tests", "--ignore=tests/trainer")
    assert collected.returncode == 0, collected.stdout[-3000:] + collected.stderr[-2000:]
    tests = [line for line in collected.stdout.splitlines() if "::" in line]
    assert len(tests) > 2000, collected.stdout[-2000:]
    assert [test for test in tests if USER_STACK_NAME in test] == []
