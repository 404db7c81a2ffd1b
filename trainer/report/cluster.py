"""`trainer.report --cluster`: a report run drawn from an experiment's real pods.

Each stack's experiment is sampled as `python -m components top <stack> --watch <interval>
--json` samples it, by the same functions (components/live/top.py), one view per refresh, until it
ends or `--seconds` have passed. What the samples give:

- PS CPU seconds: each PS's CPU cores integrated while the chief trained,
  from its first reported step to its last, as a local run measures them
  (the kubelet refreshes a pod's CPU rate about every 10 s); what a PS spends
  starting TensorFlow, and idling once training is over, is not its share of
  the training's work;
- the PS CPU over time, the seed's monitoring screenshot, drawn from the pods;
- steps, loss and examples/s from the chief's progress.

Once the chief has finished, its summary (as `components status --json` reads it) adds
what only it knows: the bytes each PS holds and which PS holds each table
shard, from which the rows each PS serves are replayed here as for a local run.

The finding: `diagnose`'s (components/live/diagnosis.py, the object `diagnose --json` prints),
over a window started as soon as a sample shows the chief's first step, so that it lies in the
training; an experiment that ends during the window is judged from what was sampled before it
ended, as diagnose judges it, and one that ends before the window's first sample has no finding,
with diagnose's reason.
"""

from __future__ import annotations

import io
import json
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Optional, TextIO

from components.insight.report_figures import imbalance, per_ps
from components.insight.report_findings import no_finding
from components.live.diagnose import DEFAULT_SECONDS as DEFAULT_DIAGNOSE_S
from components.spec.task_roles import parse_task_name, role_of

from ..local import LaunchError
from ..local.stacks import StackExperiment
from ..settings import TrainerSettings
from .replay import REPLAY_BATCHES

if TYPE_CHECKING:
    from components.plan.experiment import Experiment

DEFAULT_INTERVAL_S = 2.0
# diagnose reads the chief's log and each server's cores after its window: time for the API server.
DIAGNOSE_GRACE_S = 120.0


# -- what a sampling asks of the cluster: components/'s own functions ------------------


def load_stack(stack: str) -> Experiment:
    """The stack's experiment, derived as `top`, `status` and `diagnose` derive it; StackConfigError
    where it cannot be. Loaded once per sampling: its reader and its diagnose window share it, and
    only read it."""
    from components.objects.loading import load_experiment

    return load_experiment(stack)


def read_views(
    experiment: Experiment,
    kubeconfig: Optional[str],
    interval_s: float,
    seen: Callable[[dict[str, Any]], None],
    stop: threading.Event,
) -> Optional[str]:
    """Each view `top --watch --json` would print, given to `seen`, until the experiment ends or `stop`
    is set; the one line `top` would say where the cluster cannot be read, else None."""
    from components.live.cluster_access import with_cluster
    from components.live.top import read_top

    def watch(api: Any) -> int:
        while True:
            view = read_top(api, experiment)
            seen(json.loads(json.dumps(view.to_json())))  # the object as `top --json` prints it
            if view.ended or stop.wait(interval_s):
                return 0

    said = io.StringIO()
    unreadable = with_cluster(experiment, kubeconfig, None, watch, err=said) == 2
    return (said.getvalue().strip() or "the cluster cannot be read") if unreadable else None


def read_summary(experiment: Experiment, kubeconfig: Optional[str]) -> Optional[dict[str, Any]]:
    """The chief's summary once it finished (`status --json`'s `summary`); None before, or unread."""
    from components.live.cluster_access import with_cluster
    from components.live.status import read_status

    read = []

    def summary(api: Any) -> int:
        read.append(read_status(api, experiment).summary)
        return 0

    with_cluster(experiment, kubeconfig, None, summary, err=io.StringIO())
    return read[0] if read else None


def read_diagnosis(stack: str, experiment: Experiment, kubeconfig: Optional[str], seconds: float) -> dict[str, Any]:
    """What `diagnose <stack> --json --seconds <seconds>` says: its object, else why there is no finding."""
    from components.live.cluster_access import with_cluster
    from components.live.diagnose_view import diagnose_json
    from components.live.diagnosis import diagnose_running, nothing_measured
    from components.spec.stack_files import stack_path
    from components.spec.user_files import UnreadableFile, read_user_text

    try:
        # The file diagnose writes its next stack from, the finding's changes made.
        text = read_user_text(stack_path(stack))
    except UnreadableFile as unreadable:
        return no_finding(f"diagnose: stack '{experiment.stack}': {unreadable}")
    said: dict[str, Any] = {}

    def diagnose(api: Any) -> int:
        found = diagnose_running(api, experiment, text, seconds, f"{experiment.stack}-next")
        if found.finding is None:
            said.update(no_finding(f"diagnose: stack '{experiment.stack}': {nothing_measured(found.sampled)}"))
        else:
            said.update(diagnose_json(found.sampled, found.finding, found.next_stack))
        return 0

    why = io.StringIO()
    with_cluster(experiment, kubeconfig, None, diagnose, err=why)
    return said or no_finding(f"diagnose: {why.getvalue().strip() or 'it said nothing'}")


# -- one stack's sampling ----------------------------------------------------------------


def say(line: str) -> None:
    """A line of progress, on standard error with the rest of the report's."""
    print(line, file=sys.stderr, flush=True)


@dataclass
class Sample:
    at: float  # seconds since sampling started
    view: dict[str, Any]  # one `top --json` object


@dataclass
class Sampling:
    """One stack's experiment, sampled as `top --watch --json` samples it, in a thread of its own."""

    stack: str
    kubeconfig: Optional[str]
    interval_s: float
    samples: list[Sample] = field(default_factory=list)
    error: str = ""
    summary: Optional[dict[str, Any]] = None  # the chief's, read as soon as the experiment succeeded
    diagnose_s: float = DEFAULT_DIAGNOSE_S
    diagnosing: Optional[threading.Thread] = None  # diagnose's window, from the chief's first step
    diagnosis: Optional[dict[str, Any]] = None  # what it said (components/insight/report_findings.py)
    stopping: threading.Event = field(default_factory=threading.Event)
    experiment: Optional[Experiment] = None  # loaded by the reader, before the first sample

    def start(self, started: float) -> None:
        self.reader = threading.Thread(target=self._read, args=(started,), daemon=True)
        self.reader.start()

    def _read(self, started: float) -> None:
        from components.spec.models import StackConfigError

        try:
            self.experiment = experiment = load_stack(self.stack)
        except StackConfigError as unloadable:
            self.error = str(unloadable)
            return
        error = read_views(
            experiment,
            self.kubeconfig,
            self.interval_s,
            lambda view: self.seen(Sample(time.monotonic() - started, view)),
            self.stopping,
        )
        if error:
            self.error = error
        elif self.samples and self.samples[-1].view["phase"] == "Succeeded":
            # Now, before anyone deletes the experiment and its chief's log with it.
            self.summary = read_summary(experiment, self.kubeconfig)

    def seen(self, sample: Sample) -> None:
        """A sample of `top`; the first that shows the chief's step starts diagnose's window."""
        self.samples.append(sample)
        if self.diagnosing is None and sample.view["progress"]["step"] is not None:
            self.diagnosing = threading.Thread(target=self._diagnose, daemon=True)
            self.diagnosing.start()

    def _diagnose(self) -> None:
        say(f"{self.stack}: the chief's first step: diagnose samples {self.diagnose_s:g} s")
        assert self.experiment is not None, "diagnose starts from a sample, read once the stack was loaded"
        self.diagnosis = read_diagnosis(self.stack, self.experiment, self.kubeconfig, self.diagnose_s)
        said = self.diagnosis.get("bottleneck") or f"no finding ({self.diagnosis.get('reason')})"
        say(f"{self.stack}: diagnosed: {said}")

    def finish_diagnosis(self) -> dict[str, Any]:
        """diagnose's finding, once its window is over (it ends by itself, or with the experiment)."""
        if self.diagnosing is None:
            return no_finding("the chief reported no step while the experiment was sampled: diagnose was not run")
        self.diagnosing.join(timeout=self.diagnose_s + DIAGNOSE_GRACE_S)
        if self.diagnosis is None:
            self.diagnosis = no_finding(f"diagnose: no answer within {self.diagnose_s + DIAGNOSE_GRACE_S:g} s")
        return self.diagnosis

    @property
    def done(self) -> bool:
        return not self.reader.is_alive()

    def stop(self) -> None:
        self.stopping.set()
        self.reader.join(timeout=30)


def sample_experiments(
    stacks: list[str],
    kubeconfig: Optional[str],
    seconds: Optional[float],
    interval_s: float,
    progress: Optional[Callable[[list[Sampling]], None]] = None,
    diagnose_s: float = DEFAULT_DIAGNOSE_S,
) -> list[Sampling]:
    """Sample every stack's experiment at once until each ends, or until `seconds` have passed; then
    each diagnose to the end of its window."""
    started = time.monotonic()
    samplings = [Sampling(stack, kubeconfig, interval_s, diagnose_s=diagnose_s) for stack in stacks]
    for sampling in samplings:
        sampling.start(started)
    try:
        while not all(s.done for s in samplings):
            if seconds is not None and time.monotonic() - started >= seconds:
                break
            if progress is not None:
                progress(samplings)
            time.sleep(0.5)
    except BaseException:
        for sampling in samplings:
            sampling.stopping.set()  # interrupted: no finding is waited for (its thread ends with the process)
        raise
    for sampling in samplings:
        sampling.stop()
    for sampling in samplings:
        sampling.finish_diagnosis()
    failed = [f"{s.stack}: {s.error}" for s in samplings if s.error]
    if failed:
        raise LaunchError("; ".join(failed))
    return samplings


def serves_variables(task: str) -> bool:
    """A PS: the role whose CPU the analysis counts as serving the model's variables, as `top` counts it."""
    return role_of(parse_task_name(task)[0]).load == "variables"


def ps_cpu_timeline(samples: list[Sample]) -> dict[str, list[list[float]]]:
    """PS task -> [[seconds, cores], ...] over the samples that had a figure for it; seconds from
    the experiment's first such sample (it may have been applied after sampling started)."""
    timeline: dict[str, list[list[float]]] = {}
    first: Optional[float] = None
    for sample in samples:
        for task in sample.view["tasks"]:
            if serves_variables(task["task"]) and task["cpu_cores"] is not None:
                first = sample.at if first is None else first
                timeline.setdefault(task["task"], []).append([round(sample.at - first, 1), task["cpu_cores"]])
    return timeline


def training_window(samples: list[Sample]) -> Optional[tuple[float, float]]:
    """(from, to) in sampling seconds: the first sample with a step from the chief, and the first that
    shows its last step; None before the chief reported one."""
    stepped = [(s.at, s.view["progress"]["step"]) for s in samples if s.view["progress"]["step"] is not None]
    if not stepped:
        return None
    last = max(step for _, step in stepped)
    return stepped[0][0], next(at for at, step in stepped if step == last)


def ps_cpu_while_training(samples: list[Sample], ps_names: list[str]) -> list[float]:
    """Each PS's CPU seconds within the training window (0 for a PS with fewer than two figures in it)."""
    window = training_window(samples)
    points: dict[str, list[list[float]]] = {name: [] for name in ps_names}
    for sample in samples:
        if window is None or not window[0] <= sample.at <= window[1]:
            continue
        for task in sample.view["tasks"]:
            if task["task"] in points and task["cpu_cores"] is not None:
                points[task["task"]].append([sample.at, task["cpu_cores"]])
    return [cpu_seconds(points[name]) for name in ps_names]


def cpu_seconds(points: list[list[float]]) -> float:
    """Cores integrated over time (trapezoids between samples)."""
    return round(sum((t1 - t0) * (c0 + c1) / 2 for (t0, c0), (t1, c1) in zip(points, points[1:])), 2)


def cluster_run(
    sampling: Sampling, experiment: StackExperiment, replay: Callable[[TrainerSettings, int], list[int]]
) -> dict[str, Any]:
    """A report run (the keys of a local run) from one experiment's samples and its chief's summary.

    `replay(settings, ps)`: the table rows each shard serves in the run's first batches."""

    settings = TrainerSettings.from_config(experiment.trainer)
    summary = sampling.summary
    timeline = ps_cpu_timeline(sampling.samples)
    ps_names = [f"ps-{i}" for i in range(experiment.ps)]
    cpu = ps_cpu_while_training(sampling.samples, ps_names)
    progress = [s.view["progress"] for s in sampling.samples if s.view["progress"]["step"] is not None]
    losses = {p["step"]: p["loss"] for p in progress}
    last = sampling.samples[-1].view if sampling.samples else {"phase": None}
    ps_of_shard = summary.get("ps_of_shard") if summary else None
    return {
        "name": experiment.stack,
        "stack": experiment.stack,
        "partition": settings.partition,
        "ps": experiment.ps,
        "workers": experiment.workers,
        "settings": settings.to_config(),
        "source": "cluster",
        "phase": last["phase"],
        "steps": summary["steps"] if summary else (progress[-1]["step"] if progress else 0),
        "examples_per_sec": summary["examples_per_sec"]
        if summary
        else (progress[-1]["examples_per_sec"] if progress else None),
        "loss_first": progress[0]["loss"] if progress else None,
        "loss_last": summary["loss_last"] if summary else (progress[-1]["loss"] if progress else None),
        "ps_cpu_seconds": cpu,
        "ps_cpu_imbalance": imbalance(cpu),
        "ps_cpu_timeline": {name: timeline.get(name, []) for name in ps_names},
        "sampled_seconds": max((points[-1][0] for points in timeline.values() if points), default=0.0),
        "bytes_per_ps": summary["bytes_per_ps"] if summary else None,
        "rows_per_ps": per_ps(replay(settings, experiment.ps), ps_of_shard, experiment.ps) if ps_of_shard else None,
        "rows_replayed_batches": REPLAY_BATCHES,
        "loss_curve": [[step, loss] for step, loss in sorted(losses.items())],
        "diagnosis": sampling.diagnosis or no_finding("diagnose was not run"),
    }


def progress_printer(out: TextIO = sys.stderr) -> Callable[[list[Sampling]], None]:
    """A line per stack every few seconds: phase, step, PS CPU cores."""
    last_printed = [0.0]

    def show(samplings: list[Sampling]) -> None:
        if time.monotonic() - last_printed[0] < 10:
            return
        last_printed[0] = time.monotonic()
        for sampling in samplings:
            if not sampling.samples:
                print(f"{sampling.stack}: waiting for the first sample", file=out, flush=True)
                continue
            view = sampling.samples[-1].view
            step = view["progress"]["step"]
            ps = " ".join(
                f"{t['cpu_cores']:.2f}" if t["cpu_cores"] is not None else "-"
                for t in view["tasks"]
                if serves_variables(t["task"])
            )
            print(
                f"{sampling.stack}: {view['phase']}, step {step if step is not None else '-'} of "
                f"{view['progress']['steps']}, PS CPU cores {ps}",
                file=out,
                flush=True,
            )

    return show
