"""The rounds of a `tune` run and when it stops (pure: what each round measured and found, no cluster).

A round is one stack brought up, measured over a window and judged by `diagnose`'s rules. tune
goes on to the stack the finding writes while each round is faster than every round before it by
MIN_GAIN: the seeds' hunt took a change as progress when it bought more than the noise of one run
(their runs differed by a few percent between repeats), and a smaller gain is not worth another
round of servers. It stops at the first of:
- a round that failed (its experiment failed, or no figure was measured);
- a finding that changes no stack key (the advice says what to change in the program);
- a round not at least MIN_GAIN faster than the best round so far;
- the last of `--rounds` rounds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from ..spec.stack_changes import Change

DEFAULT_ROUNDS = 4
MAX_ROUNDS = 10
# A round must beat the best round so far by this share to count as progress (see above).
MIN_GAIN = 0.05


@dataclass(frozen=True)
class Round:
    """What one round ran and found. `failed`: why it gave no figure (the round's `status`)."""

    stack: str
    file: str
    examples_per_s: Optional[float] = None
    bottleneck: Optional[str] = None
    confidence: Optional[str] = None
    changes: tuple[Change, ...] = ()
    advice: tuple[str, ...] = ()
    failed: Optional[str] = None


@dataclass(frozen=True)
class Tuning:
    """The rounds run so far, in order (round 0 first), and why tune stopped (None: it goes on)."""

    rounds: tuple[Round, ...] = ()
    stopped: Optional[str] = None
    left_behind: tuple[str, ...] = field(default=())  # what tune could not take down, and why

    @property
    def first(self) -> Optional[Round]:
        return self.rounds[0] if self.rounds else None

    def ratio(self, round_: Round) -> Optional[float]:
        """A round's examples/s over round 0's."""
        first = self.first
        if first is None or round_.examples_per_s is None or not first.examples_per_s:
            return None
        return round(round_.examples_per_s / first.examples_per_s, 3)

    @property
    def best(self) -> Optional[Round]:
        """The fastest round, a later one counting only where it beat the best before it by MIN_GAIN
        (as the stop rule counts progress: within the noise, the earlier stack stays the best)."""
        best: Optional[Round] = None
        for r in self.rounds:
            if r.examples_per_s is None:
                continue
            if best is None or best.examples_per_s is None or r.examples_per_s >= best.examples_per_s * (1 + MIN_GAIN):
                best = r
        return best


def stop_reason(tuning: Tuning, rounds: int) -> Optional[str]:
    """Why tune stops after the last round of `tuning`, in words; None where it runs the next."""
    last = tuning.rounds[-1]
    number = len(tuning.rounds) - 1
    if last.failed is not None:
        return f"round {number} ({last.stack}) failed: {last.failed}"
    earlier = Tuning(tuning.rounds[:-1]).best
    if earlier is not None and earlier.examples_per_s is not None and last.examples_per_s is not None:
        if last.examples_per_s < earlier.examples_per_s * (1 + MIN_GAIN):
            return (
                f"round {number} ({last.stack}) ran {last.examples_per_s:,.1f} examples/s, not {MIN_GAIN:.0%} more "
                f"than the best so far ({earlier.stack}, {earlier.examples_per_s:,.1f})"
            )
    if not last.changes:
        advice = f": {' '.join(last.advice)}" if last.advice else ""
        return f"round {number}'s finding ({last.bottleneck}) changes no stack key{advice}"
    if len(tuning.rounds) >= rounds:
        return f"ran the {rounds} rounds asked (--rounds {rounds})"
    return None


def tuning_json(tuning: Tuning) -> dict[str, Any]:
    """`tune --json`: one object, the rounds, the best and why it stopped."""
    best = tuning.best
    best_json = None
    if best is not None:
        best_json = {"stack": best.stack, "file": best.file, "examples_per_s": best.examples_per_s}
        best_json["ratio"] = tuning.ratio(best)
    return {
        "rounds": [
            {
                "stack": r.stack,
                "file": r.file,
                "bottleneck": r.bottleneck,
                "confidence": r.confidence,
                "changes": [change.to_json() for change in r.changes],
                "examples_per_s": r.examples_per_s,
                "ratio": tuning.ratio(r),
            }
            for r in tuning.rounds
        ],
        "best": best_json,
        "stopped": tuning.stopped,
    }
