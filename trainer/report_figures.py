"""Figures a report computes from a run, local or sampled from a cluster: the table rows each
shard serves (the run's partitioning replayed), totals per PS, imbalance; and from its runs, the
seeds' question answered (`finding`), the model they trained, the pairs that differ in one thing."""

from __future__ import annotations

from typing import Any, Optional

from .ps_balance import imbalance as imbalance  # the reports' figure, `top`'s and diagnose's
from .settings import TrainerSettings

# Batches replayed through a run's partitioning to count the table rows each PS serves.
REPLAY_BATCHES = 50


def replayed_rows_per_shard(settings: TrainerSettings, ps: int, batches: int = REPLAY_BATCHES) -> list[int]:
    """Table rows the first `batches` batches fetch from each shard: the run's partitioning, replayed here."""
    import tensorflow as tf

    from .data import training_dataset
    from .ids import IdHasher

    shards = settings.shard_count(ps)
    hasher = IdHasher(settings.embedding_rows) if settings.partition == "auto" else None
    # The fixed-size partitioner's split: the first (rows % shards) shards hold one row more.
    base, extra = divmod(settings.embedding_rows, shards)
    bounds = tf.constant(
        [sum(base + (1 if i < extra else 0) for i in range(k + 1)) for k in range(shards - 1)], tf.int64
    )
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
