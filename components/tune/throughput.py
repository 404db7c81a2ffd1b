"""A round's throughput: examples/s from the progress lines of the task whose end is the
experiment's (the chief, or worker 0 without one), `step … loss … examples/s` (docs/programs.md),
tfk8s's trainer's and a team's program's alike, over the window `diagnose` sampled."""

from __future__ import annotations

from typing import Optional

from ..spec.trainer_contract import read_progress_line


def examples_per_s(log: str) -> Optional[float]:
    """The mean of the examples/s a log's progress lines report (a line may start with the
    kubelet's timestamp); None where it has none."""
    figures = []
    for line in log.splitlines():
        progress = read_progress_line(line) or read_progress_line(line.partition(" ")[2])
        if progress is not None:
            figures.append(progress.examples_per_sec)
    return round(sum(figures) / len(figures), 1) if figures else None
