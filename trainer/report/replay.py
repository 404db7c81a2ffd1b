"""The table rows each shard serves in a report's run: the run's partitioning replayed in this
process, through the trainer's own input pipeline and id hashing (TensorFlow)."""

from __future__ import annotations

from ..settings import TrainerSettings

# Batches replayed through a run's partitioning to count the table rows each PS serves.
REPLAY_BATCHES = 50


def replayed_rows_per_shard(settings: TrainerSettings, ps: int, batches: int = REPLAY_BATCHES) -> list[int]:
    """Table rows the first `batches` batches fetch from each shard: the run's partitioning, replayed here."""
    import tensorflow as tf

    from ..data import training_dataset
    from ..ids import IdHasher

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
