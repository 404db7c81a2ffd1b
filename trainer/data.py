"""Training data: a deterministic synthetic generator or TFRecord files.

Every worker gets its own share and each epoch is reshuffled. TFRecord files
are shared out as tf.data's AUTO policy does: by file when there are at least
as many files as workers, so each worker reads only its files; by record when
there are fewer, so no worker sits idle (the seed's complaint about file-level
sharding), at the price of every worker reading every file.
"""

from __future__ import annotations

import datetime
import os
import socket
from typing import Callable, Union

import tensorflow as tf

from .ids import splitmix64, zipf_ids
from .settings import TrainerSettings

# ParameterServerStrategy traces one input pipeline for all workers and tells
# it no worker index, so each task writes its index to this file in its working
# directory at start and the pipeline reads it where it runs, on the worker.
TASK_INDEX_FILE = "tfk8s-task-index"
# Which worker process ran a step: "worker-<index>@<host> pid <pid> started <UTC time>".
# A replaced worker pod keeps its name (StatefulSet) and its PID (1 in a
# container), so only the start time tells it from the one it replaced.
TASK_PROCESS_FILE = "tfk8s-task-process"
SYNTHETIC_RECORDS = 1 << 40  # effectively endless, still indexable record by record
# The evaluator's held-out set: this many batches of `batchSize` examples (a few seconds of
# evaluation, at most EVALUATION_EXAMPLES_MAX, whatever the batch size).
EVALUATION_BATCHES = 100
EVALUATION_EXAMPLES_MAX = 1 << 17
SHUFFLE_BUFFER = 10_000
LABEL_SALT = 0x5BD1E995
FEATURE_IDS = "ids"
FEATURE_LABEL = "label"


def synthetic_examples(record_ids: tf.Tensor, settings: TrainerSettings) -> tuple[tf.Tensor, tf.Tensor]:
    """Ids and labels of records, a pure function of (seed, record id).

    The label says whether most of a record's ids have a positive hidden sign,
    so a model that learns one weight per id can fit it: loss falls.
    """
    k = settings.ids_per_example
    record_ids = tf.cast(record_ids, tf.int64)
    slots = tf.range(k, dtype=tf.int64)
    keys = (record_ids[:, None] * k + slots[None, :]) * 1_000_003 + settings.seed
    ids = zipf_ids(keys, settings.embedding_rows, settings.zipf_exponent)
    signs = tf.cast(tf.bitwise.bitwise_and(splitmix64(ids + LABEL_SALT), tf.constant(1, tf.uint64)), tf.int64) * 2 - 1
    votes = tf.reduce_sum(signs, axis=1)
    labels = tf.cast(votes > 0, tf.float32)
    return ids, labels


def evaluation_size(settings: TrainerSettings) -> int:
    return min(EVALUATION_BATCHES * settings.batch_size, EVALUATION_EXAMPLES_MAX)


def evaluation_examples(settings: TrainerSettings) -> tuple[tf.Tensor, tf.Tensor]:
    """The evaluator's held-out examples, the same on every run: records -1, -2, ... of the synthetic
    generator. Workers read records 0 and up, so no worker ever trains on one of these (their keys
    in synthetic_examples are all below the seed, every training key at or above it). Synthetic
    whatever `data` is: a TFRecord set written by write_tfrecords comes from the same generator."""
    record_ids = -tf.range(1, evaluation_size(settings) + 1, dtype=tf.int64)
    return synthetic_examples(record_ids, settings)


def synthetic_dataset(settings: TrainerSettings, shards: int, shard: Union[int, tf.Tensor]) -> tf.data.Dataset:
    records = tf.data.Dataset.range(SYNTHETIC_RECORDS).shard(shards, shard)
    records = records.shuffle(SHUFFLE_BUFFER, seed=settings.seed, reshuffle_each_iteration=True)
    batches = records.batch(settings.batch_size, drop_remainder=True)
    return batches.map(lambda r: synthetic_examples(r, settings), num_parallel_calls=tf.data.AUTOTUNE)


def tfrecord_records(settings: TrainerSettings, shards: int, shard: Union[int, tf.Tensor]) -> tf.data.Dataset:
    """One epoch of one worker's serialized records (see the module docstring for the split)."""
    files = sorted(tf.io.gfile.glob(settings.data))
    if not files:
        raise FileNotFoundError(f"no TFRecord files match data: {settings.data}")
    if len(files) >= shards:
        own_files = tf.data.Dataset.from_tensor_slices(files).shard(shards, shard)
        return own_files.interleave(tf.data.TFRecordDataset, cycle_length=2, num_parallel_calls=tf.data.AUTOTUNE)
    return tf.data.TFRecordDataset(files).shard(shards, shard)


def tfrecord_dataset(settings: TrainerSettings, shards: int, shard: Union[int, tf.Tensor]) -> tf.data.Dataset:
    records = tfrecord_records(settings, shards, shard)
    records = records.shuffle(SHUFFLE_BUFFER, seed=settings.seed, reshuffle_each_iteration=True)
    features = {
        FEATURE_IDS: tf.io.FixedLenFeature([settings.ids_per_example], tf.int64),
        FEATURE_LABEL: tf.io.FixedLenFeature([], tf.float32),
    }

    def parse(serialized: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        parsed = tf.io.parse_example(serialized, features)
        ids = tf.math.floormod(parsed[FEATURE_IDS], settings.embedding_rows)
        return ids, parsed[FEATURE_LABEL]

    batches = records.repeat().batch(settings.batch_size, drop_remainder=True)
    return batches.map(parse, num_parallel_calls=tf.data.AUTOTUNE)


def training_dataset(settings: TrainerSettings, shards: int = 1, shard: Union[int, tf.Tensor] = 0) -> tf.data.Dataset:
    """Batches of (ids [batch, idsPerExample] int64, labels [batch] float32) for one worker.

    `shard` may be a tensor: the worker's index, known only on the worker.
    """
    if settings.data == "synthetic":
        dataset = synthetic_dataset(settings, shards, shard)
    else:
        dataset = tfrecord_dataset(settings, shards, shard)
    return dataset.prefetch(tf.data.AUTOTUNE)


def write_tfrecords(path: str, settings: TrainerSettings, records: int) -> None:
    """Write `records` synthetic examples as TFRecords (for tests and trying the file path)."""
    ids, labels = synthetic_examples(tf.range(records, dtype=tf.int64), settings)
    with tf.io.TFRecordWriter(path) as writer:
        for row_ids, label in zip(ids.numpy(), labels.numpy()):
            example = tf.train.Example(
                features=tf.train.Features(
                    feature={
                        FEATURE_IDS: tf.train.Feature(int64_list=tf.train.Int64List(value=row_ids)),
                        FEATURE_LABEL: tf.train.Feature(float_list=tf.train.FloatList(value=[label])),
                    }
                )
            )
            writer.write(example.SerializeToString())


def write_task_index(index: int, directory: str = ".") -> None:
    with open(f"{directory}/{TASK_INDEX_FILE}", "w", encoding="ascii") as handle:
        handle.write(str(index))
    with open(f"{directory}/{TASK_PROCESS_FILE}", "w", encoding="ascii") as handle:
        handle.write(worker_process_name(index))


def worker_process_name(index: int) -> str:
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")
    return f"worker-{index}@{socket.gethostname()} pid {os.getpid()} started {started}"


def worker_dataset_fn(settings: TrainerSettings, workers: int) -> Callable[[], tf.data.Dataset]:
    """The per-worker dataset function for ClusterCoordinator.create_per_worker_dataset."""

    def dataset_fn() -> tf.data.Dataset:
        index = tf.strings.to_number(tf.io.read_file(TASK_INDEX_FILE), out_type=tf.int64)
        return training_dataset(settings, workers, index)

    return dataset_fn
