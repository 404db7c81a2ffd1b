"""A team's TF2 ParameterServerStrategy program with a bottleneck chosen by flag, for `diagnose`'s tests.

Each `--load` puts the training's work where one of diagnose's findings says it is:

- `hot-ps`: a dense matrix created without a partitioner lives whole on the first PS (the strategy
  places variables round-robin), and each step's work on it runs where it lives: that PS works,
  the others hold a small layer and idle (seed 001's unpartitioned table);
- `ps-bound`: the same work on a matrix split in equal blocks, one on each PS: the PS work
  together, the workers wait on them;
- `worker-bound`: the PS hold a small layer; each step multiplies matrices on the worker;
- `idle`: each worker's input pipeline sleeps before each batch (as slow reads from storage
  would) and the step is small: nobody is busy.

The chief prints where the matrix lives (`matrix on <device>`), so that a test can check which PS
a finding names; with `--progress`, tfk8s's progress line every 100 steps too (`tune` reads its
throughput from it). PS and workers only serve. Nothing of tfk8s's is used: the cluster comes from
TF_CONFIG through TensorFlow's own resolver.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

# The input pipeline's wait per batch under `idle`: the test's slow storage. tf.data's sleep
# transformation runs inside the worker's pipeline (a Python sleep would run on the chief).
from tensorflow.python.data.experimental.ops.testing import sleep as input_delay  # noqa: E402

LOADS = ("hot-ps", "ps-bound", "worker-bound", "idle")
MATRIX = 384  # the side of the matrices multiplied
PRODUCTS_PER_BLOCK = 8
IDLE_DELAY_US = 500_000
BATCH = 16


def serve(resolver: tf.distribute.cluster_resolver.ClusterResolver) -> None:
    server = tf.distribute.Server(
        resolver.cluster_spec(), job_name=resolver.task_type, task_index=resolver.task_id, protocol="grpc", start=True
    )
    print(f"{resolver.task_type}-{resolver.task_id}: serving", flush=True)
    server.join()


def products(matrix: tf.Tensor) -> tf.Tensor:
    """PRODUCTS_PER_BLOCK multiplications of `matrix` by itself, each feeding the next: CPU work
    wherever the ops are placed, summed to one number so that nothing large crosses the network."""
    total = tf.constant(0.0)
    for _ in range(PRODUCTS_PER_BLOCK):
        matrix = tf.math.l2_normalize(tf.matmul(matrix, matrix))
        total += tf.reduce_sum(matrix)
    return total


def coordinate(resolver: tf.distribute.cluster_resolver.ClusterResolver, load: str, steps: int, progress: bool) -> None:
    strategy = tf.distribute.ParameterServerStrategy(resolver)  # no partitioner: a variable lives on one PS
    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
    ps_count = resolver.cluster_spec().num_tasks("ps")
    with strategy.scope():
        # Created first, so placed whole on the first PS.
        matrix = tf.Variable(tf.random.normal([MATRIX, MATRIX], stddev=0.05), name="matrix")
        weights = tf.Variable(tf.zeros([MATRIX, 1]), name="weights")
    blocks = []
    for index in range(ps_count):  # the same matrix's work split in one block per PS
        with tf.device(f"/job:ps/replica:0/task:{index}"):
            blocks.append(tf.Variable(tf.random.normal([MATRIX, MATRIX], stddev=0.05), name="block"))
    print(f"matrix on {matrix.device}", flush=True)

    def dataset_fn(_context=None) -> tf.data.Dataset:
        batches = tf.data.Dataset.random(seed=7).batch(BATCH)
        return batches.apply(input_delay(IDLE_DELAY_US)) if load == "idle" else batches

    iterator = iter(coordinator.create_per_worker_dataset(dataset_fn))

    @tf.function
    def step(iterator):
        def replica_step(batch):
            if load == "hot-ps":  # every block's work, on the one PS that holds the matrix
                with tf.device(matrix.device):
                    return tf.add_n([products(tf.convert_to_tensor(matrix)) for _ in blocks])
            if load == "ps-bound":
                worked = []
                for block in blocks:
                    with tf.device(block.device):
                        worked.append(products(tf.convert_to_tensor(block)))
                return tf.add_n(worked)
            if load == "worker-bound":
                return products(tf.random.normal([MATRIX, MATRIX])) + tf.reduce_sum(weights)
            return tf.reduce_sum(tf.cast(batch, tf.float32)) + tf.reduce_sum(weights)

        return strategy.run(replica_step, args=(next(iterator),))

    print(f"chief: training under {load} load", flush=True)
    since = time.monotonic()
    for done in range(steps):
        coordinator.schedule(step, args=(iterator,))
        if done % 100 == 99:
            coordinator.join()
            print(f"chief: {done + 1} steps", flush=True)
            if progress:  # the line tfk8s reads throughput from (docs/programs.md)
                now = time.monotonic()
                rate = 100 * BATCH / (now - since)
                print(f"step {done + 1:>7}  loss {0.0:.4f}  {rate:>10.1f} examples/s", flush=True)
                since = now
    coordinator.join()
    print(f"chief: {steps} steps done", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--load", choices=LOADS, required=True)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--progress", action="store_true", help="print tfk8s's progress line every 100 steps")
    options = parser.parse_args()
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    if resolver.task_type in ("ps", "worker"):
        serve(resolver)
        return 0
    coordinate(resolver, options.load, options.steps, options.progress)
    return 0


if __name__ == "__main__":
    sys.exit(main())
