"""The sparse recommendation model: a sharded embedding table and a small dense tower.

Written as a tf.Module (Keras 3 cannot `fit` under ParameterServerStrategy).
Each example has `idsPerExample` ids; their embedding rows are averaged and fed
to the tower; the loss is logistic. The table is sharded over every PS unless
`partition: none`, ids are hashed first under `partition: auto`, and each
batch looks up each distinct id once under `dedup: true`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Optional, Sequence

import tensorflow as tf

from .ids import IdHasher, unit_uniform
from .optimizers import Optimizer, aggregate, shards_of
from .settings import TrainerSettings

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

TABLE = "embedding"


def table_partitioner(settings: TrainerSettings, ps_count: int) -> Callable[[tf.TensorShape, tf.DType], list[int]]:
    """The strategy's variable_partitioner: the table and its slots get the shards, nothing else."""
    shards = settings.shard_count(ps_count)

    def partition(shape: tf.TensorShape, dtype: tf.DType) -> list[int]:
        del dtype
        if len(shape) == 2 and shape[0] == settings.embedding_rows and shape[1] == settings.embedding_dim:
            return [shards, 1]
        return [1] * len(shape)

    return partition


# Rows are made this many cells at a time. Making a shard's rows at once holds about twelve
# times its bytes in temporaries (the int64 cells and the hash's uint64 and float64 steps):
# measured 1.5 GiB at its peak for an 85 MB shard, where the PS is sized for the shard.
INIT_CHUNK_CELLS = 1 << 21


def table_initializer(settings: TrainerSettings) -> Callable[..., tf.Tensor]:
    """Initial rows as a function of (seed, row): the same table whatever the sharding.

    Called per shard by ParameterServerStrategy with the shard's shape and
    offset, so each PS builds its own rows and no full table is ever built;
    in chunks, so the temporaries stay small beside the shard.
    """
    rows, dim = settings.embedding_rows, settings.embedding_dim
    scale = 1.0 / dim**0.5
    chunk_rows = max(1, INIT_CHUNK_CELLS // dim)

    def rows_from(first: int, count: int) -> tf.Tensor:
        cells = tf.range(first * dim, (first + count) * dim, dtype=tf.int64) + settings.seed * (rows * dim)
        values = (tf.cast(unit_uniform(cells), tf.float32) * 2.0 - 1.0) * scale
        return tf.reshape(values, [count, dim])

    def initial_value(
        partition_shape: Sequence[int] = (rows, dim), partition_offset: Sequence[int] = (0, 0)
    ) -> tf.Tensor:
        first, count = partition_offset[0], partition_shape[0]
        chunks = [
            rows_from(start, min(chunk_rows, first + count - start))
            for start in range(first, first + count, chunk_rows)
        ]
        return chunks[0] if len(chunks) == 1 else tf.concat(chunks, axis=0)

    return initial_value


class SparseModel(tf.Module):
    """Create inside `strategy.scope()` so variables land on the PS."""

    def __init__(
        self,
        settings: TrainerSettings,
        colocate: Optional[Callable[[tf.Variable], AbstractContextManager[object]]] = None,
    ) -> None:
        super().__init__(name="sparse_model")
        self.settings = settings
        self.hasher = IdHasher(settings.embedding_rows) if settings.partition == "auto" else None
        self.step = tf.Variable(0, dtype=tf.int64, trainable=False, name="step")
        self.optimizer = Optimizer(settings.optimizer, settings.learning_rate, self.step)

        rng = tf.random.Generator.from_seed(settings.seed)
        # With its shape and dtype given, the strategy calls the initializer per shard on the
        # shard's PS; without them it builds the whole table on the chief (3 GiB measured at its
        # peak for a 1M x 64 table) and ships the slices, each bounded by protobuf's 2 GB.
        self.table = tf.Variable(
            table_initializer(settings),
            shape=[settings.embedding_rows, settings.embedding_dim],
            dtype=tf.float32,
            name=TABLE,
        )
        self.optimizer.create_slots(TABLE, self.table, colocate)

        self.dense: list[tuple[tf.Variable, tf.Variable]] = []
        width = settings.embedding_dim
        for layer, units in enumerate((*settings.hidden_units, 1)):
            kernel = tf.Variable(rng.normal([width, units], stddev=(2.0 / width) ** 0.5), name=f"kernel_{layer}")
            self.optimizer.create_slots(f"kernel_{layer}", kernel, colocate)
            bias = tf.Variable(tf.zeros([units]), name=f"bias_{layer}")
            self.optimizer.create_slots(f"bias_{layer}", bias, colocate)
            self.dense.append((kernel, bias))
            width = units

    @property
    def table_shards(self) -> list[tf.Variable]:
        return shards_of(self.table)

    def shard_boundaries(self) -> tf.Tensor:
        """First row of each shard after the first (shards hold contiguous row ranges)."""
        sizes = [shard.shape[0] for shard in self.table_shards]
        bounds, total = [], 0
        for size in sizes[:-1]:
            total += size
            bounds.append(total)
        return tf.constant(bounds, dtype=tf.int64)

    def table_ids(self, ids: tf.Tensor) -> tf.Tensor:
        ids = tf.cast(ids, tf.int64)
        return self.hasher(ids) if self.hasher is not None else ids

    def pooled_embeddings(self, ids: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """Mean embedding per example, and the table rows this batch fetched."""
        rows = self.table_ids(ids)
        flat = tf.reshape(rows, [-1])
        if self.settings.dedup:
            fetched, position = tf.unique(flat)
            vectors = tf.gather(tf.nn.embedding_lookup(self.table, fetched), position)
        else:
            fetched = flat
            vectors = tf.nn.embedding_lookup(self.table, flat)
        vectors = tf.reshape(vectors, [-1, self.settings.ids_per_example, self.settings.embedding_dim])
        return tf.reduce_mean(vectors, axis=1), fetched

    def logits(self, pooled: tf.Tensor) -> tf.Tensor:
        hidden = pooled
        for layer, (kernel, bias) in enumerate(self.dense):
            hidden = tf.matmul(hidden, kernel) + bias
            if layer < len(self.dense) - 1:
                hidden = tf.nn.relu(hidden)
        return tf.squeeze(hidden, axis=1)

    def __call__(self, ids: tf.Tensor) -> tf.Tensor:
        pooled, _ = self.pooled_embeddings(ids)
        return self.logits(pooled)

    def train_step(self, ids: tf.Tensor, labels: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """One step; returns the loss and the rows fetched per shard.

        The caller counts steps in `self.step` (once per scheduled call: one
        PS round trip instead of one per step).
        """
        dense_vars = [v for pair in self.dense for v in pair]
        with tf.GradientTape() as tape:
            pooled, fetched = self.pooled_embeddings(ids)
            loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=self.logits(pooled)))
        gradients = tape.gradient(loss, self.table_shards + dense_vars)
        for index, (shard, gradient) in enumerate(zip(self.table_shards, gradients)):
            if gradient is None:
                continue
            if not isinstance(gradient, tf.IndexedSlices):
                gradient = tf.IndexedSlices(gradient, tf.range(tf.shape(gradient)[0]), None)
            elif not self.settings.dedup:
                gradient = aggregate(gradient)
            self.optimizer.apply_sparse(TABLE, index, shard, gradient)
        dense_gradients = gradients[len(self.table_shards) :]
        for layer, (kernel, bias) in enumerate(self.dense):
            self.optimizer.apply_dense(f"kernel_{layer}", kernel, dense_gradients[2 * layer])
            self.optimizer.apply_dense(f"bias_{layer}", bias, dense_gradients[2 * layer + 1])
        return loss, self.rows_per_shard(fetched)

    def rows_per_shard(self, fetched: tf.Tensor) -> tf.Tensor:
        """How many of the fetched rows each shard served (its PS's lookup load)."""
        shards = len(self.table_shards)
        if shards == 1:
            return tf.reshape(tf.size(fetched, out_type=tf.int64), [1])
        shard_of_row = tf.searchsorted(self.shard_boundaries(), fetched, side="right")
        ones = tf.ones_like(fetched, dtype=tf.int64)
        return tf.math.unsorted_segment_sum(ones, tf.cast(shard_of_row, tf.int32), shards)

    def bytes_per_device(self) -> dict[str, int]:
        """Bytes of table, slots and dense variables on each device (PS task)."""
        totals: dict[str, int] = {}
        for variable in self.trainable_and_slot_variables():
            for shard in shards_of(variable):
                size = shard.shape.num_elements() * shard.dtype.size
                totals[shard.device] = totals.get(shard.device, 0) + size
        return totals

    def trainable_and_slot_variables(self) -> list:
        out = [self.table]
        out += [slot for slot in self.optimizer.slots(TABLE).values()]
        for layer, (kernel, bias) in enumerate(self.dense):
            out += [kernel, bias]
            out += list(self.optimizer.slots(f"kernel_{layer}").values())
            out += list(self.optimizer.slots(f"bias_{layer}").values())
        return out
