"""A team's own TF2 program for MultiWorkerMirroredStrategy: workers only, no PS, no chief.

Every worker holds a replica of the model; each step, the workers average their gradients with
collective all-reduce over gRPC, so the replicas stay equal. Worker 0 is the chief (it reports).
Everything it knows of the cluster comes from TF_CONFIG, through TensorFlow's own resolver, as in
Kubeflow's examples of TFJobs with Worker replicas only.
"""

from __future__ import annotations

import argparse
import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

FEATURES = 8
BATCH = 64
LEARNING_RATE = 0.05


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=200)
    steps = parser.parse_args().steps
    task = json.loads(os.environ["TF_CONFIG"])["task"]
    name = f"{task['type']}-{task['index']}"

    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    with strategy.scope():
        # MEAN: each replica's update is averaged across the workers (the all-reduce).
        weights = tf.Variable(tf.zeros([FEATURES, 1]), aggregation=tf.VariableAggregation.MEAN)
    truth = tf.range(1.0, FEATURES + 1.0)[:, None] / FEATURES

    @tf.function
    def step(seed: tf.Tensor) -> tf.Tensor:
        def replica_step() -> tf.Tensor:
            features = tf.random.stateless_normal([BATCH, FEATURES], seed=[seed, task["index"]])
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean((features @ weights - features @ truth) ** 2)
            weights.assign_sub(LEARNING_RATE * tape.gradient(loss, weights))
            return loss

        return strategy.reduce(tf.distribute.ReduceOp.MEAN, strategy.run(replica_step), axis=None)

    first = last = None
    for index in range(steps):
        loss = float(step(tf.constant(index)))
        first = loss if first is None else first
        last = loss
    print(
        f"{name}: {steps} steps over {strategy.num_replicas_in_sync} workers, loss {first:.4f} -> {last:.4f}",
        flush=True,
    )


if __name__ == "__main__":
    main()
