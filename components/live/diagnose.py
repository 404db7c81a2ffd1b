"""`python -m components diagnose <stack>`: the running experiment sampled for a window, as the bottleneck
rules' figures (components/insight/; the rules themselves are pure and shared with the reports).

Each sample reads what `top` reads, from the same sources with the same rights (top.py): the tasks
and their pods, each pod's CPU from the metrics API, else from the kubelet summary through the
node proxy (top.read_placed_usage, as top reads them). Besides:

- each pod's network counters, where the kubelet summary is the source (the metrics API has none;
  the node proxy is asked for only where top would ask for it);
- once, after the window: each server's allocatable CPU (`get` on the Node, where the user may) and,
  for tfk8s's own trainer, the chief's log over the window with the API server's timestamps (its step
  time; its summary, with the bytes each PS holds, once it finished).

Why a window: the kubelet computes a pod's CPU rate about every 10-15 s and metrics-server scrapes
it every 15 s, so one reading is one rate of one moment; a window of several refreshes shows what the
tasks keep doing, and network counters need two readings apart.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional

from ..insight import bottleneck
from ..objects.api_errors import missing_permission, status_of
from ..plan.experiment import Experiment
from ..plan.planner import Task
from .diagnose_figures import (
    NetworkCounter,
    Sample,
    TaskReading,
    Window,
    measurements,
    pod_network,
)
from .tasks import ExperimentStatus
from .top import NodeMetricsUnavailable, SummaryForbidden, node_summary, read_placed_usage
from .usage import KUBELET_SUMMARY, METRICS_API, PodKey, cpu_allowed, cpu_quantity

# Three metrics-server refreshes (15 s each), a sample every 5 s: ten samples.
DEFAULT_SECONDS = 45.0
SAMPLE_EVERY_S = 5.0
# Two refreshes: below it every sample may repeat the one rate metrics-server had before the window.
MIN_SECONDS = 30.0
# An hour of samples, 720: a bottleneck that needs longer to show is not one diagnose can name, and
# a window past it is a typo (1e9 built a list of 200 million sample times before any request).
MAX_SECONDS = 3600.0
# The chief's log over a window is a few progress lines a second at most; past this it is cut.
CHIEF_LOG_BYTES = 4 * 2**20
ENDED_PHASES = ("Succeeded", "Failed")


@dataclass(frozen=True)
class Sampled:
    """A sampled window, and the rules' figures of it (None where nothing was measured)."""

    window: Window
    measured: Optional[bottleneck.Measurements]
    phase: str  # the experiment's phase at the last sample
    every_s: float


def sample_times(seconds: float, every_s: float) -> list[float]:
    """Offsets from the window's start at which to sample: every `every_s`, and at its end."""
    times = [min(step * every_s, seconds) for step in range(math.ceil(seconds / every_s) + 1)]
    return sorted(set(times))


def read_sample(
    api: Any, experiment: Experiment, at_s: float, notes: dict[str, None]
) -> tuple[Sample, ExperimentStatus]:
    """One sample of every task, and the experiment's status; what could not be read goes into `notes`."""
    from kubernetes import client

    core = client.CoreV1Api(api)
    placed = read_placed_usage(api, experiment)
    status, pods_on, usage = placed.status, placed.pods_on, placed.usage
    if usage.unreadable:
        notes[f"CPU not read: {usage.unreadable}"] = None
    if usage.metrics_api_absent:
        notes[f"CPU from the {KUBELET_SUMMARY} instead of the metrics API: {usage.metrics_api_absent}"] = None
    for node, why in sorted(usage.without_metrics.items()):
        notes[f"{node} reports no metrics: {why}"] = None
    network: dict[PodKey, NetworkCounter] = {}
    if usage.source == KUBELET_SUMMARY:
        # A second read of the nodes read_usage has just read (it keeps each pod's CPU and memory only):
        # the same right, one request more per node and sample.
        for node in sorted(set(pods_on) - set(usage.without_metrics)):
            try:
                network.update(pod_network(node_summary(core, node)))
            except (NodeMetricsUnavailable, SummaryForbidden):
                pass  # its CPU was read a moment ago: a node that stops answering is named at the next sample
    tasks = {}
    for task in status.tasks:
        pod = status.pods.get(task.task)
        key: PodKey = (experiment.namespace, pod.metadata.name) if pod is not None else (None, None)
        found = usage.pods.get(key) if pod is not None and task.node else None
        tasks[task.task] = TaskReading(
            node=task.node,
            pod=pod.metadata.name if pod is not None else None,
            phase=task.phase,
            restarts=sum(s.restart_count or 0 for s in (pod.status.container_statuses or ())) if pod else 0,
            cpu_cores=found.cpu_cores if found is not None else None,
            cpu_allowed=cpu_allowed(pod.spec.containers or ()) if pod is not None else None,
            network=network.get(key),
        )
    return Sample(at_s, tasks, usage.source), status


def sample_window(
    api: Any,
    experiment: Experiment,
    seconds: float,
    every_s: float = SAMPLE_EVERY_S,
    clock: Optional[Callable[[], float]] = None,
    sleep: Optional[Callable[[float], None]] = None,
) -> tuple[Window, ExperimentStatus]:
    """Samples at fixed offsets of the window (a slow answer does not stretch it), until its end or until
    the experiment ends; the window and the last status read. `clock` and `sleep`: time.monotonic and
    time.sleep, looked up when called."""
    clock, sleep = clock or time.monotonic, sleep or time.sleep
    notes: dict[str, None] = {}  # in the order first seen, each once
    samples: list[Sample] = []
    start = clock()
    ended = None
    for offset in sample_times(seconds, every_s):
        sleep(max(0.0, start + offset - clock()))
        sample, status = read_sample(api, experiment, clock() - start, notes)
        if status.phase.name in ENDED_PHASES:
            # Its tasks are stopping or gone: this sample would read the end, not the training.
            ended = status.phase.name
            break
        samples.append(sample)
    return Window(tuple(samples), ended, tuple(notes)), status


def server_cores(api: Any, nodes: list[str]) -> tuple[dict[str, Optional[float]], Optional[str]]:
    """Each node's allocatable CPU; None for a node that cannot be read, and one line where the user may
    not read Nodes at all (namespace rights)."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    core = client.CoreV1Api(api)
    cores: dict[str, Optional[float]] = {}
    for node in nodes:
        try:
            node_status = core.read_node(node).status
            allocatable = (node_status.allocatable if node_status is not None else None) or {}
        except ApiException as error:
            cores[node] = None
            if error.status == 403:
                permission = missing_permission(str(status_of(error.body).get("message") or ""))
                needs = permission or f"`get` on `nodes` ({error.reason})"
                return dict.fromkeys(nodes), (
                    f"servers' CPU not read (it needs {needs}): each task is judged against its own CPU limit or "
                    "request, not against what its server holds"
                )
            continue
        cores[node] = cpu_quantity(allocatable.get("cpu"))
    return cores, None


def chief_log(api: Any, experiment: Experiment, status: ExperimentStatus, seconds: float) -> Optional[str]:
    """The timestamped log of the task that reports progress, over the last `seconds`: for tfk8s's own
    trainer; None for a team's program (its progress lines, if any, say nothing of its model)."""
    return None if experiment.program is not None else progress_log(api, experiment, status, seconds)


def progress_log(api: Any, experiment: Experiment, status: ExperimentStatus, seconds: float) -> str:
    """The timestamped log of the task whose end is the experiment's (the chief, or worker 0 without
    one: the task that prints progress lines), over the last `seconds`; empty where it has no pod or
    its node serves no logs."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    pod = status.pods.get(Task(experiment.plan.deciding_role().name, 0).name)
    if pod is None:
        return ""
    try:
        return str(
            client.CoreV1Api(api).read_namespaced_pod_log(
                pod.metadata.name,
                pod.metadata.namespace,
                timestamps=True,
                since_seconds=max(1, math.ceil(seconds)),
                limit_bytes=CHIEF_LOG_BYTES,
            )
        )
    except ApiException:
        return ""  # a node that serves no logs (kwok): no step time, as for a chief that printed none


def sample_experiment(
    api: Any,
    experiment: Experiment,
    seconds: float = DEFAULT_SECONDS,
    every_s: float = SAMPLE_EVERY_S,
    clock: Optional[Callable[[], float]] = None,
    sleep: Optional[Callable[[float], None]] = None,
) -> Sampled:
    """The window, and what the rules read of it."""
    window, status = sample_window(api, experiment, seconds, every_s, clock, sleep)
    if not window.measured:
        return Sampled(window, None, status.phase.name, every_s)
    notes = list(window.notes)
    nodes = sorted({r.node for sample in window.samples for r in sample.tasks.values() if r.node is not None})
    cores, unread = server_cores(api, nodes)
    if unread:
        notes.append(unread)
    if window.source == METRICS_API:
        notes.append(
            f"network: not read: only the {KUBELET_SUMMARY} counts a pod's bytes, and it is read only where the "
            "metrics API is absent (as top does: it needs `get` on `nodes/proxy`)"
        )
    # Read after the window: its lines from the window's start, with one sample's margin.
    log = chief_log(api, experiment, status, window.seconds + every_s)
    window = Window(window.samples, window.ended, tuple(notes))
    return Sampled(window, measurements(window, cores, log), status.phase.name, every_s)
