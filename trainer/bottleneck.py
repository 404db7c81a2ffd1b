"""Where an experiment's bottleneck is, from what was measured of its tasks (pure, standard library only).

One set of rules for every reader of an experiment's figures: `python -m components diagnose`
(a running experiment's pods, through the cluster's metrics), `trainer.report --cluster` and
`make report` (their own samples). Each gives `diagnose` the same `Measurements`, and prints the
`Finding` it returns, so a sweep of stacks reads as a list of findings.

The five bottlenecks (`diagnose --json`'s "bottleneck", public):

- `hot-ps`: one PS (or a few) does most of the PS work, the others idle;
- `ps-bound`: the PS are busy together near what they may use, and the workers wait on them;
- `worker-bound`: the workers are busy near what they may use, the PS are not;
- `idle`: neither PS nor workers are busy: they wait on something else (input, network, a straggler);
- `none`: nothing stands out at this size: the next step is more of everything.

The thresholds, and why each is where it is, are in docs/observing.md ("diagnose").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Optional

Bottleneck = Literal["hot-ps", "ps-bound", "worker-bound", "idle", "none"]
BOTTLENECKS: tuple[Bottleneck, ...] = ("hot-ps", "ps-bound", "worker-bound", "idle", "none")
Confidence = Literal["high", "medium", "low"]


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


@dataclass(frozen=True)
class ExperimentShape:
    """What the stack file says, for the next experiment's changes. `pools`: each node pool's servers."""

    placement: str  # colocated | isolated | spread
    pools: dict[str, tuple[str, ...]]
    ps_replicas: int
    ps_pool: Optional[str]
    ps_cpu: str  # the CPU request as the stack file has it (its default where left out)
    worker_replicas: int
    worker_pool: str
    worker_cpu: str
    worker_gpus: int
    ratio: Optional[str]  # cluster.ratio where the stack gives the PS count that way
    partition: Optional[str]  # tfk8s's trainer's partition; None for a team's program


@dataclass(frozen=True)
class Change:
    """One stack key's change: `key` as `pulumi config` names it ("tfk8s:cluster.ps.replicas")."""

    key: str
    old: Any  # None where the stack file leaves the key out
    new: Any

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "from": self.old, "to": self.new}


@dataclass(frozen=True)
class Finding:
    bottleneck: Bottleneck
    summary: str  # one sentence: what is the limit, and on which tasks or servers
    evidence: dict[str, Any]  # the figures that decided it (JSON-able)
    confidence: Confidence
    confidence_reason: str
    changes: tuple[Change, ...]  # the next experiment, as stack keys
    advice: tuple[str, ...] = ()  # what no stack key changes (a team's program: what to change in it)


def diagnose(measured: Measurements, shape: ExperimentShape) -> Finding:
    """The one bottleneck the figures show, with its evidence, how sure, and the next experiment."""
    raise NotImplementedError
