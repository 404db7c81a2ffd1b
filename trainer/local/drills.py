"""Fault drills: kill a task once the chief reports a step (`--kill worker-1@100`)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field

from ..shared_names import parse_task_name, role_of


def parse_kill(text: str) -> tuple[str, int]:
    try:
        name, step = text.split("@")
        task_type, index = parse_task_name(name)
        role = role_of(task_type)
        # A drill kills a task of the training cluster; the evaluator beside it decides nothing.
        if role is None or not role.in_training_cluster or (role.one_task and index != 0):
            raise ValueError
        return name, int(step)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected TASK@STEP such as worker-1@100 or chief-0@100, got {text!r}"
        ) from None


@dataclass
class FaultDrills:
    """Task name -> the step at which to kill it; each drill runs once."""

    kills: dict[str, int] = field(default_factory=dict)

    def due(self, step: int) -> list[str]:
        """The tasks to kill now that the chief reports `step`; they are not due again."""
        names = [name for name, at_step in self.kills.items() if step >= at_step]
        for name in names:
            del self.kills[name]
        return names
