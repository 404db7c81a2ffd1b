"""CPU seconds of processes, from /proc (Linux): how busy each PS was."""

from __future__ import annotations

import os
from typing import Optional


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process, from /proc (Linux)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_delta(before: Optional[list[float]], after: list[float]) -> list[float]:
    if before is None:
        before = [0.0] * len(after)
    return [round(b - a, 3) for a, b in zip(before, after)]
