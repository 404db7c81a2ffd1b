"""A stack's experiment, validated by the project's one schema and scaled down to this machine."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from ..stack_export import ExportError, StackExport, read_export_text
from .errors import LaunchError

# A stack's experiment scaled down to one machine: TensorFlow processes of a few hundred MB each.
MAX_LOCAL_PS = 3

MAX_LOCAL_WORKERS = 6

PROJECT_ROOT = Path(__file__).resolve().parents[2]

# The Pulumi program's environment (`make setup`): it validates stack files.
PROGRAM_PYTHON = PROJECT_ROOT / ".venv" / "bin" / "python"


# A stack as `python -m components export` prints it: validated by the project's one schema, its
# shape written once in trainer/stack_export.py.
StackExperiment = StackExport


def read_stack(stack: str) -> StackExperiment:
    """Validate a stack (name or file) in the program's environment, or read such an export (.json).

    The stack schema (pydantic) lives with the Pulumi program, whose
    environment cannot hold TensorFlow; asking it keeps one schema.
    """
    if stack.endswith(".json") and Path(stack).is_file():
        return _read_export(stack, Path(stack).read_text(encoding="utf-8"))
    if not PROGRAM_PYTHON.exists():
        raise LaunchError(
            f"validating stack '{stack}' needs the program's environment {PROGRAM_PYTHON}: run `make setup`"
        )
    result = subprocess.run(
        [str(PROGRAM_PYTHON), "-m", "components", "export", stack],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if result.returncode != 0:
        raise LaunchError(result.stderr.strip() or f"python -m components export {stack} failed")
    return _read_export(stack, result.stdout)


def _read_export(stack: str, text: str) -> StackExperiment:
    try:
        return read_export_text(text)
    except ExportError as error:
        raise LaunchError(f"stack '{stack}': {error}") from None


@dataclass(frozen=True)
class LocalScale:
    ps: int
    workers: int
    notes: tuple[str, ...]  # what was scaled and why


def scale_to_machine(
    ps: int, workers: int, max_ps: int = MAX_LOCAL_PS, max_workers: int = MAX_LOCAL_WORKERS
) -> LocalScale:
    """The most PS (at least 2 when the stack has 2 or more) whose workers at the stack's
    PS:worker ratio fit this machine; when no such count exists, the fewest PS and as
    many workers as fit, and the ratio changes. Workers only: as many of them as fit."""
    if ps == 0:
        local = min(workers, max_workers)
        return LocalScale(0, local, (f"{workers} workers -> {local}",) if local != workers else ())
    per_ps = workers / ps
    fewest_ps = min(2, ps)
    fitting = [n for n in range(fewest_ps, min(ps, max_ps) + 1) if round(n * per_ps) <= max_workers]
    local_ps = max(fitting) if fitting else fewest_ps
    local_workers = max(1, min(round(local_ps * per_ps), max_workers, workers))
    notes = []
    if local_ps != ps:
        notes.append(f"{ps} PS -> {local_ps}")
    if local_workers != workers:
        notes.append(f"{workers} workers -> {local_workers}")
    if fitting:
        notes.append(f"PS:worker ratio 1:{per_ps:g} kept")
    else:
        notes.append(
            f"PS:worker ratio 1:{per_ps:g} would need {round(fewest_ps * per_ps)} workers for {fewest_ps} PS, "
            f"at most {max_workers} run here: 1:{local_workers / local_ps:g} instead"
        )
    return LocalScale(local_ps, local_workers, tuple(notes))


def cpu_allowance(requests: Mapping[str, float], counts: Mapping[str, int], cores: float) -> dict[str, float]:
    """Each role's CPU on this machine: its request in the stack (cores), every request scaled down
    by one factor where the tasks run here would ask for more than the machine's `cores` (the
    stack's servers hold them in a cluster; one machine does here), so that each role keeps its
    share of the machine; as requested where they fit. `counts`: the tasks run here, per role."""
    requested = sum(request * counts.get(role, 0) for role, request in requests.items())
    factor = min(1.0, cores / requested) if requested > 0 else 1.0
    return {role: round(request * factor, 3) for role, request in requests.items()}
