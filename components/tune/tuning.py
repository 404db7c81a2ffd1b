"""The rounds in order: round 0 is the stack as it is, each later one the stack the round before
wrote from its finding (`<stack>-tuneN`, beside it), until rounds.py's rules say stop."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Callable, Optional

from ..spec.atomic_files import write_text_atomic
from .engine import stack_name
from .round_names import round_names
from .round_run import RoundRun, run_round
from .rounds import Round, Tuning, stop_reason

RunRound = Callable[[RoundRun, Path, str, bool], tuple[Round, Optional[str]]]


def tune(run: RoundRun, first_file: Path, rounds: int, one_round: RunRound = run_round) -> Tuning:
    """Run the rounds; the tuning, with why it stopped and what it could not take down. Ctrl-C
    ends it after the round in flight is taken down (KeyboardInterrupt, with `run.left_behind`)."""
    names = round_names(stack_name(first_file), first_file.parent)
    tuning = Tuning()
    stack_file = first_file
    while True:
        next_name = next(names)
        number = len(tuning.rounds)
        run.say(f"round {number}: {stack_file.name}")
        round_, next_text = one_round(run, stack_file, next_name, stack_file != first_file)
        tuning = replace(tuning, rounds=(*tuning.rounds, round_))
        reason = stop_reason(tuning, rounds)
        if reason is not None or next_text is None:
            return _stopped(tuning, reason or "the finding wrote no next stack", run)
        stack_file = stack_file.parent / f"Pulumi.{next_name}.yaml"
        if stack_file.exists():  # written since the names were read: never over a file
            return _stopped(tuning, f"{stack_file} appeared while tune ran; tune never writes over a file", run)
        try:
            write_text_atomic(stack_file, next_text)
        except OSError as why:
            return _stopped(tuning, f"the next stack {stack_file} cannot be written: {why}", run)
        run.say(f"round {number}: wrote {stack_file} ({', '.join(c.key for c in round_.changes)})")


def _stopped(tuning: Tuning, reason: str, run: RoundRun) -> Tuning:
    return replace(tuning, stopped=reason, left_behind=tuple(run.left_behind))
