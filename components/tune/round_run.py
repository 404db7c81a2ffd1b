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
from ..spec.task_roles import parse_task_name, role_of
from ..spec.user_files import read_user_text
from .engine import EngineFailed, RoundEngine, stack_name
from .rounds import Round
from .throughput import examples_per_s

POLL_S = 2.0
# How long a round may take to start training before tune calls it failed: a ceiling for a round that
# never trains (an image that is never pulled, a pod never scheduled), not a race against a start,
# which takes seconds to minutes; the experiment's own failure ends the wait at once.
START_CEILING_S = 900.0
# How long after every task runs the chief may take to print its first progress line: TensorFlow's
# start and the first steps take tens of seconds on a busy server; a program that prints none is
# named after this ceiling (its round fails), not raced.
FIRST_LINE_CEILING_S = 300.0
PROGRESS_FORM = "`step <n>  loss <x>  <n> examples/s`"
ENDED = ("Succeeded", "Failed")
# How long after `pulumi destroy` the experiment's pods may take to go (their grace period is 30 s).
GONE_CEILING_S = 300.0


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
    start_ceiling_s: float = field(default_factory=lambda: START_CEILING_S)
    first_line_ceiling_s: float = field(default_factory=lambda: FIRST_LINE_CEILING_S)
    left_behind: list[str] = field(default_factory=list)


def run_round(run: RoundRun, stack_file: Path, next_name: str, made_by_tune: bool) -> tuple[Round, Optional[str]]:
    """The round of `stack_file`, and the next stack's text (None where the finding changes no key, or
    the round failed). The round's objects are gone when this returns, or named in `left_behind`;
    a stack tune made (`made_by_tune`: every round's but round 0's) is removed from the backend too."""
    stack = stack_name(stack_file)
    try:
        if run.engine.is_up(stack_file):
            hint = run.engine.destroy_hint(stack_file)
            failed = f"stack '{stack}' is already up: tune takes down only what it brought up (`{hint}` first)"
            return Round(stack, str(stack_file), failed=failed), None
    except EngineFailed as why:
        return Round(stack, str(stack_file), failed=str(why)), None
    experiment = load_experiment(str(stack_file))
    started = run.clock()
    try:
        run.say(f"{stack}: up ({run.engine.where})")
        run.engine.up(stack_file)
        wait_until_training(run, experiment, started)
        run.say(f"{stack}: every task runs and the chief trains; measuring for {run.seconds:g} s")
        measuring_from = run.clock()
        diagnosis = diagnose_running(run.api, experiment, read_user_text(stack_file), run.seconds, next_name)
        return judged(run, experiment, stack_file, diagnosis, measuring_from)
    except (EngineFailed, RoundFailed) as why:
        return Round(stack, str(stack_file), failed=str(why)), None
    except cluster_errors() as error:
        return Round(stack, str(stack_file), failed=f"the cluster did not answer: {one_line(error)}"), None
    finally:
        take_down(run, experiment, stack_file, made_by_tune)


def judged(
    run: RoundRun, experiment: Experiment, stack_file: Path, diagnosis: Diagnosis, measuring_from: float
) -> tuple[Round, Optional[str]]:
    """The round's figures: examples/s over the window diagnose sampled (from `measuring_from`), and
    its finding."""
    stack = experiment.stack
    window = diagnosis.sampled.window
    if diagnosis.finding is None:
        raise RoundFailed(nothing_measured(diagnosis.sampled))
    if window.ended:
        raise RoundFailed(
            f"the experiment ended ({window.ended}) during the window: its figures are of a run cut short"
        )
    throughput = window_throughput(run, experiment, measuring_from)
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


def window_throughput(run: RoundRun, experiment: Experiment, measuring_from: float) -> float:
    """examples/s from the progress lines the chief printed since the window began. A program prints
    one every so many steps, which may be longer apart than the window: without one yet, the next
    line is waited for (it reports the steps that ran in the window), for at most the first-line
    ceiling."""
    status = read_status(run.api, experiment)
    while True:
        since = run.clock() - measuring_from
        throughput = examples_per_s(progress_log(run.api, experiment, status, since))
        if throughput is not None:
            return throughput
        if since > run.seconds + run.first_line_ceiling_s:
            raise RoundFailed(
                f"{_reporter(experiment)} printed no progress line in the {since:.0f} s from the window's start: "
                f"tune measures examples/s from {PROGRESS_FORM} lines (docs/programs.md)"
            )
        run.sleep(POLL_S)


def wait_until_training(run: RoundRun, experiment: Experiment, started: float) -> ExperimentStatus:
    """Until every task runs and then the chief has printed its first progress line (its log read back
    to `started`, the round's start); RoundFailed when the experiment ends first, when its tasks do
    not all run within the start ceiling, or when no progress line follows within the first-line
    ceiling of every task running."""
    running_since: Optional[float] = None
    while True:
        status = read_status(run.api, experiment)
        if status.phase.name in ENDED:
            raise RoundFailed(f"the experiment ended before it trained: {status.phase}")
        now = run.clock()
        training = [t for t in status.tasks if role_of(parse_task_name(t.task)[0]).in_training_cluster]
        if all(task.phase == "Running" for task in training):
            running_since = now if running_since is None else running_since
            if examples_per_s(progress_log(run.api, experiment, status, now - started + POLL_S)) is not None:
                return status
            if now - running_since > run.first_line_ceiling_s:
                raise RoundFailed(
                    f"{_reporter(experiment)} printed no progress line in the {run.first_line_ceiling_s:g} s after "
                    f"every task ran: tune measures examples/s from {PROGRESS_FORM} lines (docs/programs.md)"
                )
        elif now - started > run.start_ceiling_s:
            waiting = ", ".join(f"{t.task} {t.phase}" for t in training if t.phase != "Running")
            raise RoundFailed(f"not every task ran within {run.start_ceiling_s:g} s ({status.phase}): {waiting}")
        else:
            running_since = None
        run.sleep(POLL_S)


def take_down(run: RoundRun, experiment: Experiment, stack_file: Path, forget: bool) -> None:
    """`pulumi destroy`, then until no pod of the experiment is left; what could not be taken down is
    said in `left_behind`, with the command that finishes it."""
    stack = experiment.stack
    hint = run.engine.destroy_hint(stack_file)
    try:
        run.say(f"{stack}: down")
        run.engine.destroy(stack_file, forget)
        wait_until_gone(run, experiment)
    except (EngineFailed, RoundFailed) as why:
        run.left_behind.append(f"{stack}: {why}; finish it with `{hint}`")
    except cluster_errors() as error:
        run.left_behind.append(f"{stack}: the cluster did not answer ({one_line(error)}); finish it with `{hint}`")
    except KeyboardInterrupt:
        run.left_behind.append(f"{stack}: interrupted while it was taken down; finish it with `{hint}`")
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
        if run.clock() - started > GONE_CEILING_S:
            raise RoundFailed(f"{len(pods)} pods still there {GONE_CEILING_S:g} s after `pulumi destroy`")
        run.sleep(POLL_S)


def cluster_errors() -> tuple[type[BaseException], ...]:
    """What the Kubernetes client raises for a cluster that refuses or does not answer."""
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    return (ApiException, HTTPError, OSError)


def one_line(error: BaseException) -> str:
    return " ".join(str(error).split())[:300] or type(error).__name__


def _reporter(experiment: Experiment) -> str:
    return Task(experiment.plan.deciding_role().name, 0).name
