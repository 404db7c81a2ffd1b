"""How evenly the PS share the work: the imbalance figure and the one hot-PS rule (pure, standard
library only).

`top` (components/live/usage.py), `diagnose` and the reports (components/insight/bottleneck_figures.py,
components/insight/report_figures.py) all judge a hot PS here, so that on the same figures they never disagree
about which PS is hot: `top` from one reading of the metrics, `diagnose` from a window's means.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

# The busiest PS's CPU over the PS mean past which it does most of the PS work: with 2 PS, 1.5 is
# three times the other's; level PS read near 1.
HOT_PS_IMBALANCE = 1.5
# A task is idle below a quarter of what it may use: it spends most of the window waiting. An idle
# TensorFlow PS or worker (gRPC polling, a sleeping input loop) reads a few millicores, under 5% of
# the smallest requests the stacks give (200m); a worker that trains reads well past its request.
IDLE = 0.25
# A hot PS must also be busy enough to matter, so that the noise of idle PS (a few millicores each,
# whose ratio can be anything) is not called hot: at least a tenth of a core, and at least IDLE of
# what it may use (a PS that idles on a large request is not what holds the workers back).
HOT_PS_MIN_CORES = 0.1


def ratio(numerator: float, denominator: float) -> float:
    """Rounded to 3 places, as `top` writes the imbalance: a figure at a threshold reads as at it."""
    return round(numerator / denominator, 3)


def imbalance(values: Sequence[float]) -> Optional[float]:
    """The largest over the mean; None where there are none or all are zero."""
    mean = sum(values) / len(values) if values else 0.0
    return ratio(max(values), mean) if mean > 0 else None


@dataclass(frozen=True)
class PsCpu:
    """One PS's CPU, as the rule reads it."""

    task: str
    cores: Optional[float]  # None: not measured
    # cores over what it may use (its CPU limit, else its request); where it has neither, whoever
    # measured may know better (diagnose: a saturated server's share), else None
    utilisation: Optional[float] = None

    @classmethod
    def of(cls, task: str, cores: Optional[float], allowed: Optional[float]) -> PsCpu:
        """`allowed`: the cores it may use; None where it has neither a limit nor a request."""
        return cls(task, cores, ratio(cores, allowed) if cores is not None and allowed else None)


def floor_met(busiest: Optional[PsCpu]) -> bool:
    """The busiest PS is busy enough that its lead over the others is not idle noise."""
    if busiest is None or busiest.cores is None or busiest.cores < HOT_PS_MIN_CORES:
        return False
    return busiest.utilisation is None or busiest.utilisation >= IDLE


@dataclass(frozen=True)
class PsBalance:
    """The PS of one reading or window, judged."""

    imbalance: Optional[float]  # the busiest's cores over the PS mean; None with fewer than 2 measured
    busiest: Optional[PsCpu]
    hot: tuple[str, ...]  # every PS at or past HOT_PS_IMBALANCE times the mean, where the busiest is past the floor


def balance(ps: Sequence[PsCpu]) -> PsBalance:
    """The hot-PS rule: at least 2 PS measured, the busiest at or past HOT_PS_IMBALANCE times their
    mean and past the floor (HOT_PS_MIN_CORES, IDLE of what it may use)."""
    measured = [p for p in ps if p.cores is not None]
    busiest = max(measured, key=lambda p: p.cores or 0.0, default=None)
    figure = imbalance([p.cores or 0.0 for p in measured]) if len(measured) >= 2 else None
    hot: tuple[str, ...] = ()
    if figure is not None and figure >= HOT_PS_IMBALANCE and floor_met(busiest):
        mean = sum(p.cores or 0.0 for p in measured) / len(measured)
        hot = tuple(p.task for p in measured if ratio(p.cores or 0.0, mean) >= HOT_PS_IMBALANCE)
    return PsBalance(figure, busiest, hot)
