"""Resource sizing derived from the model, instead of guessed (seed 002).

A PS holds its shard of the embedding table plus the optimizer's slots for the
same rows (slots live beside their shard). Its memory request is that, plus
headroom for the TensorFlow runtime, gRPC buffers and the dense tower.

The chief writes and reads every checkpoint itself (trainer/chief.py): the
whole table and its slots pass through its memory while it saves, and, on its
scratch space, it keeps CHECKPOINTS_KEPT of them plus the one being written.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from .trainer_contract import CHECKPOINTS_KEPT, TrainerSettings

if TYPE_CHECKING:  # annotations only: models.py checks a stack by the role table, which sizes by this module
    from .models import StackConfig

BYTES_PER_FLOAT = 4
MIB = 1024 * 1024
# Fixed headroom: TensorFlow runtime, gRPC buffers, dense variables. A PS holding no table
# peaks at 567 MiB resident (measured, TensorFlow 2.21).
RUNTIME_HEADROOM_BYTES = 768 * MIB
# Proportional headroom: the shard's rows being made (in chunks, trainer/model.py), gradient
# buffers and ids in flight scale with the shard. Measured peaks: 890 MiB for a 170 MB shard
# with its slots, 1366 MiB for a 512 MB one; sized 1023 MiB and 1536 MiB.
SHARD_HEADROOM_FRACTION = 0.5
# The chief's copy of a checkpoint being written or read: buffers beside it.
CHECKPOINT_HEADROOM_FRACTION = 0.25
# The chief: TensorFlow, the coordinator and its queues; never less than the former fixed 2Gi.
CHIEF_RUNTIME_BYTES = 1024 * MIB
CHIEF_MEMORY_FLOOR_BYTES = 2048 * MIB
# Scratch of every task: TensorFlow's temporary files, metrics, the task files.
SCRATCH_BASE_BYTES = 512 * MIB


def embedding_shard_bytes(settings: TrainerSettings, ps_count: int) -> int:
    """Bytes of the largest embedding shard on one PS, slots included."""
    shards = settings.shard_count(ps_count)
    rows_per_shard = math.ceil(settings.embedding_rows / shards)
    return rows_per_shard * settings.embedding_dim * BYTES_PER_FLOAT * (1 + settings.optimizer_slots)


def ps_memory_bytes(settings: TrainerSettings, ps_count: int) -> int:
    shard = embedding_shard_bytes(settings, ps_count)
    return shard + math.ceil(shard * SHARD_HEADROOM_FRACTION) + RUNTIME_HEADROOM_BYTES


def checkpoint_bytes(settings: TrainerSettings) -> int:
    """Bytes of one checkpoint: the whole table and its optimizer slots (the dense tower is small)."""
    return settings.embedding_rows * settings.embedding_dim * BYTES_PER_FLOAT * (1 + settings.optimizer_slots)


def chief_memory_bytes(settings: TrainerSettings) -> int:
    checkpoint = checkpoint_bytes(settings)
    return max(
        CHIEF_MEMORY_FLOOR_BYTES,
        CHIEF_RUNTIME_BYTES + checkpoint + math.ceil(checkpoint * CHECKPOINT_HEADROOM_FRACTION),
    )


def chief_scratch_bytes(settings: TrainerSettings, checkpoints_on_scratch: bool) -> int:
    """The chief's scratch space: the kept checkpoints and the one being written, when they are kept there."""
    kept = (CHECKPOINTS_KEPT + 1) * checkpoint_bytes(settings) if checkpoints_on_scratch else 0
    return SCRATCH_BASE_BYTES + kept


def mebibytes(size: int) -> str:
    """A size as a Kubernetes quantity, rounded up to whole MiB, in its canonical form (`2Gi`, not
    `2048Mi`): what the API server gives back once an object went through a webhook, so that
    applying the same experiment again changes nothing."""
    mib = math.ceil(size / MIB)
    return f"{mib // 1024}Gi" if mib % 1024 == 0 else f"{mib}Mi"


def ps_memory_request(config: StackConfig) -> str:
    """The PS memory request of a stack: `cluster.ps.memory`, else derived from the model ("0" for
    workers only: there is no PS to size)."""
    if config.cluster.ps_count == 0:
        return "0"
    explicit = config.cluster.ps.memory
    return explicit or ps_memory_quantity(config.trainer, config.cluster.ps_count)


def ps_memory_quantity(settings: TrainerSettings, ps_count: int) -> str:
    """The PS memory request as a Kubernetes quantity, rounded up to whole MiB."""
    return mebibytes(ps_memory_bytes(settings, ps_count))


def chief_memory_request(config: StackConfig) -> str:
    """The chief's memory request: `cluster.chief.memory`, else derived from a checkpoint's size."""
    return config.cluster.chief.memory or mebibytes(chief_memory_bytes(config.trainer))


def evaluator_memory_request(config: StackConfig) -> str:
    """The evaluator's memory request: `cluster.evaluator.memory`, else what the chief's would be
    (tfk8s's trainer's evaluator loads each whole checkpoint, as the chief writes it), else 2Gi."""
    evaluator = config.cluster.evaluator
    if evaluator is not None and evaluator.memory is not None:
        return evaluator.memory
    return mebibytes(chief_memory_bytes(config.trainer)) if config.program is None else "2Gi"
