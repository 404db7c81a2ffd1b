"""Id arithmetic: the bijective id hash and the deterministic mixing of synthetic data.

Zipf-distributed ids make small ids hot. A sharded table keeps contiguous id
ranges per PS, so unhashed ids load the first PS most (the seed's symptom).
`auto` partitioning first maps ids through a bijection of [0, rows): hot ids
spread over every shard, and no two ids ever share a row.
"""

from __future__ import annotations

import math

import tensorflow as tf

GOLDEN_FRACTION = 0.6180339887498949


def bijection_multiplier(rows: int) -> int:
    """An odd multiplier coprime with `rows`, near rows x golden ratio (good spread)."""
    candidate = max(1, int(rows * GOLDEN_FRACTION)) | 1
    while math.gcd(candidate, rows) != 1:
        candidate += 2
    return candidate % rows if rows > 1 else 0


class IdHasher:
    """id -> (id * a + b) mod rows: a permutation of [0, rows) when gcd(a, rows) = 1."""

    def __init__(self, rows: int, offset: int = 12345) -> None:
        if rows * max(rows, 1) >= 2**63:
            raise ValueError(f"{rows} rows are too many for 64-bit id hashing")
        self.rows = rows
        self.multiplier = bijection_multiplier(rows)
        self.offset = offset % rows if rows else 0

    def __call__(self, ids: tf.Tensor) -> tf.Tensor:
        ids = tf.cast(ids, tf.int64)
        return (ids * self.multiplier + self.offset) % self.rows


def splitmix64(values: tf.Tensor) -> tf.Tensor:
    """A well-mixed 64-bit hash (uint64 in, uint64 out); wraps on overflow by design."""
    z = tf.cast(values, tf.uint64) + tf.constant(0x9E3779B97F4A7C15, tf.uint64)
    z = tf.bitwise.bitwise_xor(z, tf.bitwise.right_shift(z, tf.constant(30, tf.uint64)))
    z = z * tf.constant(0xBF58476D1CE4E5B9, tf.uint64)
    z = tf.bitwise.bitwise_xor(z, tf.bitwise.right_shift(z, tf.constant(27, tf.uint64)))
    z = z * tf.constant(0x94D049BB133111EB, tf.uint64)
    return tf.bitwise.bitwise_xor(z, tf.bitwise.right_shift(z, tf.constant(31, tf.uint64)))


def unit_uniform(values: tf.Tensor) -> tf.Tensor:
    """Deterministic uniform floats in (0, 1) from integer keys."""
    top53 = tf.bitwise.right_shift(splitmix64(values), tf.constant(11, tf.uint64))
    return (tf.cast(top53, tf.float64) + 0.5) / float(2**53)


def zipf_ids(keys: tf.Tensor, rows: int, exponent: float) -> tf.Tensor:
    """Zipf-like ids in [0, rows), id 0 the hottest: P(id = k) ~ (k + 1)^-exponent.

    Inverse CDF of a power law truncated to the table, one uniform per key.
    """
    a = exponent - 1.0
    u = unit_uniform(keys)
    x = tf.pow(1.0 - u * (1.0 - float(rows) ** -a), -1.0 / a)
    return tf.clip_by_value(tf.cast(tf.floor(x), tf.int64) - 1, 0, rows - 1)
