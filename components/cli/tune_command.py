"""`python -m components tune <stack>`: the seeds' hunt run by tfk8s, round after round, each round a
stack brought up through the Pulumi engine, measured, judged by `diagnose` and taken down; the next
stack written from the finding (components/tune/)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Callable, Optional

from ..live.diagnose import DEFAULT_SECONDS, SAMPLE_EVERY_S
from ..plan.experiment import Experiment
from ..spec.stack_files import STACKS_DIR, stack_path
from ..tune.engine import EngineFailed, RoundEngine
from ..tune.round_run import RoundRun
from ..tune.rounds import DEFAULT_ROUNDS, MAX_ROUNDS, MIN_GAIN, tuning_json
from . import argument_types
from .diagnose_command import window_seconds
from .exit_codes import BAD_INPUT, INTERRUPTED, NO, OK

TUNE_DESCRIPTION = f"""\
Run the seeds' hunt: round 0 is the stack as it is; each round brings its stack up through the Pulumi
engine (tfk8s's program, the policy pack on, your backend and secrets provider), waits until every task
runs and the chief prints its first progress line, measures examples/s (from the chief's `step … loss …
examples/s` lines) and diagnose's figures over one window, writes the next stack from the finding as
`diagnose --write` does (<stack>-tune1, <stack>-tune2, ..., beside the stack), and takes the round down
before the next one starts. It stops at a round that failed, a finding that changes no stack key, a
round not {MIN_GAIN:.0%} faster than the best so far, or after --rounds rounds. What tune brought up,
tune takes down, however it ends.

exit codes:
  0    a best stack is named
  1    nothing to tune: the first round failed (no progress line, the experiment failed, nothing
       measured)
  2    a refused flag or stack, a stack already up, an unreadable cluster
  130  interrupted (Ctrl-C), after the round in flight is taken down
"""


def add_tune_parser(
    commands: Any, stack_help: str, cluster_arguments: Callable[[argparse.ArgumentParser], None]
) -> None:
    tune = commands.add_parser(
        "tune",
        help="run rounds of up, measure, diagnose and the next stack, until nothing more helps",
        description=TUNE_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    tune.add_argument("stack", metavar="STACK", help=stack_help)
    tune.add_argument(
        "--rounds",
        type=rounds_count,
        default=DEFAULT_ROUNDS,
        metavar="N",
        help=f"at most this many rounds, round 0 included (default: {DEFAULT_ROUNDS}, at most {MAX_ROUNDS})",
    )
    tune.add_argument(
        "--round-seconds",
        type=window_seconds,
        default=DEFAULT_SECONDS,
        metavar="S",
        help=f"each round's measuring window, diagnose's (default: {DEFAULT_SECONDS:g}, three refreshes of "
        f"metrics-server, sampled every {SAMPLE_EVERY_S:g} s)",
    )
    tune.add_argument("--json", action="store_true", help="print one JSON object")
    cluster_arguments(tune)


def rounds_count(text: str) -> int:
    return argument_types.whole_number(text, 1, MAX_ROUNDS)


def tune_command(experiment: Experiment, args: argparse.Namespace, engine: Optional[RoundEngine] = None) -> int:
    """Tune from the stack; the exit code (TUNE_DESCRIPTION). `engine`: the user's Pulumi unless given
    (`make tune` gives the local cluster's)."""
    from ..live.cluster_access import with_cluster
    from ..tune.engine import UserEngine
    from ..tune.tune_view import tuning_text
    from ..tune.tuning import tune

    first = stack_path(args.stack)
    if engine is None and first.parent.resolve() != STACKS_DIR.resolve():
        print(
            f"tune: {first} is not in {STACKS_DIR}: `pulumi up` reads a stack's settings from there "
            "(Pulumi.yaml's stackConfigDir); copy the stack file there and give its name",
            file=sys.stderr,
        )
        return BAD_INPUT
    chosen = engine or UserEngine()
    try:
        already_up = chosen.is_up(first)
    except EngineFailed as why:
        print(f"tune: {why}", file=sys.stderr)
        return BAD_INPUT
    if already_up:
        print(
            f"tune: stack '{experiment.stack}' is already up: tune brings each round up and takes it down, and "
            f"never touches what it did not bring up; `{chosen.destroy_hint(first)}` first",
            file=sys.stderr,
        )
        return BAD_INPUT

    def say(line: str) -> None:
        print(f"tune: {line}", file=sys.stderr, flush=True)

    def action(api: Any) -> int:
        run = RoundRun(api, chosen, args.round_seconds, say)
        try:
            tuning = tune(run, Path(first), args.rounds)
        except KeyboardInterrupt:
            for what in run.left_behind:
                say(f"left up: {what}")
            say("interrupted; the round in flight was taken down" if not run.left_behind else "interrupted")
            return INTERRUPTED
        if args.json:
            print(json.dumps(tuning_json(tuning), indent=2))
            for what in tuning.left_behind:
                say(f"left up: {what}")
        else:
            print(tuning_text(tuning))
        return OK if tuning.best is not None else NO

    return with_cluster(experiment, args.kubeconfig, args.context, action, stack_given=args.stack)
