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

The figures and the thresholds are in bottleneck_figures.py (the hot-PS rule, which `top` applies
too, in ps_balance.py), the rules in bottleneck_rules.py, the next experiment in next_experiment.py;
this module puts them together and says how sure it is.
docs/observing.md ("diagnose: the bottleneck") explains each threshold and why it is where it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Optional

from .bottleneck_figures import (
    BUSY,
    ISOLATE_MIN_PS_SHARE,
    NETWORK_LINK_BYTES_PER_S,
    NETWORK_NEAR_SHARE,
    SATURATED_SHARE,
    STRAGGLER_SHARE,
    Figures,
    RoleFigures,
    at_sample,
    figures,
    sample_count,
)
from .bottleneck_rules import BOTTLENECKS, Bottleneck, Verdict, classify
from .measurements import Measurements, ServerSample, TaskSample, TrainerFacts
from .next_experiment import Change, ExperimentShape, describe_server, next_experiment
from .ps_balance import HOT_PS_IMBALANCE, HOT_PS_MIN_CORES, IDLE

__all__ = [
    "BOTTLENECKS",
    "BUSY",
    "HOT_PS_IMBALANCE",
    "HOT_PS_MIN_CORES",
    "IDLE",
    "MIN_SAMPLES",
    "SATURATED_SHARE",
    "Bottleneck",
    "Change",
    "Confidence",
    "ExperimentShape",
    "Finding",
    "Measurements",
    "ServerSample",
    "TaskSample",
    "TrainerFacts",
    "diagnose",
]

Confidence = Literal["high", "medium", "low"]

# Fewer samples than 3 are one or two readings of metrics that lag by a window (metrics-server's
# 15 s): a pause between steps or a checkpoint can be all they saw.
MIN_SAMPLES = 3
# A deciding figure within 10% of its threshold could fall on the other side in the next window.
NEAR_THRESHOLD = 0.1
# The share of single samples whose own finding is the window's: at 80% or more the window's finding
# held throughout; under half, the experiment changed during the window (or the figures are noise).
AGREEMENT_HIGH = 0.8
AGREEMENT_LOW = 0.5


@dataclass(frozen=True)
class Finding:
    bottleneck: Bottleneck
    summary: str  # one sentence: what is the limit, and on which tasks or servers
    evidence: dict[str, Any]  # the figures that decided it (JSON-able)
    confidence: Confidence
    confidence_reason: str
    changes: tuple[Change, ...]  # the next experiment, as stack keys
    advice: tuple[str, ...] = ()  # what no stack key changes (a team's program: what to change in it)

    def to_json(self) -> dict[str, Any]:
        """The keys of `diagnose --json` that say the finding (its `next` holds the changes alone: the
        stack diff is the command's); the reports write the same."""
        return {
            "bottleneck": self.bottleneck,
            "summary": self.summary,
            "evidence": self.evidence,
            "confidence": self.confidence,
            "confidence_reason": self.confidence_reason,
            "advice": list(self.advice),
            "next": {"changes": [change.to_json() for change in self.changes]},
        }


def _agreement(measured: Measurements, bottleneck: str) -> Optional[tuple[int, int]]:
    """(samples whose own finding is `bottleneck`, samples): each sample index classified across tasks."""
    count = sample_count(measured)
    if count < 2:
        return None
    found = [classify(figures(at_sample(measured, index))).bottleneck for index in range(count)]
    return sum(1 for one in found if one == bottleneck), count


def _confidence(measured: Measurements, window: Figures, verdict: Verdict) -> tuple[Confidence, str]:
    low: list[str] = []
    medium: list[str] = []
    fine: list[str] = []
    samples = f"{measured.samples} sample{'s' if measured.samples != 1 else ''} over {measured.seconds:g} s"
    (low if measured.samples < MIN_SAMPLES else fine).append(
        samples + (f" (fewer than {MIN_SAMPLES})" if measured.samples < MIN_SAMPLES else "")
    )
    roles = window.ps.tasks + window.workers.tasks
    if roles and len(window.unmeasured) == roles:
        low.append("no PS or worker had a CPU figure")
    elif window.unmeasured:
        (low if 2 * len(window.unmeasured) >= roles else medium).append(
            f"no CPU figure for {', '.join(window.unmeasured)} ({len(window.unmeasured)} of {roles} PS and workers)"
        )
    else:
        fine.append("every PS and worker measured")
    agreement = _agreement(measured, verdict.bottleneck)
    if agreement is not None:
        agreeing, count = agreement
        text = f"{agreeing} of {count} single samples read {verdict.bottleneck}"
        share = agreeing / count
        (low if share < AGREEMENT_LOW else medium if share < AGREEMENT_HIGH else fine).append(text)
    if verdict.margins:
        name, margin = min(verdict.margins.items(), key=lambda item: item[1])
        text = f"{name}: {margin * 100:.0f}% from it"
        (medium if margin < NEAR_THRESHOLD else fine).append(text)
    level: Confidence = "low" if low else "medium" if medium else "high"
    return level, "; ".join(low + medium + fine)


def _network(window: Figures) -> Optional[dict[str, Any]]:
    if not window.network_known:
        return None
    moving = sorted(
        (t for t in window.tasks if t.network_bytes_per_s is not None),
        key=lambda t: t.network_bytes_per_s or 0.0,
        reverse=True,
    )
    return {
        "busiest_tasks": [{"task": t.task, "bytes_per_s": t.network_bytes_per_s} for t in moving[:3]],
        "by_server": window.network_by_server(),
        "near_link": list(window.servers_near_link()),
        "link_bytes_per_s": NETWORK_LINK_BYTES_PER_S,
        "near_share": NETWORK_NEAR_SHARE,
    }


def _role_json(figures_of: RoleFigures) -> dict[str, Any]:
    return {
        "tasks": figures_of.tasks,
        "measured": figures_of.measured,
        "mean_utilisation": figures_of.mean_utilisation,
        "mean_cores": figures_of.mean_cores,
    }


def _evidence(measured: Measurements, window: Figures, verdict: Verdict, team_program: bool) -> dict[str, Any]:
    evidence: dict[str, Any] = {
        "source": measured.source,
        "window_s": measured.seconds,
        "samples": measured.samples,
        "judged_from": "what the cluster measures alone (a team's program)"
        if team_program
        else "what the cluster measures and tfk8s's trainer's progress",
        "roles": {"ps": _role_json(window.ps), "workers": _role_json(window.workers)},
        "tasks": {
            t.task: {
                "role": t.role,
                "node": t.node,
                "cores": t.cores,
                "allowed": t.allowed,
                "utilisation": t.utilisation,
                "running": t.running,
                "network_bytes_per_s": t.network_bytes_per_s,
            }
            for t in window.tasks
        },
        "ps_imbalance": window.ps_imbalance,
        "hot_ps": list(window.hot_ps),
        "servers": [load.to_json() for load in window.servers],
        "saturated_servers": [load.to_json() for load in window.saturated],
        "network": _network(window),
        "stragglers": list(window.stragglers),
        "not_running": list(window.not_running),
        "unmeasured": list(window.unmeasured),
        "margins": dict(verdict.margins),
        "thresholds": {
            "busy": BUSY,
            "idle": IDLE,
            "hot_ps_imbalance": HOT_PS_IMBALANCE,
            "hot_ps_min_cores": HOT_PS_MIN_CORES,
            "saturated_share": SATURATED_SHARE,
            "isolate_min_ps_share": ISOLATE_MIN_PS_SHARE,
            "straggler_share": STRAGGLER_SHARE,
        },
    }
    if measured.trainer is not None:
        evidence["step_time_s"] = measured.trainer.step_time_s
        evidence["ps_shard_bytes"] = dict(measured.trainer.ps_shard_bytes)
    return evidence


def _share(utilisation: Optional[float]) -> str:
    return "unmeasured" if utilisation is None else f"{utilisation * 100:.0f}%"


def _summary(verdict: Verdict, window: Figures, team_program: bool) -> str:
    ps = _share(window.ps.mean_utilisation)
    workers = _share(window.workers.mean_utilisation)
    of_request = "of their CPU request or limit"
    full = f"; {'; '.join(describe_server(load) for load in window.saturated)}" if window.saturated else ""
    if verdict.bottleneck == "hot-ps":
        busiest = window.busiest_ps
        cores = f", {busiest.cores:g} cores" if busiest is not None and busiest.cores is not None else ""
        text = (
            f"{', '.join(verdict.hot_ps)} {'does' if len(verdict.hot_ps) == 1 else 'do'} most of the PS work "
            f"({window.ps_imbalance} times the PS mean{cores}) while the other PS idle{full}"
        )
    elif verdict.bottleneck == "ps-bound":
        text = f"The PS are busy together ({ps} {of_request}) and the workers ({workers}) wait on them{full}"
    elif verdict.bottleneck == "worker-bound":
        text = f"The workers are busy ({workers} {of_request}), the PS are not ({ps}){full}"
    elif verdict.bottleneck == "idle":
        text = f"Neither the PS ({ps} {of_request}) nor the workers ({workers}) are busy: they wait on something else"
    elif window.ps.measured + window.workers.measured == 0:
        text = "No PS or worker had a CPU figure in the window: nothing can be told"
    else:
        text = f"Nothing stands out at this size (PS {ps}, workers {workers} {of_request}){full}"
    return text + (" (judged from what the cluster measures alone: a team's program)." if team_program else ".")


def diagnose(measured: Measurements, shape: ExperimentShape) -> Finding:
    """The one bottleneck the figures show, with its evidence, how sure, and the next experiment."""
    window = figures(measured)
    verdict = classify(window)
    team_program = shape.partition is None and measured.trainer is None
    step_time = measured.trainer.step_time_s if measured.trainer is not None else None
    following = next_experiment(verdict.bottleneck, shape, window, verdict.hot_ps, step_time)
    confidence, reason = _confidence(measured, window, verdict)
    return Finding(
        bottleneck=verdict.bottleneck,
        summary=_summary(verdict, window, team_program),
        evidence=_evidence(measured, window, verdict, team_program),
        confidence=confidence,
        confidence_reason=reason,
        changes=following.changes,
        advice=following.advice,
    )
