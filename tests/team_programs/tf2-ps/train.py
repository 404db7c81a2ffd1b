"""A team's own TF2 program, written the way teams write one for ParameterServerStrategy.

The chief coordinates: it builds the variables on the PS (the embedding partitioned over
them), schedules steps on the workers through a ClusterCoordinator, and exits 0 when done.
PS and workers only serve. Everything it knows of the cluster comes from TF_CONFIG, through
TensorFlow's own resolver: nothing of tfk8s's.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

VOCABULARY = 4096
DIMENSION = 16
BATCH = 256
LEARNING_RATE = 5.0


def serve(resolver: tf.distribute.cluster_resolver.ClusterResolver) -> None:
    server = tf.distribute.Server(
        resolver.cluster_spec(),
        job_name=resolver.task_type,
        task_index=resolver.task_id,
        protocol=resolver.rpc_layer or "grpc",
        start=True,
    )
    print(f"{resolver.task_type}-{resolver.task_id}: serving", flush=True)
    server.join()


def shards(variable: tf.Variable) -> list[tf.Variable]:
    """A partitioned variable's shards; a variable on one PS is not partitioned."""
    return list(getattr(variable, "variables", [variable]))


def coordinate(resolver: tf.distribute.cluster_resolver.ClusterResolver, steps: int, log_steps: bool = False) -> None:
    partitioner = tf.distribute.experimental.partitioners.FixedShardsPartitioner(
        num_shards=resolver.cluster_spec().num_tasks("ps")
    )
    strategy = tf.distribute.ParameterServerStrategy(resolver, variable_partitioner=partitioner)
    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
    with strategy.scope():
        embedding = tf.Variable(tf.random.normal([VOCABULARY, DIMENSION], stddev=0.05), name="embedding")
        weights = tf.Variable(tf.zeros([DIMENSION, 1]), name="weights")

    def dataset_fn(_context=None) -> tf.data.Dataset:
        ids = tf.random.stateless_uniform([BATCH * 64], seed=[1, 2], maxval=VOCABULARY, dtype=tf.int64)
        labels = tf.cast(ids % 2, tf.float32)
        return tf.data.Dataset.from_tensor_slices((ids, labels)).batch(BATCH).repeat()

    per_worker = coordinator.create_per_worker_dataset(dataset_fn)
    iterator = iter(per_worker)

    @tf.function
    def step(iterator):
        def replica_step(ids, labels):
            with tf.GradientTape() as tape:
                rows = tf.nn.embedding_lookup(embedding, ids)
                logits = tf.squeeze(tf.matmul(rows, weights), axis=1)
                loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits))
            # Every variable is partitioned over the PS: its shards (one PS: the variable itself);
            # plain SGD (Keras 3's optimizers take no sharded variable).
            variables = [*shards(embedding), *shards(weights)]
            for variable, gradient in zip(variables, tape.gradient(loss, variables)):
                variable.assign_sub(LEARNING_RATE * tf.convert_to_tensor(gradient))
            if log_steps:  # printed where the step runs: the worker's own log shows it training
                tf.print("worker: step, loss", loss, output_stream=sys.stdout)
            return loss

        ids, labels = next(iterator)
        return strategy.run(replica_step, args=(ids, labels))

    started = time.monotonic()
    results = [coordinator.schedule(step, args=(iterator,)) for _ in range(steps)]
    coordinator.join()
    seconds = time.monotonic() - started
    loss = float(results[-1].fetch())
    print(f"chief: {steps} steps in {seconds:.1f} s, {steps * BATCH / seconds:.0f} examples/s, loss {loss:.4f}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--log-steps", action="store_true", help="each worker prints a line per step it runs")
    options = parser.parse_args()
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    if resolver.task_type in ("ps", "worker"):
        serve(resolver)
        return 0
    coordinate(resolver, options.steps, options.log_steps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
