"""What `top` shows, from what the cluster says (pure, no API calls).

Per task: CPU cores and memory, from one of two sources (top.py picks): the
metrics API (`metrics.k8s.io` PodMetrics, served by metrics-server) or the
kubelet's Summary API (`/stats/summary`, one document per node); the PS
imbalance (the busiest PS's CPU over the mean); the chief's progress from its
log lines. A value not known yet is None (JSON null): a pod not scheduled, a
node that serves no metrics, a source that cannot be read, a chief that has not
reported a step.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

from ..insight import ps_balance
from ..spec.quantities import QUANTITY_FACTORS, QUANTITY_PATTERN, quantity_value
from ..spec.task_roles import parse_task_name, role_of
from ..spec.trainer_contract import SUMMARY, EvaluationLine, read_evaluation_event, read_event, read_progress_line
from .table import aligned

# Where the CPU and memory figures came from (`metrics_source` in `top --json`).
METRICS_API = "metrics.k8s.io"
KUBELET_SUMMARY = "kubelet summary"
# The metrics API writes CPU in nanocores ("273148393n") and memory in Ki ("250984Ki").
_METRICS_QUANTITY = re.compile(r"^([0-9]+(?:\.[0-9]+)?)(n|u|m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$")
_METRICS_FACTORS = {**QUANTITY_FACTORS, "n": 1e-9, "u": 1e-6}


@dataclass(frozen=True)
class PodUsage:
    cpu_cores: Optional[float]  # None until the kubelet has two CPU samples of the pod
    memory_bytes: Optional[int]  # the working set, what the kubelet evicts and OOM-kills by


# (namespace, pod name) as the cluster's document names the pod; None where the document leaves one out.
PodKey = tuple[Optional[str], Optional[str]]


def pod_usage(summary: Mapping[str, Any]) -> dict[PodKey, PodUsage]:
    """(namespace, pod name) -> usage, from one node's Summary API document."""
    usage = {}
    for pod in summary.get("pods") or ():
        ref = pod.get("podRef") or {}
        cpu = (pod.get("cpu") or {}).get("usageNanoCores")
        memory = (pod.get("memory") or {}).get("workingSetBytes")
        if not memory:
            # A running pod always has a working set: zero means the kubelet has no sample of
            # this pod yet (its CPU then reads zero too), not an idle pod.
            cpu = memory = None
        usage[(ref.get("namespace"), ref.get("name"))] = PodUsage(
            cpu_cores=round(cpu / 1e9, 3) if cpu is not None else None,
            memory_bytes=int(memory) if memory is not None else None,
        )
    return usage


def _metrics_quantity(text: Any) -> Optional[float]:
    found = _METRICS_QUANTITY.match(str(text).strip()) if text is not None else None
    return float(found[1]) * _METRICS_FACTORS[found[2] or ""] if found else None


def pod_metrics_usage(listed: Mapping[str, Any]) -> dict[PodKey, PodUsage]:
    """(namespace, pod name) -> usage, from the metrics API's PodMetricsList: each container's CPU
    rate and working set (what metrics-server reads from the kubelet), summed over the pod's containers.
    A pod metrics-server has no rate for yet is not listed at all."""
    usage = {}
    for item in listed.get("items") or ():
        metadata = item.get("metadata") or {}
        containers = [container.get("usage") or {} for container in item.get("containers") or ()]
        cpu = _all_known([_metrics_quantity(container.get("cpu")) for container in containers])
        memory = _all_known([_metrics_quantity(container.get("memory")) for container in containers])
        usage[(metadata.get("namespace"), metadata.get("name"))] = (
            PodUsage(round(sum(cpu), 3), int(sum(memory)))
            if containers and cpu is not None and memory is not None
            else PodUsage(None, None)
        )
    return usage


def _all_known(values: Sequence[Optional[float]]) -> Optional[list[float]]:
    """`values` when every one is known; None while any is not."""
    known = [value for value in values if value is not None]
    return known if len(known) == len(values) else None


@dataclass(frozen=True)
class Progress:
    step: Optional[int] = None
    steps: Optional[int] = None  # asked for by the stack
    loss: Optional[float] = None
    examples_per_sec: Optional[float] = None


def chief_progress(log: str, steps_asked: Optional[int]) -> Optional[Progress]:
    """The chief's latest progress: its summary once it finished, else its last progress line.
    None for a team's program (`steps_asked` None) that prints no progress line."""
    for line in reversed(log.splitlines()):
        event = read_event(line)
        if event is not None:
            if event["event"] == SUMMARY:
                return Progress(event.get("steps"), steps_asked, event.get("loss_last"), event.get("examples_per_sec"))
            continue
        progress = read_progress_line(line)
        if progress is not None:
            return Progress(progress.step, steps_asked, progress.loss, progress.examples_per_sec)
    return Progress(steps=steps_asked) if steps_asked is not None else None


def last_evaluation(log: str) -> Optional[EvaluationLine]:
    """The last `evaluation` event in an evaluator's log (tfk8s's trainer's, or a program's that
    prints the same event: docs/programs.md); one that does not read as such is passed over."""
    for line in reversed(log.splitlines()):
        evaluation = read_evaluation_event(line)
        if evaluation is not None:
            return evaluation
    return None


def imbalance(values: Sequence[Optional[float]]) -> Optional[float]:
    """The busiest over the mean; None while any value is unknown or all are zero."""
    known = _all_known(values)
    return ps_balance.imbalance(known) if known else None


def cpu_allowed(containers: Sequence[Any]) -> Optional[float]:
    """Cores a pod may use: each container's CPU limit, else its request, summed; None where no
    container has either (a BestEffort pod may use the whole server). `containers`: the client's
    V1Container objects (the pod's spec as the API server has it)."""
    total, known = 0.0, False
    for container in containers:
        resources = container.resources
        limits = (resources.limits if resources is not None else None) or {}
        requests = (resources.requests if resources is not None else None) or {}
        cores = cpu_quantity(limits.get("cpu"))
        cores = cores if cores is not None else cpu_quantity(requests.get("cpu"))
        if cores is not None:
            total, known = total + cores, True
    return round(total, 3) if known else None


def cpu_quantity(text: Any) -> Optional[float]:
    """Cores of a CPU quantity as the API server writes it ('2', '500m'); None where there is none."""
    if text is None or not re.match(QUANTITY_PATTERN, str(text)):
        return None
    return quantity_value(str(text))


@dataclass(frozen=True)
class TaskUsage:
    task: str
    node: Optional[str]
    cpu_cores: Optional[float]
    memory_bytes: Optional[int]
    cpu_allowed: Optional[float] = None  # cores its pod may use (its CPU limit, else its request)


@dataclass(frozen=True)
class TopView:
    stack: str
    namespace: str
    phase: str
    phase_detail: str
    tasks: list[TaskUsage]
    progress: Optional[Progress]  # None: a team's program that prints no progress line
    # Nodes the experiment's pods run on that serve no metrics, with why.
    without_metrics: dict[str, str] = field(default_factory=dict)
    # METRICS_API or KUBELET_SUMMARY; None where neither could be read (`metrics_unreadable` says why).
    metrics_source: Optional[str] = None
    metrics_unreadable: Optional[str] = None
    # Why the kubelet summary was read instead of the metrics API.
    metrics_api_absent: Optional[str] = None
    # The evaluator's latest evaluation, where the experiment has one and it reported.
    evaluation: Optional[EvaluationLine] = None

    @property
    def ended(self) -> bool:
        return self.phase in ("Succeeded", "Failed")

    @property
    def _ps(self) -> list[TaskUsage]:
        return [t for t in self.tasks if role_of(parse_task_name(t.task)[0]).load == "variables"]

    @property
    def ps_imbalance(self) -> Optional[float]:
        return imbalance([t.cpu_cores for t in self._ps])

    @property
    def hot_ps(self) -> Optional[str]:
        """The PS doing most of the PS work, where one is (seed 001: an unpartitioned table): the busiest
        of those the hot-PS rule names, which `diagnose` applies too (components/insight/ps_balance.py)."""
        judged = ps_balance.balance([ps_balance.PsCpu.of(t.task, t.cpu_cores, t.cpu_allowed) for t in self._ps])
        return judged.busiest.task if judged.hot and judged.busiest is not None else None

    def to_json(self) -> dict[str, Any]:
        """The public shape of `top --json`: exactly these keys (`metrics_unreadable`: why there are no
        figures, or null)."""
        progress = self.progress
        return {
            "phase": self.phase,
            "tasks": [
                {"task": t.task, "node": t.node, "cpu_cores": t.cpu_cores, "memory_bytes": t.memory_bytes}
                for t in self.tasks
            ],
            "ps_imbalance": self.ps_imbalance,
            "progress": None
            if progress is None
            else {
                "step": progress.step,
                "steps": progress.steps,
                "loss": progress.loss,
                "examples_per_sec": progress.examples_per_sec,
            },
            "metrics_source": self.metrics_source,
            "metrics_unreadable": self.metrics_unreadable,
        }


def _mebibytes(value: Optional[int]) -> str:
    return f"{value / 2**20:.0f} MiB" if value is not None else "-"


def _cores(value: Optional[float]) -> str:
    return f"{value:.2f}" if value is not None else "-"


def top_text(view: TopView) -> str:
    phase = f"{view.phase} ({view.phase_detail})" if view.phase_detail else view.phase
    progress = view.progress
    if progress is None:
        progress_line = "progress: not reported (the program prints no progress line: docs/programs.md)"
    elif progress.step is None:
        progress_line = f"progress: no step reported yet (of {progress.steps})"
    else:
        progress_line = (
            f"progress: step {progress.step} of {progress.steps} · loss {progress.loss:.4f} · "
            f"{progress.examples_per_sec:.1f} examples/s"
        )
    ps_imbalance = view.ps_imbalance
    lines = [
        f"stack {view.stack} · namespace {view.namespace} · phase: {phase}",
        progress_line,
        *(
            [f"evaluation: step {view.evaluation.step} · eval_loss {view.evaluation.eval_loss:.4f}"]
            if view.evaluation is not None
            else []
        ),
        _source_line(view),
        "PS imbalance (busiest PS's CPU over the mean): "
        + (
            f"{ps_imbalance:.2f}"
            if ps_imbalance is not None
            else "not known"
            if view.metrics_unreadable
            else "not known yet"
        ),
    ]
    if view.hot_ps is not None:
        lines.append(
            f"{view.hot_ps} does most of the PS work; the usual cause is a variable that is not partitioned "
            "(one variable lives on one PS): give the embedding a partitioner over every PS"
        )
    lines.append("")
    rows = [("TASK", "NODE", "CPU CORES", "MEMORY")]
    for task in view.tasks:
        no_metrics = task.node in view.without_metrics
        rows.append(
            (
                task.task,
                task.node or "-",
                "no metrics" if no_metrics else _cores(task.cpu_cores),
                "no metrics" if no_metrics else _mebibytes(task.memory_bytes),
            )
        )
    lines += aligned(rows)
    if view.without_metrics:
        lines.append("")
        for node, why in sorted(view.without_metrics.items()):
            lines.append(f"{node} reports no metrics: {why}")
    return "\n".join(lines)


def _source_line(view: TopView) -> str:
    if view.metrics_source == METRICS_API:
        return f"CPU and memory from the metrics API ({METRICS_API}, metrics-server)"
    if view.metrics_source == KUBELET_SUMMARY:
        instead = f", instead of the metrics API: {view.metrics_api_absent}" if view.metrics_api_absent else ""
        through = "each node's kubelet through the API server's node proxy"
        return f"CPU and memory from the {KUBELET_SUMMARY} ({through}){instead}"
    return f"CPU and memory not readable: {view.metrics_unreadable or 'no source answered'}"
