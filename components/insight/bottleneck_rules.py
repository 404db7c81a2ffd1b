"""The bottleneck rules: one of the five bottlenecks from a window's figures (pure, standard library only).

In order, the first that holds (thresholds and their reasons: components/insight/bottleneck_figures.py, and
components/insight/ps_balance.py for the hot-PS rule that `top` applies too):

1. hot-ps: at least 2 PS measured, the busiest PS's CPU at or past HOT_PS_IMBALANCE times the PS
   mean, that PS at or past HOT_PS_MIN_CORES and IDLE; unless the workers are busy and the hot PS
   is not (then the workers set the pace, and the imbalance is said in the advice);
2. ps-bound: the PS' mean utilisation at or past BUSY, the workers' below it;
3. worker-bound: the workers' at or past BUSY, the PS' below it;
4. idle: both below IDLE (no PS: the workers below IDLE);
5. none: anything else (both busy, or between IDLE and BUSY).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Optional

from .bottleneck_figures import BUSY, Figures, hot_ps_floor_met
from .ps_balance import HOT_PS_IMBALANCE, HOT_PS_MIN_CORES, IDLE

Bottleneck = Literal["hot-ps", "ps-bound", "worker-bound", "idle", "none"]
BOTTLENECKS: tuple[Bottleneck, ...] = ("hot-ps", "ps-bound", "worker-bound", "idle", "none")


@dataclass(frozen=True)
class Verdict:
    bottleneck: Bottleneck
    hot_ps: tuple[str, ...] = ()  # the PS named by hot-ps
    # Each deciding figure's distance from its threshold, relative to the threshold (0.1: 10% away).
    margins: dict[str, float] = field(default_factory=dict)


def _distance(value: float, threshold: float) -> float:
    return round(abs(value - threshold) / threshold, 3)


def workers_set_the_pace(figures: Figures) -> bool:
    """The workers are busy and the busiest PS is not: the workers are the limit, whatever the PS' balance."""
    workers = figures.workers.mean_utilisation
    busiest = figures.busiest_ps
    hot_utilisation = busiest.utilisation if busiest is not None else None
    return workers is not None and workers >= BUSY and hot_utilisation is not None and hot_utilisation < BUSY


def _busy(utilisation: Optional[float]) -> bool:
    return utilisation is not None and utilisation >= BUSY


def _margins(figures: Figures, thresholds: dict[str, float]) -> dict[str, float]:
    """The distance of each role's mean from the threshold named for it."""
    margins = {}
    of_role = {"ps": figures.ps, "workers": figures.workers}
    for role, threshold in thresholds.items():
        value = of_role[role].mean_utilisation
        if value is not None:
            name = "BUSY" if threshold == BUSY else "IDLE"
            margins[f"{role} mean utilisation against {name}"] = _distance(value, threshold)
    return margins


def _imbalance_margin(figures: Figures) -> dict[str, float]:
    """A PS imbalance near HOT_PS_IMBALANCE decides too: a little more and the finding is hot-ps."""
    if figures.ps_imbalance is None or not hot_ps_floor_met(figures.busiest_ps):
        return {}
    return {"ps imbalance against HOT_PS_IMBALANCE": _distance(figures.ps_imbalance, HOT_PS_IMBALANCE)}


def classify(figures: Figures) -> Verdict:
    """The first rule of the module's list that the figures meet."""
    ps = figures.ps.mean_utilisation
    workers = figures.workers.mean_utilisation
    if figures.hot_ps and not workers_set_the_pace(figures):
        busiest = figures.busiest_ps
        assert busiest is not None and busiest.cores is not None and figures.ps_imbalance is not None
        margins = {
            "ps imbalance against HOT_PS_IMBALANCE": _distance(figures.ps_imbalance, HOT_PS_IMBALANCE),
            "busiest PS cores against HOT_PS_MIN_CORES": _distance(busiest.cores, HOT_PS_MIN_CORES),
        }
        return Verdict("hot-ps", figures.hot_ps, margins)
    if _busy(ps) != _busy(workers):
        margins = {**_margins(figures, {"ps": BUSY, "workers": BUSY}), **_imbalance_margin(figures)}
        return Verdict("ps-bound" if _busy(ps) else "worker-bound", margins=margins)
    if workers is not None and workers < IDLE and (ps is None or ps < IDLE):
        return Verdict("idle", margins=_margins(figures, {"ps": IDLE, "workers": IDLE}))
    nearest = {
        role: BUSY if _distance(value, BUSY) <= _distance(value, IDLE) else IDLE
        for role, value in (("ps", ps), ("workers", workers))
        if value is not None
    }
    return Verdict("none", margins={**_margins(figures, nearest), **_imbalance_margin(figures)})
