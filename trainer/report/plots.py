"""A report's PNG charts: PS CPU and table rows per PS per run, examples/s, loss, and each PS's
CPU over time for runs sampled from a cluster (matplotlib, files only)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from components.insight.report_figures import from_cluster


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
