"""`trainer.report --cluster`: a report run drawn from an experiment's real pods.

Each stack's experiment is sampled with `python -m components top <stack>
--watch <interval> --json` (the program's environment holds the Kubernetes
client; this one holds TensorFlow), one object per refresh, until it ends or
`--seconds` have passed. What the samples give:

- PS CPU seconds: each PS's CPU cores integrated while the chief trained,
  from its first reported step to its last, as a local run measures them
  (the kubelet refreshes a pod's CPU rate about every 10 s); what a PS spends
  starting TensorFlow, and idling once training is over, is not its share of
  the training's work;
- the PS CPU over time, the seed's monitoring screenshot, drawn from the pods;
- steps, loss and examples/s from the chief's progress.

Once the chief has finished, its summary (`components status --json`) adds
what only it knows: the bytes each PS holds and which PS holds each table
shard, from which the rows each PS serves are replayed here as for a local run.

The finding (components/insight/report_findings.py): `python -m components diagnose <stack>
--json --seconds <window>`, started as soon as `top` shows the chief's first
step, so that its window lies in the training; an experiment that ends during
the window is judged from what diagnose sampled before it ended, as diagnose
judges it, and one that ends before diagnose's first sample has no finding,
with diagnose's reason.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, TextIO

from components.insight.report_figures import imbalance, per_ps
from components.insight.report_findings import cluster_diagnosis, no_finding

from ..local import LaunchError
from ..local.stacks import PROGRAM_PYTHON, PROJECT_ROOT, StackExperiment
from ..settings import TrainerSettings
from .replay import REPLAY_BATCHES

DEFAULT_INTERVAL_S = 2.0
# diagnose's own default window (three refreshes of metrics-server), and the least it takes
# (components/live/diagnose.py DEFAULT_SECONDS and MIN_SECONDS: the trainer cannot import them).
DEFAULT_DIAGNOSE_S = 45.0
DIAGNOSE_MIN_S = 30.0
# diagnose reads the chief's log and each server's cores after its window: time for the API server.
DIAGNOSE_GRACE_S = 120.0


@dataclass
class Sample:
    at: float  # seconds since sampling started
    view: dict[str, Any]  # one `top --json` object


@dataclass
class Sampling:
    """One stack's `top --watch --json`, read as it prints."""

    stack: str
    kubeconfig: Optional[str]
    interval_s: float
    samples: list[Sample] = field(default_factory=list)
    error: str = ""
    summary: Optional[dict[str, Any]] = None  # the chief's, read as soon as the experiment succeeded
    diagnose_s: float = DEFAULT_DIAGNOSE_S
    diagnosing: Optional[subprocess.Popen] = None  # `diagnose --json`, from the chief's first step
    diagnosis: Optional[dict[str, Any]] = None  # what it said (components/insight/report_findings.py)

    def start(self, started: float) -> None:
        args = [str(PROGRAM_PYTHON), "-m", "components", "top", self.stack, "--json", "--watch", str(self.interval_s)]
        if self.kubeconfig:
            args += ["--kubeconfig", self.kubeconfig]
        # Its own process group, so that stopping it stops exactly what it started.
        self.process = subprocess.Popen(
            args, cwd=PROJECT_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
        )
        self.reader = threading.Thread(target=self._read, args=(started,), daemon=True)
        self.reader.start()

    def _read(self, started: float) -> None:
        assert self.process.stdout is not None and self.process.stderr is not None  # both are pipes
        for line in self.process.stdout:
            if line.startswith("{"):
                self.seen(Sample(time.monotonic() - started, json.loads(line)))
        self.process.wait()
        if self.process.returncode == 2:
            self.error = self.process.stderr.read().strip()
        elif self.samples and self.samples[-1].view["phase"] == "Succeeded":
            # Now, before anyone deletes the experiment and its chief's log with it.
            self.summary = chief_summary(self.stack, self.kubeconfig)

    def seen(self, sample: Sample) -> None:
        """A sample of `top`; the first that shows the chief's step starts diagnose's window."""
        self.samples.append(sample)
        if self.diagnosing is None and sample.view["progress"]["step"] is not None:
            args = [str(PROGRAM_PYTHON), "-m", "components", "diagnose", self.stack, "--json"]
            args += ["--seconds", f"{self.diagnose_s:g}"] + (
                ["--kubeconfig", self.kubeconfig] if self.kubeconfig else []
            )
            self.diagnosing = subprocess.Popen(
                args,
                cwd=PROJECT_ROOT,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                start_new_session=True,
            )

    def finish_diagnosis(self) -> dict[str, Any]:
        """diagnose's finding, once its window is over (it ends by itself, or with the experiment)."""
        if self.diagnosing is None:
            return no_finding("the chief reported no step while the experiment was sampled: diagnose was not run")
        try:
            stdout, stderr = self.diagnosing.communicate(timeout=self.diagnose_s + DIAGNOSE_GRACE_S)
        except subprocess.TimeoutExpired:
            os.killpg(self.diagnosing.pid, signal.SIGTERM)
            stdout, stderr = self.diagnosing.communicate()
            stderr += f"\nno answer within {self.diagnose_s + DIAGNOSE_GRACE_S:g} s: stopped"
        self.diagnosis = cluster_diagnosis(self.diagnosing.returncode, stdout, stderr)
        return self.diagnosis

    @property
    def done(self) -> bool:
        return not self.reader.is_alive()

    def stop(self, diagnosis_too: bool = False) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
        self.reader.join(timeout=30)
        if diagnosis_too and self.diagnosing is not None and self.diagnosing.poll() is None:
            os.killpg(self.diagnosing.pid, signal.SIGTERM)


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
    if not PROGRAM_PYTHON.exists():
        raise LaunchError(f"reading a cluster needs the program's environment {PROGRAM_PYTHON}: run `make setup`")
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
            sampling.stop(diagnosis_too=True)  # interrupted: no finding is waited for
        raise
    for sampling in samplings:
        sampling.stop()
    for sampling in samplings:
        sampling.finish_diagnosis()
    failed = [f"{s.stack}: {s.error}" for s in samplings if s.error]
    if failed:
        raise LaunchError("; ".join(failed))
    return samplings


def ps_cpu_timeline(samples: list[Sample]) -> dict[str, list[list[float]]]:
    """PS task -> [[seconds, cores], ...] over the samples that had a figure for it; seconds from
    the experiment's first such sample (it may have been applied after sampling started)."""
    timeline: dict[str, list[list[float]]] = {}
    first: Optional[float] = None
    for sample in samples:
        for task in sample.view["tasks"]:
            if task["task"].startswith("ps-") and task["cpu_cores"] is not None:
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


def chief_summary(stack: str, kubeconfig: Optional[str]) -> Optional[dict[str, Any]]:
    """The chief's summary once it finished (from `components status --json`); None before."""
    args = [str(PROGRAM_PYTHON), "-m", "components", "status", stack, "--json"]
    if kubeconfig:
        args += ["--kubeconfig", kubeconfig]
    result = subprocess.run(args, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120)
    if result.returncode == 2 or not result.stdout.strip():
        return None
    return json.loads(result.stdout).get("summary")


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
                if t["task"].startswith("ps-")
            )
            print(
                f"{sampling.stack}: {view['phase']}, step {step if step is not None else '-'} of "
                f"{view['progress']['steps']}, PS CPU cores {ps}",
                file=out,
                flush=True,
            )

    return show
