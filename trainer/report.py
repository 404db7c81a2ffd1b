"""`python -m trainer.report`: run experiments with the local launcher and report them side by side.

    python -m trainer.report [--stacks scene1-case2 scene2-case2] [--partitions none auto] [--steps 200]
    python -m trainer.report --cluster <stack> [<stack> ...] [--seconds N] [--kubeconfig FILE]

Each stack is validated by the project's schema and scaled to this machine as
`trainer.local --stack` does, with at least 3 PS so that a hot PS can show.
Every (stack, partition) pair is one run, with a progress bar. The report goes
to `reports/<name>/`: `report.json` (every run's figures), `report.md` (a table
per run; for every two runs that differ in one thing, what that changed; the
finding first) and PNG plots: PS CPU seconds per PS for each run (the seeds'
monitoring screenshot, reproduced), table rows per PS, examples/s, loss.

With `--cluster`, nothing runs here: each stack's experiment, already applied
to a cluster, is sampled from its real pods while it runs (trainer/cluster_report.py),
and the same files are written, plus `ps_cpu_over_time.png` (each PS's CPU
cores as the pods used them).

Rows and bytes per PS are deterministic: bytes from the table's shards, rows
from replaying the run's first batches through its partitioning in this
process. Timings (CPU seconds, examples/s) vary from run to run.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from .cluster_report import DEFAULT_INTERVAL_S
from .local import MAX_LOCAL_WORKERS, LaunchError, LocalCluster, add_setting_flags, read_stack, scale_to_machine
from .local.cli import settings_given
from .settings import SettingsError, TrainerSettings

DEFAULT_STACKS = ("scene1-case2", "scene2-case2")
DEFAULT_PARTITIONS = ("none", "auto")
PARTITIONS = ("auto", "range", "none")
REPORT_MIN_PS = 3  # fewer and one hot PS cannot stand out
# Settings the report has flags of its own for; every other trainer setting is a flag that
# replaces the stacks' value in every run (`make report` gives the seed's sparse-heavy model).
OWN_FLAGS = ("steps", "partition", "checkpoint_every")
REPLAY_BATCHES = 50
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
                {**experiment.trainer, **(overrides or {}), "partition": partition, "steps": steps, "checkpointEvery": 0}
            )
            runs.append(RunSpec(experiment.stack, partition, max(scale.ps, REPORT_MIN_PS), scale.workers, settings))
    return runs


# -- one run ---------------------------------------------------------------------


class _ProgressOut:
    """The launcher's output, turned into a progress bar of steps."""

    def __init__(self, bar) -> None:
        self.bar = bar
        self.buffer = ""

    def write(self, text: str) -> int:
        self.buffer += text
        while "\n" in self.buffer:
            line, self.buffer = self.buffer.split("\n", 1)
            if line.startswith("step "):
                self.bar.n = int(line.split()[1])
                self.bar.refresh()
        return len(text)

    def flush(self) -> None:
        pass


def replayed_rows_per_shard(settings: TrainerSettings, ps: int, batches: int = REPLAY_BATCHES) -> list[int]:
    """Table rows the first `batches` batches fetch from each shard: the run's partitioning, replayed here."""
    import tensorflow as tf

    from .data import training_dataset
    from .ids import IdHasher

    shards = settings.shard_count(ps)
    hasher = IdHasher(settings.embedding_rows) if settings.partition == "auto" else None
    # The fixed-size partitioner's split: the first (rows % shards) shards hold one row more.
    base, extra = divmod(settings.embedding_rows, shards)
    bounds = tf.constant([sum(base + (1 if i < extra else 0) for i in range(k + 1)) for k in range(shards - 1)], tf.int64)
    rows = [0] * shards
    for ids, _ in training_dataset(settings).take(batches):
        table_ids = tf.reshape(hasher(ids) if hasher is not None else tf.cast(ids, tf.int64), [-1])
        if settings.dedup:
            table_ids, _ = tf.unique(table_ids)
        counts = tf.math.bincount(tf.cast(tf.searchsorted(bounds, table_ids, side="right"), tf.int32), minlength=shards)
        rows = [r + int(c) for r, c in zip(rows, counts.numpy())]
    return rows


def per_ps(values: list[int], ps_of_shard: list[Optional[int]], ps: int) -> list[int]:
    totals = [0] * ps
    for value, index in zip(values, ps_of_shard):
        totals[index if index is not None else 0] += value
    return totals


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
    }


# -- the report --------------------------------------------------------------------


def imbalance(values: list[float]) -> Optional[float]:
    mean = sum(values) / len(values) if values else 0
    return round(max(values) / mean, 3) if mean else None


def finding(runs: list[dict[str, Any]]) -> str:
    """The seeds' question answered in one sentence, from the first none/auto pair of one stack (or,
    for experiments sampled on a cluster, of two stacks with the same task counts)."""

    def counterpart(none: dict[str, Any]) -> Optional[dict[str, Any]]:
        autos = [r for r in runs if r["partition"] == "auto"]
        same_stack = [r for r in autos if r["stack"] == none["stack"]]
        same_shape = [r for r in autos if (r["ps"], r["workers"]) == (none["ps"], none["workers"])]
        return (same_stack or same_shape or [None])[0]

    for none in runs:
        auto = counterpart(none) if none["partition"] == "none" else None
        if auto is None:
            continue
        where = none["stack"] if none["stack"] == auto["stack"] else f"{none['stack']} and {auto['stack']}"
        if none["rows_per_ps"] and auto["rows_per_ps"]:
            share = max(none["rows_per_ps"]) / max(sum(none["rows_per_ps"]), 1)
            return (
                f"With partition none one of {none['ps']} PS serves {share:.0%} of the embedding rows "
                f"(PS CPU imbalance {none['ps_cpu_imbalance']}, rows imbalance {imbalance(none['rows_per_ps'])}); "
                f"with auto the rows are level (rows imbalance {imbalance(auto['rows_per_ps'])}, PS CPU imbalance "
                f"{auto['ps_cpu_imbalance']}): shard the embedding over every PS, as the seed found ({where})."
            )
        cpu = none["ps_cpu_seconds"]
        return (
            f"With partition none the busiest of {none['ps']} PS does {max(cpu) / max(sum(cpu), 1e-9):.0%} of the "
            f"PS CPU work (PS CPU imbalance {none['ps_cpu_imbalance']}); with auto the PS CPU imbalance is "
            f"{auto['ps_cpu_imbalance']}: shard the embedding over every PS, as the seed found ({where})."
        )
    return "No run pair compares partition none with auto, so the report states no finding."


def model_line(runs: list[dict[str, Any]]) -> str:
    """What every run trained: the model decides whether one PS can stand out."""
    if not runs:
        return ""
    settings = runs[0]["settings"]
    return (
        f"Model of every run: {settings['embeddingRows']:,} x {settings['embeddingDim']} table, "
        f"{settings['idsPerExample']} ids per example, batch {settings['batchSize']}, {settings['optimizer']}."
    )


def one_thing_apart(runs: list[dict[str, Any]]) -> list[tuple[dict, dict, str]]:
    pairs = []
    for i, a in enumerate(runs):
        for b in runs[i + 1 :]:
            differs = [key for key in ("stack", "partition") if a[key] != b[key]]
            if len(differs) == 1:
                pairs.append((a, b, differs[0]))
    return pairs


def _listed(values: Optional[list]) -> str:
    return ", ".join(str(v) for v in values) if values is not None else "not known (no summary from the chief: it had not finished)"


def from_cluster(run: dict[str, Any]) -> bool:
    return run.get("source") == "cluster"


def report_markdown(name: str, runs: list[dict[str, Any]]) -> str:
    lines = [f"# Report {name}", "", finding(runs), "", model_line(runs), ""]
    for run in runs:
        where = f"real pods, sampled {run['sampled_seconds']} s, ended {run['phase']}" if from_cluster(run) else "local processes"
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
    lines += ["", "![PS CPU seconds](ps_cpu.png)", "![rows per PS](rows_per_ps.png)",
              "![examples/s](examples_per_sec.png)", "![loss](loss.png)"]
    if any(from_cluster(run) for run in runs):
        lines.append("![PS CPU cores over time](ps_cpu_over_time.png)")
    lines.append("")
    return "\n".join(lines)


def plot(runs: list[dict[str, Any]], out_dir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    written = []

    def per_ps_bars(key: str, title: str, file_name: str) -> None:
        figure, axes = plt.subplots(1, len(runs), figsize=(3.2 * len(runs), 3), sharey=True, squeeze=False)
        for axis, run in zip(axes[0], runs):
            values = run[key]
            axis.set_title(run["name"], fontsize=9)
            if values is None:
                axis.text(0.5, 0.5, "not known", ha="center", transform=axis.transAxes)
                continue
            axis.bar([f"ps-{i}" for i in range(len(values))], values, color="tab:blue")
            axis.tick_params(labelsize=8)
        axes[0][0].set_ylabel(title)
        figure.tight_layout()
        figure.savefig(out_dir / file_name, dpi=80)
        plt.close(figure)
        written.append(out_dir / file_name)

    per_ps_bars("ps_cpu_seconds", "PS CPU seconds", "ps_cpu.png")
    per_ps_bars("rows_per_ps", "table rows per PS", "rows_per_ps.png")

    figure, axis = plt.subplots(figsize=(1.6 * len(runs) + 2, 3))
    axis.bar([r["name"] for r in runs], [r["examples_per_sec"] for r in runs], color="tab:green")
    axis.set_ylabel("examples/s")
    axis.tick_params(axis="x", labelsize=8, rotation=20)
    figure.tight_layout()
    figure.savefig(out_dir / "examples_per_sec.png", dpi=80)
    plt.close(figure)
    written.append(out_dir / "examples_per_sec.png")

    figure, axis = plt.subplots(figsize=(5, 3))
    for run in runs:
        steps, losses = zip(*run["loss_curve"]) if run["loss_curve"] else ((), ())
        axis.plot(steps, losses, label=run["name"])
    axis.set_xlabel("step")
    axis.set_ylabel("loss")
    axis.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(out_dir / "loss.png", dpi=80)
    plt.close(figure)
    written.append(out_dir / "loss.png")

    sampled = [run for run in runs if from_cluster(run)]
    if sampled:
        # The seed's monitoring screenshot: each PS's CPU over time, from the pods.
        figure, axes = plt.subplots(1, len(sampled), figsize=(4 * len(sampled), 3), sharey=True, squeeze=False)
        for axis, run in zip(axes[0], sampled):
            for ps, points in run["ps_cpu_timeline"].items():
                if points:
                    seconds, cores = zip(*points)
                    axis.plot(seconds, cores, label=ps)
            axis.set_title(run["name"], fontsize=9)
            axis.set_xlabel("seconds", fontsize=8)
            axis.legend(fontsize=7)
            axis.tick_params(labelsize=8)
        axes[0][0].set_ylabel("PS CPU cores")
        figure.tight_layout()
        figure.savefig(out_dir / "ps_cpu_over_time.png", dpi=80)
        plt.close(figure)
        written.append(out_dir / "ps_cpu_over_time.png")
    return written


def write_report(name: str, runs: list[dict[str, Any]], out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    report = {"name": name, "finding": finding(runs), "runs": runs}
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
    cluster.add_argument("--cluster", nargs="+", metavar="STACK",
                         help="sample these stacks' experiments from their pods (applied already), all at once")
    cluster.add_argument("--seconds", type=float, help="stop sampling after this long (default: when each ends)")
    cluster.add_argument("--interval", type=float, default=DEFAULT_INTERVAL_S,
                         help="seconds between samples (default: %(default)s)")
    cluster.add_argument("--kubeconfig", help="the cluster's kubeconfig (default: $KUBECONFIG, then ~/.kube/config)")
    parser.add_argument("--steps", type=int, default=200, help="steps per run (default: %(default)s)")
    parser.add_argument("--max-workers", type=int, default=MAX_LOCAL_WORKERS,
                        help="at most this many workers per run (default: %(default)s)")
    parser.add_argument("--name", help="report folder name (default: the stacks and partitions)")
    parser.add_argument("--out", type=Path, default=PROJECT_ROOT / "reports", help="where reports go")
    add_setting_flags(parser, skip=OWN_FLAGS)
    args = parser.parse_args(argv)
    overrides = settings_given(args, skip=OWN_FLAGS)
    if args.cluster:
        local_only = [flag for flag, given in (("--stacks", args.stacks), ("--partitions", args.partitions),
                                               ("trainer settings", overrides)) if given]
        if local_only:
            parser.error(f"--cluster samples experiments as their stacks ran them; {', '.join(local_only)} "
                         "apply to local runs only")
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
    print(f"report {name}: {len(specs)} runs of {args.steps} steps (settings given: {given}) -> {out_dir}",
          file=sys.stderr, flush=True)
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
                print(f"trainer.report: run {spec.name} failed ({str(error)[:200]}); trying it once more",
                      file=sys.stderr, flush=True)
    for path in write_report(name, runs, out_dir):
        print(path)
    print(finding(runs))
    return 0


def report_cluster(args: argparse.Namespace) -> int:
    """Sample the stacks' experiments on a cluster until they end; write their report."""
    from .cluster_report import cluster_run, progress_printer, sample_experiments

    if args.seconds is not None and args.seconds <= 0 or args.interval <= 0:
        print("trainer.report: --seconds and --interval must be above 0", file=sys.stderr)
        return 2
    try:
        experiments = [read_stack(stack) for stack in args.cluster]  # a bad stack fails before any sampling
    except LaunchError as error:
        print(f"trainer.report: {error}", file=sys.stderr)
        return 2
    name = args.name or "_".join(experiment.stack for experiment in experiments)
    out_dir = args.out / name
    until = f"for {args.seconds:g} s" if args.seconds else "until each ends"
    print(f"report {name}: sampling {', '.join(args.cluster)} every {args.interval:g} s {until} -> {out_dir}",
          file=sys.stderr, flush=True)
    try:
        samplings = sample_experiments(args.cluster, args.kubeconfig, args.seconds, args.interval, progress_printer())
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
