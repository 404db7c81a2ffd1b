"""The program's run for each stack in stacks/, made once per test session, and a stack's config.

A finished run is plain data, so tests can share it.
"""

from __future__ import annotations

from components.spec.loading import load_stack_config
from components.spec.models import StackConfig
from components.spec.stack_files import read_stack_values, stack_names
from tests.harness import ProgramRun, run_program

# Every stack in stacks/, a user's own included: the generic checks run on each.
ALL_STACKS = stack_names()
SEED_STACKS = [f"scene{scene}-case{case}" for scene in (1, 2) for case in (1, 2, 3, 4)]
# The stacks tfk8s ships: the tests know what each should give (present ones only).
EXAMPLE_STACKS = [
    name for name in (*SEED_STACKS, "gpu-p40", "spread-managed", "scene1-case2-durable", "scene1-case1-local") if name in ALL_STACKS
]

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
