"""Figures a report computes from its runs, local or sampled from a cluster: totals per PS,
imbalance; the seeds' question answered (`finding`), the model they trained, the pairs that
differ in one thing. The rows each shard serves are replayed by the report itself
(trainer/report/replay.py: the run's partitioning, through TensorFlow)."""

from __future__ import annotations

from typing import Any, Optional

from .ps_balance import imbalance as imbalance  # the reports' figure, `top`'s and diagnose's


def per_ps(values: list[int], ps_of_shard: list[Optional[int]], ps: int) -> list[int]:
    totals = [0] * ps
    for value, index in zip(values, ps_of_shard):
        totals[index if index is not None else 0] += value
    return totals


def from_cluster(run: dict[str, Any]) -> bool:
    return run.get("source") == "cluster"


def finding(runs: list[dict[str, Any]]) -> str:
    """The seeds' question answered in one sentence, from the first none/auto pair of one stack (or,
    for experiments sampled on a cluster, of two stacks with the same task counts)."""

    def counterpart(none: dict[str, Any]) -> Optional[dict[str, Any]]:
        autos = [r for r in runs if r["partition"] == "auto"]
        same_stack = [r for r in autos if r["stack"] == none["stack"]]
        same_shape = [r for r in autos if (r["ps"], r["workers"]) == (none["ps"], none["workers"])]
        return next(iter(same_stack or same_shape), None)

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
