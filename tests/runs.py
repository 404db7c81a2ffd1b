"""The program's run for each stack in stacks/, made once per test session, and a stack's config.

A finished run is plain data, so tests can share it.
"""

from __future__ import annotations

from components.spec.loading import load_stack_config
from components.spec.models import StackConfig
from components.spec.stack_files import read_stack_values
from tests.harness import ProgramRun, run_program

SEED_STACKS = [f"scene{scene}-case{case}" for scene in (1, 2) for case in (1, 2, 3, 4)]
# The stacks tfk8s ships with a known outcome each: the tests know what each should give.
EXAMPLE_STACKS = [*SEED_STACKS, "gpu-p40", "spread-managed", "scene1-case2-durable", "scene1-case1-local"]
# Every stack tfk8s ships in stacks/, the tests' fixtures. A stack a user adds there is theirs, of any
# shape, and no test's fixture: no test lists the folder (tests/test_shipped_stacks.py).
SHIPPED_STACKS = [*EXAMPLE_STACKS, "scene1-case1-hot-auto", "scene1-case1-hot-none"]

_runs: dict[str, ProgramRun] = {}


def program_run(stack: str) -> ProgramRun:
    if stack not in _runs:
        name, values = read_stack_values(stack)
        _runs[stack] = run_program(name, values)
    return _runs[stack]


def stack_config(stack_or_path: str) -> StackConfig:
    """The stack's config as the program validates it, read from its stack file."""
    name, values = read_stack_values(stack_or_path)
    return load_stack_config(name, values)
