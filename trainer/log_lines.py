"""The lines tfk8s's trainer prints, written and read in this one module (standard library only,
so that every task's pod, trainer.local, the report, `top`, `status` and the tests all use it).

Two kinds of line go to a task's stdout:
- the chief's progress line every few steps, for people:
  `step     936  loss 0.3176      9506.1 examples/s` (a team's program may print it too: `top`
  reads it from any chief);
- the evaluator's line for each checkpoint it evaluated, for people:
  `eval step     936  eval_loss 0.3176`;
- an event, for programs: one JSON object with an `event` key (every task's `devices`; the
  chief's `start`, `worker_joined`, `checkpoint`, `restored`, `finishing`, `results_lost`,
  `cluster_serving`, `failed`, and last `summary`, the run's figures; the evaluator's
  `evaluation`, with `step`, `eval_loss` and `checkpoint`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Optional

SUMMARY = "summary"
EVALUATION = "evaluation"

_PROGRESS_LINE = re.compile(r"^step\s+(\d+)\s+loss\s+([-+]?(?:[\d.eE+-]+|inf|nan))\s+([\d.]+)\s+examples/s\s*$")
_EVALUATION_LINE = re.compile(r"^eval step\s+(\d+)\s+eval_loss\s+([-+]?(?:[\d.eE+-]+|inf|nan))\s*$")


@dataclass(frozen=True)
class ProgressLine:
    step: int
    loss: float
    examples_per_sec: float


def progress_line(step: int, loss: float, examples_per_sec: float) -> str:
    return f"step {step:>7}  loss {loss:.4f}  {examples_per_sec:>10.1f} examples/s"


def read_progress_line(line: str) -> Optional[ProgressLine]:
    """A progress line's figures; None for any other line."""
    match = _PROGRESS_LINE.match(line.strip())
    if not match:
        return None
    return ProgressLine(int(match[1]), float(match[2]), float(match[3]))


@dataclass(frozen=True)
class EvaluationLine:
    step: int
    eval_loss: float


def evaluation_line(step: int, eval_loss: float) -> str:
    return f"eval step {step:>7}  eval_loss {eval_loss:.4f}"


def read_evaluation_line(line: str) -> Optional[EvaluationLine]:
    """An evaluation line's figures; None for any other line."""
    match = _EVALUATION_LINE.match(line.strip())
    if not match:
        return None
    return EvaluationLine(int(match[1]), float(match[2]))


def evaluation_event(step: int, eval_loss: float, checkpoint: str) -> str:
    return event_line(EVALUATION, step=step, eval_loss=round(eval_loss, 6), checkpoint=checkpoint)


def read_evaluation_event(line: str) -> Optional[EvaluationLine]:
    """An `evaluation` event's figures; None for any other line, and for one whose step is not a
    whole number or whose eval_loss is not a number (a team's program may print it too)."""
    event = read_event(line)
    if event is None or event["event"] != EVALUATION:
        return None
    step, loss = event.get("step"), event.get("eval_loss")
    if isinstance(step, bool) or not isinstance(step, int) or isinstance(loss, bool):
        return None
    if not isinstance(loss, (int, float)):
        return None
    return EvaluationLine(step, float(loss))


def event_line(event: str, **fields: Any) -> str:
    return json.dumps({"event": event, **fields})


def read_event(line: str) -> Optional[dict[str, Any]]:
    """An event's object (its `event` key included); None for any other line."""
    line = line.strip()
    if not line.startswith("{"):
        return None
    try:
        parsed = json.loads(line)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) and "event" in parsed else None


def last_summary(log: str) -> Optional[dict[str, Any]]:
    """The last `summary` event in a chief's log (its `event` key included)."""
    for line in reversed(log.splitlines()):
        event = read_event(line)
        if event is not None and event["event"] == SUMMARY:
            return event
    return None
