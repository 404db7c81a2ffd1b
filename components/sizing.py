"""Resource sizing derived from the model, instead of guessed (seed 002).

A PS holds its shard of the embedding table plus the optimizer's slots for the
same rows (slots live beside their shard). Its memory request is that, plus
headroom for the TensorFlow runtime, gRPC buffers and the dense tower.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from trainer.settings import TrainerSettings

if TYPE_CHECKING:
    from .config import StackConfig

BYTES_PER_FLOAT = 4
MIB = 1024 * 1024
# Fixed headroom: TensorFlow runtime, gRPC buffers, dense variables.
RUNTIME_HEADROOM_BYTES = 512 * MIB
# Proportional headroom: gradient buffers and ids in flight scale with the shard.
SHARD_HEADROOM_FRACTION = 0.25


def embedding_shard_bytes(settings: TrainerSettings, ps_count: int) -> int:
    """Bytes of the largest embedding shard on one PS, slots included."""
    shards = settings.shard_count(ps_count)
    rows_per_shard = math.ceil(settings.embedding_rows / shards)
    return rows_per_shard * settings.embedding_dim * BYTES_PER_FLOAT * (1 + settings.optimizer_slots)


def ps_memory_bytes(settings: TrainerSettings, ps_count: int) -> int:
    shard = embedding_shard_bytes(settings, ps_count)
    return shard + math.ceil(shard * SHARD_HEADROOM_FRACTION) + RUNTIME_HEADROOM_BYTES


def ps_memory_request(config: "StackConfig") -> str:
    """The PS memory request of a stack: `cluster.ps.memory`, else derived from the model."""
    explicit = config.cluster.ps.memory
    return explicit or ps_memory_quantity(config.trainer, config.cluster.ps_count)


def ps_memory_quantity(settings: TrainerSettings, ps_count: int) -> str:
    """The PS memory request as a Kubernetes quantity, rounded up to whole MiB."""
    return f"{math.ceil(ps_memory_bytes(settings, ps_count) / MIB)}Mi"
