"""Each local task's CPU cores while the chief trains, sampled from /proc (Linux).

What `make report` gives the bottleneck rules (components/insight/bottleneck.py) for a local run, as `diagnose`
gives them a pod's CPU from the cluster: a figure per task every SAMPLE_EVERY_S, from the first
finished call (not TensorFlow's start, which would read every task as busy) to the chief's summary,
and the chief's step time over the same window. A task restarted in the window (a new process) has
no figure for the interval it changed in, and is said not to have run for the whole window.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from .procstat import cpu_seconds

# One figure a second: a report's run trains for tens of seconds, so the window holds tens of
# samples; /proc counts CPU in clock ticks (10 ms), so a second reads to 0.01 cores.
SAMPLE_EVERY_S = 1.0


@dataclass
class CpuSampler:
    """`pids()`: each task's process id now (None where it has none); `read(pid)`: its CPU seconds."""

    pids: Callable[[], dict[str, Optional[int]]]
    every_s: float = SAMPLE_EVERY_S
    clock: Callable[[], float] = time.monotonic
    read: Callable[[int], float] = cpu_seconds
    cores: dict[str, list[float]] = field(default_factory=dict)
    restarted: set[str] = field(default_factory=set)  # a new process in the window, or none at a sample
    steps: list[tuple[float, int]] = field(default_factory=list)  # (clock, step) of each progress line
    samples: int = 0
    _last: dict[str, tuple[int, float]] = field(default_factory=dict)  # task -> (pid, CPU seconds)
    _started_at: Optional[float] = None
    _last_at: Optional[float] = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: Optional[threading.Thread] = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def begin(self) -> None:
        """The window's start: each task's CPU seconds now."""
        with self._lock:
            self._started_at = self._last_at = self.clock()
            self._last = self._readings()
            self.cores = {task: [] for task in self.pids()}

    def start(self) -> None:
        """begin(), then a sample every `every_s` on a thread of its own until stop()."""
        self.begin()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            self.sample()

    def _readings(self) -> dict[str, tuple[int, float]]:
        readings = {}
        for task, pid in self.pids().items():
            if pid is None:
                continue
            try:
                readings[task] = (pid, self.read(pid))
            except (OSError, ValueError, IndexError):
                pass  # gone between the pid and its /proc entry: no figure for this interval
        return readings

    def sample(self) -> None:
        """Each task's cores since the previous sample (a task whose process changed has none)."""
        with self._lock:
            if self._last_at is None:
                return
            now = self.clock()
            readings = self._readings()
            elapsed = now - self._last_at
            for task, (pid, cpu) in readings.items():
                previous = self._last.get(task)
                if previous is None or previous[0] != pid:
                    self.restarted.add(task)  # a new process, or one /proc did not show last time
                elif elapsed > 0:
                    self.cores.setdefault(task, []).append(round(max(0.0, cpu - previous[1]) / elapsed, 3))
            self.restarted.update(task for task in self._last if task not in readings)
            self._last, self._last_at = readings, now
            self.samples += 1

    def step(self, step: int) -> None:
        """The chief reported `step` now."""
        if self._started_at is not None:
            self.steps.append((self.clock(), step))

    def stop(self) -> dict[str, Any]:
        """The window's figures (the `task_cpu` of trainer.local's last line), to the last sample: the
        chief may be exiting now, and a part of a second is too few clock ticks to be a figure."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5 * self.every_s)
        return self.window()

    def window(self) -> dict[str, Any]:
        seconds = (self._last_at or 0.0) - (self._started_at or 0.0)
        return {
            "every_s": self.every_s,
            "seconds": round(seconds, 1),
            "samples": self.samples,
            "cores": {task: list(series) for task, series in self.cores.items()},
            "restarted": sorted(self.restarted),
            "step_time_s": self.step_time(),
        }

    def step_time(self) -> Optional[float]:
        """Seconds per step from the first to the last progress line in the window; None without two
        lines at different steps."""
        if len(self.steps) < 2 or self.steps[-1][1] <= self.steps[0][1]:
            return None
        (first_at, first), (last_at, last) = self.steps[0], self.steps[-1]
        return round((last_at - first_at) / (last - first), 4)
