"""What `diagnose` makes of its samples (pure, no API calls): the bottleneck rules' Measurements and
ExperimentShape (components/insight/bottleneck.py), from what diagnose.py read of the cluster at each sample.

Per task: its CPU at each sample it had a figure, what it may use (its pod's CPU limit, else its
request, summed over its containers), its node, whether one pod ran it the whole window, and its
network bytes per second where the kubelet summary gave the pod's counters. For tfk8s's own trainer:
the step time, from the times of the chief's progress lines in the window, and the bytes each PS
holds, from the chief's summary once it finished.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Mapping, Optional, Sequence

from ..insight import bottleneck
from ..insight.experiment_shape import experiment_shape as shape_of_export
from ..plan.experiment import Experiment
from ..plan.experiment_export import experiment_export
from ..spec.models import CONFIG_NAMESPACE
from ..spec.task_roles import PS, parse_task_name, task_name
from ..spec.trainer_contract import last_summary, read_progress_line
from .usage import PodKey


@dataclass(frozen=True)
class NetworkCounter:
    """A pod's network counters at one reading: bytes received and sent since it started."""

    at_s: float  # seconds since the epoch: the kubelet's own time of the reading
    total_bytes: int


@dataclass(frozen=True)
class TaskReading:
    """One task at one sample."""

    node: Optional[str]
    pod: Optional[str]  # the pod's name; None: no pod
    phase: str  # the pod's phase, or "Missing"
    restarts: int  # its containers' restarts, summed
    cpu_cores: Optional[float]  # None: no figure at this sample
    cpu_allowed: Optional[float]
    network: Optional[NetworkCounter] = None


@dataclass(frozen=True)
class Sample:
    at_s: float  # on the sampling clock
    tasks: dict[str, TaskReading]
    source: Optional[str]  # where its CPU figures came from (usage.METRICS_API, usage.KUBELET_SUMMARY)


@dataclass(frozen=True)
class Window:
    """What was sampled: the samples in order, and the experiment's phase if it ended in the window."""

    samples: tuple[Sample, ...]
    ended: Optional[str] = None  # "Succeeded" or "Failed": sampling stopped there
    notes: tuple[str, ...] = ()  # what could not be read, one line each

    @property
    def seconds(self) -> float:
        return self.samples[-1].at_s - self.samples[0].at_s if self.samples else 0.0

    @property
    def measured(self) -> bool:
        """Whether any sample had a CPU figure for any task: else there is nothing to diagnose."""
        return any(reading.cpu_cores is not None for sample in self.samples for reading in sample.tasks.values())

    @property
    def source(self) -> Optional[str]:
        """The source of the last sample that had one (a source that went away is said in the notes)."""
        return next((sample.source for sample in reversed(self.samples) if sample.source), None)


def pod_network(summary: Mapping[str, Any]) -> dict[PodKey, NetworkCounter]:
    """(namespace, pod name) -> the pod's network counters, from one node's Summary API document
    (its default interface's `rxBytes` and `txBytes`, with the `time` the kubelet read them)."""
    counters = {}
    for pod in summary.get("pods") or ():
        ref = pod.get("podRef") or {}
        network = pod.get("network") or {}
        at = _epoch_seconds(network.get("time"))
        received, sent = network.get("rxBytes"), network.get("txBytes")
        if at is not None and isinstance(received, int) and isinstance(sent, int):
            counters[(ref.get("namespace"), ref.get("name"))] = NetworkCounter(at, received + sent)
    return counters


def _epoch_seconds(text: Any) -> Optional[float]:
    """An RFC 3339 time as the kubelet writes it (`2026-11-24T02:33:19.123456789Z`), in seconds."""
    if not isinstance(text, str):
        return None
    # Python reads at most microseconds: the kubelet writes up to nanoseconds.
    trimmed = re.sub(r"(\.\d{6})\d+", r"\1", text.strip())
    try:
        return datetime.fromisoformat(trimmed).timestamp()
    except ValueError:
        return None


def network_rate(counters: Sequence[Optional[NetworkCounter]]) -> Optional[float]:
    """Bytes per second between the first and the last reading of the window; None with fewer than
    two readings the kubelet made at different times, or counters that went back (a new pod)."""
    known = [counter for counter in counters if counter is not None]
    if len(known) < 2 or known[-1].at_s <= known[0].at_s or known[-1].total_bytes < known[0].total_bytes:
        return None
    return round((known[-1].total_bytes - known[0].total_bytes) / (known[-1].at_s - known[0].at_s), 1)


def step_time(log: str) -> Optional[float]:
    """Seconds per training step over the window: from the first to the last progress line of a log read
    with timestamps (`<RFC 3339 time> step ...`); None without two progress lines at different steps."""
    progress = []
    for line in log.splitlines():
        stamp, _, rest = line.partition(" ")
        at, read = _epoch_seconds(stamp), read_progress_line(rest)
        if at is not None and read is not None:
            progress.append((at, read.step))
    if len(progress) < 2 or progress[-1][1] <= progress[0][1]:
        return None
    (first_at, first_step), (last_at, last_step) = progress[0], progress[-1]
    return round((last_at - first_at) / (last_step - first_step), 4)


def shard_bytes(log: str) -> dict[str, int]:
    """PS task -> bytes of the model it holds, from the chief's summary (written once it finished); {}
    before, or where the summary has none. The log's lines may carry timestamps."""
    summary = last_summary("\n".join(map(_untimed, log.splitlines())))
    per_ps = summary.get("bytes_per_ps") if summary is not None else None
    if not isinstance(per_ps, list) or not all(isinstance(size, int) for size in per_ps):
        return {}
    return {task_name(PS.name, index): size for index, size in enumerate(per_ps)}


def _untimed(line: str) -> str:
    """A log line without the timestamp the API server put before it, where it has one."""
    stamp, _, rest = line.partition(" ")
    return rest if _epoch_seconds(stamp) is not None else line


def measurements(
    window: Window, cores_of: Mapping[str, Optional[float]], chief_log: Optional[str]
) -> bottleneck.Measurements:
    """The rules' figures of a sampled window. `cores_of`: each server's allocatable CPU (None: not
    read); `chief_log`: the chief's timestamped log over the window, for tfk8s's own trainer (None: a
    team's program, whose facts tfk8s cannot read)."""
    names = sorted({name for sample in window.samples for name in sample.tasks}, key=parse_task_name)
    tasks = []
    for name in names:
        readings = [sample.tasks[name] for sample in window.samples if name in sample.tasks]
        last = readings[-1]
        pods = {reading.pod for reading in readings}
        tasks.append(
            bottleneck.TaskSample(
                task=name,
                role=parse_task_name(name)[0],
                node=next((reading.node for reading in reversed(readings) if reading.node), None),
                cpu_series=tuple(reading.cpu_cores for reading in readings if reading.cpu_cores is not None),
                cpu_allowed=last.cpu_allowed,
                # One pod, running at every sample, never restarted: else it straggled or stopped.
                running=len(readings) == len(window.samples)
                and len(pods) == 1
                and all(reading.phase == "Running" for reading in readings)
                and readings[0].restarts == last.restarts,
                network_bytes_per_s=network_rate([reading.network for reading in readings]),
            )
        )
    nodes = sorted({task.node for task in tasks if task.node is not None})
    trainer = None
    if chief_log is not None:
        trainer = bottleneck.TrainerFacts(step_time(chief_log), shard_bytes(chief_log))
    return bottleneck.Measurements(
        tasks=tuple(tasks),
        servers=tuple(bottleneck.ServerSample(node, cores_of.get(node)) for node in nodes),
        seconds=round(window.seconds, 1),
        samples=len(window.samples),
        source=window.source or "none",
        trainer=trainer,
    )


def experiment_shape(experiment: Experiment, written: Mapping[str, Any]) -> bottleneck.ExperimentShape:
    """What the stack says, as the rules propose the next experiment from it: values as the models hold
    them (a key the stack file leaves out has its default), and the node pools as the stack file
    `written` (its `config:` values) writes them, every key of each, for a pool split to keep."""
    written_pools = written.get(f"{CONFIG_NAMESPACE}:nodePools")
    shape = shape_of_export(
        experiment_export(experiment),
        partition=experiment.config.trainer.partition if experiment.program is None else None,
        node_pools=tuple(written_pools) if isinstance(written_pools, list) else (),
    )
    assert shape is not None  # an experiment's export always has its cluster
    return shape
