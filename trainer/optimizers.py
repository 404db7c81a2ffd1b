"""Sparse-aware optimizers whose slot variables live beside their variable.

Embedding gradients arrive per shard as IndexedSlices and are applied on the
PS holding that shard (the fused ops run where the variable lives); only the
touched rows move. Slots are created right after their variable so that, shard
for shard, they land on the same PS (checked in `SlotPlacementError`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Optional, Sequence

import tensorflow as tf

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

EPSILON = 1e-7
ADAGRAD_INITIAL_ACCUMULATOR = 0.1
ADAM_BETA1 = 0.9
ADAM_BETA2 = 0.999


class SlotPlacementError(RuntimeError):
    pass


def shards_of(variable: tf.Variable) -> list[tf.Variable]:
    return list(getattr(variable, "variables", [variable]))


def check_colocated(variable: tf.Variable, slot: tf.Variable, name: str) -> None:
    for shard, slot_shard in zip(shards_of(variable), shards_of(slot)):
        if shard.device != slot_shard.device:
            raise SlotPlacementError(
                f"{name} slot of {shard.name} is on {slot_shard.device}, its shard on {shard.device}"
            )


def aggregate(gradient: tf.IndexedSlices) -> tf.IndexedSlices:
    """Sum the rows of repeated indices (ids looked up without de-duplication)."""
    unique, position = tf.unique(gradient.indices)
    values = tf.math.unsorted_segment_sum(gradient.values, position, tf.shape(unique)[0])
    return tf.IndexedSlices(values, unique, gradient.dense_shape)


class Optimizer(tf.Module):
    """Adagrad, SGD or lazy Adam over plain and sharded variables."""

    def __init__(self, kind: str, learning_rate: float, iterations: tf.Variable, name: str = "optimizer") -> None:
        """`iterations`: the training step variable (Adam's bias correction reads it).

        It advances once per scheduled call, so Adam's bias correction moves in
        steps of `stepsPerCall`; it only matters for the first few hundred steps.
        """
        super().__init__(name=name)
        self.kind = kind
        self.learning_rate = learning_rate
        self.iterations = iterations
        self._slots: dict[str, dict[str, tf.Variable]] = {}

    @property
    def slot_names(self) -> tuple[str, ...]:
        return {"sgd": (), "adagrad": ("accumulator",), "adam": ("m", "v")}[self.kind]

    def create_slots(
        self,
        key: str,
        variable: tf.Variable,
        colocate: Optional[Callable[[tf.Variable], AbstractContextManager[object]]] = None,
    ) -> None:
        """Make the slots of `variable` now, right after it, so they share its PS.

        `colocate`: a strategy's `colocate_vars_with`, used for unsharded variables.
        """
        slots = {}
        dtype = variable.dtype
        for slot_name in self.slot_names:
            initial = ADAGRAD_INITIAL_ACCUMULATOR if slot_name == "accumulator" else 0.0

            # A callable: the strategy builds each shard's slot on its PS.
            def init(
                partition_shape: Sequence[int] = tuple(variable.shape),
                partition_offset: Optional[Sequence[int]] = None,
                value: float = initial,
            ) -> tf.Tensor:
                del partition_offset
                return tf.fill(partition_shape, tf.constant(value, dtype))

            # Shape and dtype given: each shard's slot is made on its PS, not whole on the chief.
            slot_args = dict(shape=variable.shape, dtype=dtype, trainable=False, name=f"{key}_{slot_name}")
            if colocate is not None and not hasattr(variable, "variables"):
                with colocate(variable):
                    slot = tf.Variable(init, **slot_args)
            else:
                slot = tf.Variable(init, **slot_args)
            check_colocated(variable, slot, slot_name)
            slots[slot_name] = slot
        self._slots[key] = slots

    def slots(self, key: str) -> dict[str, object]:
        return self._slots[key]

    def apply_dense(self, key: str, variable: tf.Variable, gradient: tf.Tensor) -> None:
        lr = tf.cast(self.learning_rate, variable.dtype)
        slots = self._slots[key]
        if self.kind == "sgd":
            variable.assign_sub(lr * gradient)
        elif self.kind == "adagrad":
            tf.raw_ops.ResourceApplyAdagradV2(
                var=variable.handle,
                accum=slots["accumulator"].handle,
                lr=lr,
                epsilon=tf.cast(EPSILON, variable.dtype),
                grad=gradient,
            )
        else:
            m, v = slots["m"], slots["v"]
            m.assign(ADAM_BETA1 * m + (1 - ADAM_BETA1) * gradient)
            v.assign(ADAM_BETA2 * v + (1 - ADAM_BETA2) * tf.square(gradient))
            variable.assign_sub(self._adam_rate(variable.dtype) * m / (tf.sqrt(v) + EPSILON))

    def apply_sparse(self, key: str, shard_index: int, shard: tf.Variable, gradient: tf.IndexedSlices) -> None:
        lr = tf.cast(self.learning_rate, shard.dtype)
        slots = {name: shards_of(slot)[shard_index] for name, slot in self._slots[key].items()}
        if self.kind == "sgd":
            shard.scatter_sub(tf.IndexedSlices(lr * gradient.values, gradient.indices))
        elif self.kind == "adagrad":
            tf.raw_ops.ResourceSparseApplyAdagradV2(
                var=shard.handle,
                accum=slots["accumulator"].handle,
                lr=lr,
                epsilon=tf.cast(EPSILON, shard.dtype),
                grad=gradient.values,
                indices=gradient.indices,
            )
        else:
            # Lazy Adam: only the rows of this batch move, as sparse models need.
            m, v = slots["m"], slots["v"]
            rows = gradient.indices
            m_rows = ADAM_BETA1 * tf.gather(m, rows) + (1 - ADAM_BETA1) * gradient.values
            v_rows = ADAM_BETA2 * tf.gather(v, rows) + (1 - ADAM_BETA2) * tf.square(gradient.values)
            m.scatter_update(tf.IndexedSlices(m_rows, rows))
            v.scatter_update(tf.IndexedSlices(v_rows, rows))
            step = self._adam_rate(shard.dtype) * m_rows / (tf.sqrt(v_rows) + EPSILON)
            shard.scatter_sub(tf.IndexedSlices(step, rows))

    def _adam_rate(self, dtype: tf.DType) -> tf.Tensor:
        t = tf.cast(self.iterations + 1, dtype)
        return tf.cast(self.learning_rate, dtype) * tf.sqrt(1 - ADAM_BETA2**t) / (1 - ADAM_BETA1**t)
