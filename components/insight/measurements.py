"""What was measured of an experiment's tasks over a window (pure, standard library only).

The one input of `bottleneck.diagnose`, whoever measured it: `python -m components
diagnose` (a running experiment's pods, through the cluster's metrics), `trainer.report --cluster`
and `make report` (their own samples). bottleneck.py re-exports these names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional


@dataclass(frozen=True)
class TaskSample:
    """One task's figures over the sampled window."""

    task: str  # "ps-0", "worker-3", "chief-0", "evaluator-0"
    role: str  # "ps", "worker", "chief" or "evaluator" (the task name's prefix)
    node: Optional[str]  # the server it ran on; None where not scheduled
    cpu_series: tuple[float, ...]  # CPU cores at each sample the task had a figure (empty: never measured)
    cpu_allowed: Optional[float]  # cores it may use: its CPU limit, else its request; None where it has neither
    running: bool = True  # False: the task's pod was not running for the whole window (a straggler's cause)
    network_bytes_per_s: Optional[float] = None  # received + sent, from the kubelet summary; None where unreadable

    @property
    def cpu_cores(self) -> Optional[float]:
        """Mean CPU over the window; None where never measured."""
        return sum(self.cpu_series) / len(self.cpu_series) if self.cpu_series else None


@dataclass(frozen=True)
class ServerSample:
    server: str
    cores: Optional[float]  # the node's allocatable CPU; None where Nodes may not be read


@dataclass(frozen=True)
class TrainerFacts:
    """What only tfk8s's own trainer tells (absent for a team's program)."""

    step_time_s: Optional[float]  # seconds per training step over the window, from the chief's progress
    ps_shard_bytes: dict[str, int] = field(default_factory=dict)  # PS task -> bytes of the embedding it holds


@dataclass(frozen=True)
class Measurements:
    tasks: tuple[TaskSample, ...]
    servers: tuple[ServerSample, ...]
    seconds: float  # length of the window
    samples: int  # samples taken in it
    source: str  # where the CPU figures came from ("metrics.k8s.io", "kubelet summary", "local processes")
    trainer: Optional[TrainerFacts] = None
