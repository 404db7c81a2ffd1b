"""How many tasks of each role a stack runs: the one count the checks, the log archive and the
planner use."""

from __future__ import annotations

from .models import StackConfig
from .roles import RoleName


def task_counts(config: StackConfig) -> dict[RoleName, int]:
    """Each role's tasks, in the plan's order. A TF1 between-graph program (`done: workers`) has no
    chief: its worker 0 acts as one."""
    cluster = config.cluster
    has_chief = config.program is None or config.program.has_chief
    return {
        "chief": int(has_chief),
        "ps": cluster.ps_count,
        "worker": cluster.workers.replicas,
        "evaluator": cluster.evaluator_count,
    }
