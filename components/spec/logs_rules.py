"""How much of each task's log `tfk8s:logs` keeps, and the stacks whose logs it cannot keep."""

from __future__ import annotations

from .logs import KEPT_RUNS, MIN_RUN_BYTES, SIZE_USED
from .models import CONFIG_NAMESPACE, StackConfig
from .quantities import quantity_value
from .task_counts import task_counts


def task_count(config: StackConfig) -> int:
    """Every task whose log the archive keeps."""
    return sum(task_counts(config).values())


def run_bytes(config: StackConfig) -> int:
    """The newest bytes each run of each task keeps."""
    assert config.logs is not None
    return int(quantity_value(config.logs.size) * SIZE_USED) // (task_count(config) * KEPT_RUNS)


def log_archive_checks(config: StackConfig) -> list[str]:
    """A size too small for the tasks, and a task whose output tfk8s does not see."""
    logs = config.logs
    if logs is None:
        return []
    ns = CONFIG_NAMESPACE
    errors = []
    if run_bytes(config) < MIN_RUN_BYTES:
        tasks = task_count(config)
        least = -(-MIN_RUN_BYTES * tasks * KEPT_RUNS // int(SIZE_USED * 2**20))
        errors.append(
            f"{ns}:logs.size: '{logs.size}' keeps less than {MIN_RUN_BYTES // 2**10}Ki of each of {tasks} tasks' "
            f"last {KEPT_RUNS} runs; give at least '{least}Mi'"
        )
    program = config.program
    if program is not None:
        roles = [role for role, count in task_counts(config).items() if count]
        entrypoint_roles = [role for role in roles if program.command_of(role)[0] is None]
        if entrypoint_roles:
            errors.append(
                f"{ns}:logs: the {', '.join(entrypoint_roles)} run the image's entrypoint (no program.command), "
                "whose output tfk8s does not see; give program.command (or program.roles.<role>.command) to "
                f"archive their logs, or leave {ns}:logs out"
            )
    return errors
