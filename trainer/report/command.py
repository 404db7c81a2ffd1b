"""`python -m trainer.report`'s flags, its runs (local or sampled from a cluster) and the files it writes."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from components.insight.report_figures import finding, from_cluster, imbalance, model_line, one_thing_apart, per_ps
from components.insight.report_findings import findings, findings_markdown, findings_text
from components.live.diagnose import DEFAULT_SECONDS as DEFAULT_DIAGNOSE_S
from components.live.diagnose import MIN_SECONDS as DIAGNOSE_MIN_S

from ..local import MAX_LOCAL_WORKERS, LaunchError, LocalCluster, add_setting_flags, read_stack, scale_to_machine
from ..local.cli import settings_given
from ..log_lines import read_progress_line
from ..settings import SettingsError, TrainerSettings
from ..stack_export import StackExport
from .cluster import (
    DEFAULT_INTERVAL_S,
    cluster_run,
    progress_printer,
    sample_experiments,
)
from .local_diagnosis import local_diagnosis
from .plots import plot
from .replay import REPLAY_BATCHES, replayed_rows_per_shard

if TYPE_CHECKING:
    from tqdm import tqdm

DEFAULT_STACKS = ("scene1-case2", "scene2-case2")
DEFAULT_PARTITIONS = ("none", "auto")
PARTITIONS = ("auto", "range", "none")
REPORT_MIN_PS = 3  # fewer and one hot PS cannot stand out
# Settings the report has flags of its own for; every other trainer setting is a flag that
# replaces the stacks' value in every run (`make report` gives the seed's sparse-heavy model).
OWN_FLAGS = ("steps", "partition", "checkpoint_every")
# A sweep is long; one failed run (a TensorFlow gRPC hiccup on a loaded machine) is tried once more.
RUN_ATTEMPTS = 2
PROJECT_ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class RunSpec:
    stack: str
    partition: str
    ps: int
    workers: int
    settings: TrainerSettings
    export: Optional[StackExport] = None  # the stack, for the run's finding

    @property
    def name(self) -> str:
        return f"{self.stack}-{self.partition}"


def plan_runs(
    stacks: list[str],
    partitions: list[str],
    steps: int,
    max_workers: int = MAX_LOCAL_WORKERS,
    overrides: Optional[dict[str, Any]] = None,
) -> list[RunSpec]:
    """Every run of the sweep, validated before any starts (LaunchError or SettingsError if not).

    `overrides` (stack-file keys) replace the stacks' own trainer settings in every run.
    """
    bad = [p for p in partitions if p not in PARTITIONS]
    if bad:
        raise SettingsError("partition", f"must be one of {', '.join(PARTITIONS)} (got {', '.join(bad)})")
    runs = []
    for stack in stacks:
        experiment = read_stack(stack)
        scale = scale_to_machine(experiment.ps, experiment.workers, max_workers=max_workers)
        for partition in partitions:
            settings = TrainerSettings.from_config(
                {
                    **experiment.trainer,
                    **(overrides or {}),
                    "partition": partition,
                    "steps": steps,
                    "checkpointEvery": 0,
                }
            )
            ps = max(scale.ps, REPORT_MIN_PS)
            runs.append(RunSpec(experiment.stack, partition, ps, scale.workers, settings, experiment))
    return runs


# -- one run ---------------------------------------------------------------------


class _ProgressOut:
    """The launcher's output, turned into a progress bar of steps."""

    def __init__(self, bar: tqdm) -> None:
        self.bar = bar
        self.buffer = ""

    def write(self, text: str) -> int:
        self.buffer += text
        while "\n" in self.buffer:
            line, self.buffer = self.buffer.split("\n", 1)
            progress = read_progress_line(line)
            if progress is not None:
                self.bar.n = progress.step
                self.bar.refresh()
        return len(text)

    def flush(self) -> None:
        pass


def run_one(spec: RunSpec, workdir: Path) -> dict[str, Any]:
    from tqdm import tqdm

    shutil.rmtree(workdir, ignore_errors=True)  # an earlier report's metrics would mix in

    with tqdm(total=spec.settings.steps, desc=spec.name, unit="step", file=sys.stderr, leave=True) as bar:
        cluster = LocalCluster(spec.settings, spec.ps, spec.workers, workdir, progress_every=10)
        try:
            summary = cluster.run(out=_ProgressOut(bar))
        finally:
            cluster.stop()
        bar.n = summary["steps"]
        bar.refresh()
    replayed = replayed_rows_per_shard(spec.settings, spec.ps)
    cpu = summary["ps_cpu_seconds"]
    losses = [json.loads(line) for line in (workdir / "metrics.jsonl").read_text().splitlines() if line.strip()]
    return {
        "name": spec.name,
        "stack": spec.stack,
        "partition": spec.partition,
        "ps": spec.ps,
        "workers": spec.workers,
        "settings": spec.settings.to_config(),
        "steps": summary["steps"],
        "examples_per_sec": summary["examples_per_sec"],
        "loss_first": summary["loss_first"],
        "loss_last": summary["loss_last"],
        "ps_cpu_seconds": cpu,
        "ps_cpu_imbalance": summary["ps_imbalance"],
        "bytes_per_ps": summary["bytes_per_ps"],
        "rows_per_ps": per_ps(replayed, summary["ps_of_shard"], spec.ps),
        "rows_replayed_batches": REPLAY_BATCHES,
        "loss_curve": [[m["step"], m["loss"]] for m in losses],
        "diagnosis": local_diagnosis(spec.export, spec.partition, spec.ps, spec.workers, summary),
    }


# -- the report --------------------------------------------------------------------


def _listed(values: Optional[list]) -> str:
    return (
        ", ".join(str(v) for v in values)
        if values is not None
        else "not known (no summary from the chief: it had not finished)"
    )


def report_markdown(name: str, runs: list[dict[str, Any]]) -> str:
    lines = [f"# Report {name}", "", finding(runs), "", model_line(runs), "", *findings_markdown(runs)]
    for run in runs:
        where = (
            f"real pods, sampled {run['sampled_seconds']} s, ended {run['phase']}"
            if from_cluster(run)
            else "local processes"
        )
        cpu_how = " (the kubelet's CPU rate, integrated while the chief trained)" if from_cluster(run) else ""
        lines += [
            f"## {run['name']}: {run['ps']} PS, {run['workers']} workers, partition {run['partition']} ({where})",
            "",
            "| figure | value |",
            "| --- | --- |",
            f"| steps | {run['steps']} |",
            f"| examples/s | {run['examples_per_sec']} |",
            f"| loss first / last | {run['loss_first']} / {run['loss_last']} |",
            f"| PS CPU seconds{cpu_how} | {_listed(run['ps_cpu_seconds'])} |",
            f"| PS CPU imbalance | {run['ps_cpu_imbalance']} |",
            f"| bytes per PS | {_listed(run['bytes_per_ps'])} |",
            f"| rows per PS (first {run['rows_replayed_batches']} batches) | {_listed(run['rows_per_ps'])} |",
            f"| rows imbalance | {imbalance(run['rows_per_ps']) if run['rows_per_ps'] else 'not known'} |",
            "",
        ]
    pairs = one_thing_apart(runs)
    if pairs:
        lines += ["## What one difference did", ""]
    for a, b, key in pairs:
        lines.append(
            f"- {key} {a[key]} -> {b[key]} ({b['partition'] if key == 'stack' else b['stack']}): "
            f"rows imbalance {imbalance(a['rows_per_ps'])} -> {imbalance(b['rows_per_ps'])}, "
            f"PS CPU imbalance {a['ps_cpu_imbalance']} -> {b['ps_cpu_imbalance']}, "
            f"examples/s {a['examples_per_sec']} -> {b['examples_per_sec']}"
            + (" (placement is not reproduced on one machine: every task runs here)" if key == "stack" else "")
        )
    lines += [
        "",
        "![PS CPU seconds](ps_cpu.png)",
        "![rows per PS](rows_per_ps.png)",
        "![examples/s](examples_per_sec.png)",
        "![loss](loss.png)",
    ]
    if any(from_cluster(run) for run in runs):
        lines.append("![PS CPU cores over time](ps_cpu_over_time.png)")
    lines.append("")
    return "\n".join(lines)


def write_report(name: str, runs: list[dict[str, Any]], out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    report = {"name": name, "finding": finding(runs), "runs": runs, "findings": findings(runs)}
    (out_dir / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    (out_dir / "report.md").write_text(report_markdown(name, runs))
    return [out_dir / "report.json", out_dir / "report.md", *plot(runs, out_dir)]


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m trainer.report", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--stacks", nargs="+", help=f"stacks to run (default: {' '.join(DEFAULT_STACKS)})")
    parser.add_argument("--partitions", nargs="+", help=f"default: {' '.join(DEFAULT_PARTITIONS)}")
    cluster = parser.add_argument_group("experiments on a cluster (nothing runs here)")
    cluster.add_argument(
        "--cluster",
        nargs="+",
        metavar="STACK",
        help="sample these stacks' experiments from their pods (applied already), all at once",
    )
    cluster.add_argument("--seconds", type=float, help="stop sampling after this long (default: when each ends)")
    cluster.add_argument(
        "--interval", type=float, default=DEFAULT_INTERVAL_S, help="seconds between samples (default: %(default)s)"
    )
    cluster.add_argument(
        "--diagnose-seconds",
        type=float,
        default=DEFAULT_DIAGNOSE_S,
        help=f"diagnose's window, from the chief's first step (default: %(default)s; at least {DIAGNOSE_MIN_S:g})",
    )
    cluster.add_argument("--kubeconfig", help="the cluster's kubeconfig (default: $KUBECONFIG, then ~/.kube/config)")
    parser.add_argument("--steps", type=int, default=200, help="steps per run (default: %(default)s)")
    parser.add_argument(
        "--max-workers",
        type=int,
        default=MAX_LOCAL_WORKERS,
        help="at most this many workers per run (default: %(default)s)",
    )
    parser.add_argument("--name", help="report folder name (default: the stacks and partitions)")
    parser.add_argument("--out", type=Path, default=PROJECT_ROOT / "reports", help="where reports go")
    add_setting_flags(parser, skip=OWN_FLAGS)
    args = parser.parse_args(argv)
    overrides = settings_given(args, skip=OWN_FLAGS)
    if args.cluster:
        local_only = [
            flag
            for flag, given in (
                ("--stacks", args.stacks),
                ("--partitions", args.partitions),
                ("trainer settings", overrides),
            )
            if given
        ]
        if local_only:
            parser.error(
                f"--cluster samples experiments as their stacks ran them; {', '.join(local_only)} "
                "apply to local runs only"
            )
        return report_cluster(args)
    args.stacks = args.stacks or list(DEFAULT_STACKS)
    args.partitions = args.partitions or list(DEFAULT_PARTITIONS)

    try:
        specs = plan_runs(args.stacks, args.partitions, args.steps, args.max_workers, overrides)
    except (LaunchError, SettingsError) as error:
        print(f"trainer.report: {error}", file=sys.stderr)
        return 2
    name = args.name or "_".join([*args.stacks, *args.partitions])
    out_dir = args.out / name
    given = ", ".join(f"{key} {value}" for key, value in overrides.items()) or "none"
    print(
        f"report {name}: {len(specs)} runs of {args.steps} steps (settings given: {given}) -> {out_dir}",
        file=sys.stderr,
        flush=True,
    )
    runs = []
    for spec in specs:
        for attempt in range(1, RUN_ATTEMPTS + 1):
            try:
                runs.append(run_one(spec, out_dir / "runs" / spec.name))
                break
            except LaunchError as error:
                if attempt == RUN_ATTEMPTS:
                    print(f"trainer.report: run {spec.name} failed: {error}", file=sys.stderr)
                    return 1
                print(
                    f"trainer.report: run {spec.name} failed ({str(error)[:200]}); trying it once more",
                    file=sys.stderr,
                    flush=True,
                )
    for path in write_report(name, runs, out_dir):
        print(path)
    print(finding(runs))
    print(findings_text(runs))
    return 0


def report_cluster(args: argparse.Namespace) -> int:
    """Sample the stacks' experiments on a cluster until they end; write their report."""

    if args.seconds is not None and args.seconds <= 0 or args.interval <= 0:
        print("trainer.report: --seconds and --interval must be above 0", file=sys.stderr)
        return 2
    if args.diagnose_seconds < DIAGNOSE_MIN_S:
        print(f"trainer.report: --diagnose-seconds must be at least {DIAGNOSE_MIN_S:g}", file=sys.stderr)
        return 2
    try:
        experiments = [read_stack(stack) for stack in args.cluster]  # a bad stack fails before any sampling
    except LaunchError as error:
        print(f"trainer.report: {error}", file=sys.stderr)
        return 2
    name = args.name or "_".join(experiment.stack for experiment in experiments)
    out_dir = args.out / name
    until = f"for {args.seconds:g} s" if args.seconds else "until each ends"
    print(
        f"report {name}: sampling {', '.join(args.cluster)} every {args.interval:g} s {until} -> {out_dir}",
        file=sys.stderr,
        flush=True,
    )
    try:
        samplings = sample_experiments(
            args.cluster, args.kubeconfig, args.seconds, args.interval, progress_printer(), args.diagnose_seconds
        )
    except LaunchError as error:
        print(f"trainer.report: {error}", file=sys.stderr)
        return 2
    runs = [
        cluster_run(sampling, experiment, replayed_rows_per_shard)
        for sampling, experiment in zip(samplings, experiments)
    ]
    for path in write_report(name, runs, out_dir):
        print(path)
    print(finding(runs))
    print(findings_text(runs))
    return 0
