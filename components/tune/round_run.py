"""One round of tune: the stack brought up, waited for until it trains, measured over one window,
judged by `diagnose`'s own code, and taken down (whatever happened) before the next round starts,
so that no two rounds share the servers."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from ..live.diagnose import progress_log
from ..live.diagnosis import Diagnosis, diagnose_running, nothing_measured
from ..live.status import read_status
from ..live.tasks import ExperimentStatus
from ..objects.loading import load_experiment
from ..plan.experiment import Experiment
from ..plan.planner import Task
from ..spec.user_files import read_user_text
from .engine import EngineFailed, RoundEngine, stack_name
from .rounds import Round
from .throughput import examples_per_s

POLL_S = 2.0
# How long a round may take to start training before tune calls it failed: a ceiling for a round that
# never trains (an image that is never pulled, a pod never scheduled), not a race against a start,
# which takes seconds to minutes; the experiment's own failure ends the wait at once.
START_CEILING_S = 900.0
ENDED = ("Succeeded", "Failed")


class RoundFailed(Exception):
    """Why a round gave no figure, in words (with the experiment's status where it has one)."""


@dataclass
class RoundRun:
    """What a round needs besides its stack: the cluster, the engine, the window and the clock."""

    api: Any
    engine: RoundEngine
    seconds: float
    say: Callable[[str], None]
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    start_ceiling_s: float = START_CEILING_S
    left_behind: list[str] = field(default_factory=list)


def run_round(run: RoundRun, stack_file: Path, next_name: str) -> tuple[Round, Optional[str]]:
    """The round of `stack_file`, and the next stack's text (None where the finding changes no key, or
    the round failed). The round's objects are gone when this returns, or named in `left_behind`."""
    stack = stack_name(stack_file)
    if run.engine.is_up(stack_file):
        failed = f"stack '{stack}' is already up: tune takes down only what it brought up (`pulumi destroy` it first)"
        return Round(stack, str(stack_file), failed=failed), None
    experiment = load_experiment(str(stack_file))
    started = run.clock()
    try:
        run.say(f"{stack}: up ({run.engine.where})")
        run.engine.up(stack_file)
        status = wait_until_training(run, experiment, started)
        run.say(f"{stack}: every task runs and the chief trains; measuring for {run.seconds:g} s")
        diagnosis = diagnose_running(run.api, experiment, read_user_text(stack_file), run.seconds, next_name)
        return judged(run, experiment, stack_file, diagnosis, status)
    except (EngineFailed, RoundFailed) as why:
        return Round(stack, str(stack_file), failed=str(why)), None
    finally:
        take_down(run, experiment, stack_file)


def judged(
    run: RoundRun, experiment: Experiment, stack_file: Path, diagnosis: Diagnosis, status: ExperimentStatus
) -> tuple[Round, Optional[str]]:
    """The round's figures: examples/s over the window diagnose sampled, and its finding."""
    stack = experiment.stack
    if diagnosis.finding is None:
        raise RoundFailed(nothing_measured(diagnosis.sampled))
    log = progress_log(run.api, experiment, read_status(run.api, experiment), diagnosis.sampled.window.seconds)
    throughput = examples_per_s(log)
    if throughput is None:
        raise RoundFailed(
            f"{_reporter(experiment)} printed no progress line in the window: tune measures examples/s from "
            "`step <n>  loss <x>  <n> examples/s` lines (docs/programs.md)"
        )
    finding = diagnosis.finding
    round_ = Round(
        stack,
        str(stack_file),
        examples_per_s=throughput,
        bottleneck=finding.bottleneck,
        confidence=finding.confidence,
        changes=finding.changes,
        advice=finding.advice,
    )
    if finding.changes and diagnosis.new_text is None:
        raise RoundFailed(diagnosis.next_stack.refused or "the finding's changes could not be written")
    return round_, diagnosis.new_text


def wait_until_training(run: RoundRun, experiment: Experiment, started: float) -> ExperimentStatus:
    """Until every task runs and the chief has printed its first progress line (its log read back to
    `started`, the round's start); RoundFailed when the experiment ends first, or passes the start
    ceiling."""
    while True:
        status = read_status(run.api, experiment)
        if status.phase.name in ENDED:
            raise RoundFailed(f"the experiment ended before it trained: {status.phase}")
        running = all(task.phase == "Running" for task in status.tasks)
        since = run.clock() - started + POLL_S
        if running and examples_per_s(progress_log(run.api, experiment, status, since)) is not None:
            return status
        if run.clock() - started > run.start_ceiling_s:
            waiting = [f"{t.task} {t.phase}" for t in status.tasks if t.phase != "Running"]
            what = ", ".join(waiting) if waiting else f"{_reporter(experiment)} printed no progress line"
            raise RoundFailed(f"not training after {run.start_ceiling_s:g} s ({status.phase}): {what}")
        run.sleep(POLL_S)


def take_down(run: RoundRun, experiment: Experiment, stack_file: Path) -> None:
    """`pulumi destroy`, then until no pod of the experiment is left; what could not be taken down is
    said in `left_behind`."""
    stack = experiment.stack
    try:
        run.say(f"{stack}: down")
        run.engine.destroy(stack_file)
        wait_until_gone(run, experiment)
    except (EngineFailed, RoundFailed) as why:
        run.left_behind.append(f"{stack}: {why}")
    except KeyboardInterrupt:
        run.left_behind.append(f"{stack}: interrupted while taken down: `pulumi destroy --stack {stack}`")
        raise


def wait_until_gone(run: RoundRun, experiment: Experiment) -> None:
    from kubernetes import client

    from ..plan import labels as L

    core = client.CoreV1Api(run.api)
    started = run.clock()
    while True:
        pods = core.list_namespaced_pod(experiment.namespace, label_selector=L.selector_text(experiment.stack)).items
        if not pods:
            return
        if run.clock() - started > run.start_ceiling_s:
            raise RoundFailed(f"{len(pods)} pods still there {run.start_ceiling_s:g} s after `pulumi destroy`")
        run.sleep(POLL_S)


def _reporter(experiment: Experiment) -> str:
    return Task(experiment.plan.deciding_role().name, 0).name
