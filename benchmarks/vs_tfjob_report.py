"""bench-vs-tfjob's figures: each program's medians of the runs, side by side with the ratio tfk8s /
TFJob (below 1: tfk8s is faster), printed as tables and gathered for the closing JSON object."""

from __future__ import annotations

import statistics
from typing import Any, Callable, Optional

from vs_tfjob_sides import ENGINE_MARKS

from tools.localcluster.task_loss_timing import DISRUPTIONS

Run = dict[str, Any] | str  # a run's figures, or why it failed
Outcome = float | str  # seconds until training went on, or why it did not

TIMED = (
    ("running_s", "apply to every task Running (s)"),
    ("workload_s", "  client: apply to TFJob/JobSet seen"),
    ("cluster_start_s", "  cluster: that to every task Running"),
    ("first_step_s", "apply to the first step (s)"),
    ("succeeded_s", "apply to Succeeded (s)"),
    ("cleanup_s", "Succeeded to no PS/worker running (s)"),
    ("controller_cpu_s", "controllers' CPU during a run (s)"),
    ("controller_peak_mib", "controllers' peak memory (MiB)"),
)
# The start's stages: the engine's from its output, the rest as first seen by polling
# (benchmarks/vs_tfjob_measure.py StartWatch).
STAGES = (
    *((stage, stage) for stage, _ in ENGINE_MARKS),
    ("workload seen", "the TFJob / the JobSet exists"),
    ("JobSet's Jobs seen", "JobSet's Jobs exist"),
    ("pods created", "every pod exists"),
    ("pods scheduled", "every pod scheduled"),
    ("pods running", "every pod Running"),
    ("client returned", "kubectl / pulumi up returned"),
)
# The sides of a run to Succeeded, and the TFJob sides of a lost task (the manifest's restartPolicy
# and ExitCode) with tfk8s's.
RUN_SIDES = ("tfjob", "tfk8s", "tfk8s_apply")
LOSS_SIDES = ("tfjob", "tfjob_exitcode", "tfk8s")


def _median(values: list[float]) -> Optional[float]:
    return statistics.median(values) if values else None


def _ratio(tfk8s: Optional[float], tfjob: Optional[float]) -> Optional[float]:
    return tfk8s / tfjob if tfk8s is not None and tfjob else None


def _shown(value: Optional[float], width: int = 10, digits: int = 1) -> str:
    return f"{'—':>{width}}" if value is None else f"{value:>{width}.{digits}f}"


def outcome_summary(outcomes: list[Outcome]) -> dict[str, Any]:
    """The median of the runs in which training went on, and how many did not, with the first reason."""
    failures = [outcome for outcome in outcomes if isinstance(outcome, str)]
    return {
        "median_s": _median([o for o in outcomes if not isinstance(o, str)]),
        "not_back": len(failures),
        "of": len(outcomes),
        "why": failures[0] if failures else None,
    }


def program_figures(runs: dict[str, list[Run]], losses: dict[str, dict[str, list[Outcome]]]) -> dict[str, Any]:
    """One program's medians, ratios, start stages, lost-task outcomes and placements, as the JSON holds them."""
    good = {side: [run for run in runs[side] if isinstance(run, dict)] for side in RUN_SIDES}
    medians = {}
    for key, _ in TIMED:
        values = {side: _median([run[key] for run in good[side]]) for side in RUN_SIDES}
        medians[key] = {
            **values,
            "ratio": _ratio(values["tfk8s"], values["tfjob"]),
            "ratio_apply": _ratio(values["tfk8s_apply"], values["tfjob"]),
        }
    stages = {
        side: {
            stage: _median([run["stages_s"][stage] for run in good[side] if stage in run["stages_s"]])
            for stage, _ in STAGES
        }
        for side in RUN_SIDES
    }
    lost: dict[str, dict[str, Any]] = {}
    for kind, by_side in losses.items():
        summaries = {side: outcome_summary(outcomes) for side, outcomes in by_side.items()}
        recovered = [
            s["median_s"]
            for side, s in summaries.items()
            if side != "tfk8s" and s["not_back"] == 0 and s["median_s"] is not None
        ]
        tfk8s = summaries["tfk8s"]["median_s"] if summaries["tfk8s"]["not_back"] == 0 else None
        lost[kind] = {**summaries, "ratio": _ratio(tfk8s, min(recovered)) if recovered else None}
    return {
        "medians": medians,
        "failed_runs": {side: [run for run in runs[side] if isinstance(run, str)] for side in RUN_SIDES},
        "stages_s": stages,
        "lost_task": lost,
        "placement": {side: [run["placement"] for run in good[side]] for side in RUN_SIDES},
    }


def print_program(name: str, runs: int, figures: dict[str, Any], say: Callable[[str], None]) -> None:
    title = f"{name}: medians of {runs} run(s)"
    say(f"\n{title:40}{'TFJob':>10}{'tfk8s':>10}{'ratio':>8}{'applied':>10}{'ratio':>8}")
    for key, label in TIMED:
        row = figures["medians"][key]
        say(
            f"{label:40}{_shown(row['tfjob'])}{_shown(row['tfk8s'])}{_shown(row['ratio'], 8, 2)}"
            f"{_shown(row['tfk8s_apply'])}{_shown(row['ratio_apply'], 8, 2)}"
        )
    say("  (tfk8s: brought up by the Pulumi engine, as make up; applied: by tfk8s's applier, as make apply)")
    for side, failed in figures["failed_runs"].items():
        for why in failed:
            say(f"  a {side} run did not succeed: {why}")
    say("the start, stage by stage (s after the apply; the engine's as it printed them, the rest polled):")
    for stage, label in STAGES:
        say(f"  {label:38}" + "".join(_shown(figures["stages_s"][side][stage]) for side in RUN_SIDES))
    if not any(row[side]["of"] for row in figures["lost_task"].values() for side in LOSS_SIDES):
        say("a task lost while training: not measured (--without-lost-tasks)")
        figures = {**figures, "lost_task": {}}
    else:
        say(f"a task lost while training, seconds until training goes on{'':4}" + "".join(f"{s:>16}" for s in LOSS_SIDES))
    reasons = []
    for kind, row in figures["lost_task"].items():
        cells = []
        for side in LOSS_SIDES:
            summary = row[side]
            text = "" if summary["median_s"] is None else f"{summary['median_s']:.1f}"
            if summary["not_back"]:
                text += f"{' ' if text else ''}x{summary['not_back']}/{summary['of']}"
                reasons.append(f"  {kind}, {side}: {summary['why']}")
            cells.append(f"{text:>16}")
        ratio = "" if row["ratio"] is None else f"  tfk8s / fastest TFJob {row['ratio']:.2f}"
        say(f"  {DISRUPTIONS[kind].label:60}{''.join(cells)}{ratio}")
    if reasons:
        say("  (xN/M: in N of M runs training did not go on)")
        for line in dict.fromkeys(reasons):
            say(line)
    for side, seen in figures["placement"].items():
        say(f"{side} placed the tasks: {'; '.join(str(p) for p in seen)}")
