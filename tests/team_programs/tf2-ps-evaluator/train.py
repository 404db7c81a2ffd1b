"""A team's own TF2 ParameterServerStrategy program with a side-car evaluator, written the way
TensorFlow's ParameterServerStrategy guide writes one.

The chief coordinates: it builds the variables on the PS (each partitioned over them), schedules
steps on the workers through a ClusterCoordinator, writes a checkpoint every `--checkpoint-every`
steps and at the last step, and exits 0 when done (or, with `--finish-file`, after the checkpoint
that follows that file's appearance: training until told, as a team's long run is). PS and
workers only serve. The evaluator
(TF_CONFIG task type `evaluator`, a task outside the training cluster) builds the same variables
on its own CPU, follows the checkpoints with tf.train.checkpoints_iterator, prints a line per
checkpoint it evaluated (`evaluator: step 40 eval_loss 0.6912`) and exits 0 once it has
evaluated the last step's. The chief waits for nothing of the evaluator. Everything it knows of
the cluster comes from TF_CONFIG, through TensorFlow's own resolver: nothing of tfk8s's.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

VOCABULARY = 4096
DIMENSION = 16
BATCH = 256
LEARNING_RATE = 5.0
CHECKPOINTS_KEPT = 3
# The chief writes every file of a checkpoint itself (its own volume: no PS mounts it).
CHIEF_IO_DEVICE = "/job:chief/replica:0/task:0/device:CPU:0"
# A PS calls the chief back to hand it its shards; right after the chief starts, a PS's channel
# to it may still be backing off: such a save is tried again for this long.
SAVE_RETRY_S = 15.0


class Model(tf.Module):
    def __init__(self) -> None:
        super().__init__(name="model")
        self.embedding = tf.Variable(tf.random.normal([VOCABULARY, DIMENSION], stddev=0.05, seed=7), name="embedding")
        self.weights = tf.Variable(tf.zeros([DIMENSION, 1]), name="weights")

    def logits(self, ids: tf.Tensor) -> tf.Tensor:
        return tf.squeeze(tf.matmul(tf.nn.embedding_lookup(self.embedding, ids), self.weights), axis=1)


def examples(seed: int, count: int) -> tuple[tf.Tensor, tf.Tensor]:
    ids = tf.random.stateless_uniform([count], seed=[seed, 2], maxval=VOCABULARY, dtype=tf.int64)
    return ids, tf.cast(ids % 2, tf.float32)


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


def save(manager: tf.train.CheckpointManager, step: int) -> str:
    options = tf.train.CheckpointOptions(experimental_io_device=CHIEF_IO_DEVICE)
    deadline = time.monotonic() + SAVE_RETRY_S
    while True:
        try:
            return manager.save(checkpoint_number=step, options=options)
        except tf.errors.UnavailableError:
            if time.monotonic() > deadline:
                raise
            time.sleep(1.0)


def finish_asked(options: argparse.Namespace) -> bool:
    return bool(options.finish_file) and os.path.exists(options.finish_file)


def coordinate(resolver: tf.distribute.cluster_resolver.ClusterResolver, options: argparse.Namespace) -> None:
    partitioner = tf.distribute.experimental.partitioners.FixedShardsPartitioner(
        num_shards=resolver.cluster_spec().num_tasks("ps")
    )
    strategy = tf.distribute.ParameterServerStrategy(resolver, variable_partitioner=partitioner)
    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
    with strategy.scope():
        model = Model()
    manager = tf.train.CheckpointManager(
        tf.train.Checkpoint(model=model), options.checkpoint_dir, max_to_keep=CHECKPOINTS_KEPT
    )

    def dataset_fn(_context=None) -> tf.data.Dataset:
        return tf.data.Dataset.from_tensor_slices(examples(1, BATCH * 64)).batch(BATCH).repeat()

    iterator = iter(coordinator.create_per_worker_dataset(dataset_fn))

    @tf.function
    def step(iterator):
        def replica_step(ids, labels):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=model.logits(ids)))
            # Plain SGD over the shards (Keras 3's optimizers take no sharded variable).
            variables = [*shards(model.embedding), *shards(model.weights)]
            for variable, gradient in zip(variables, tape.gradient(loss, variables)):
                variable.assign_sub(LEARNING_RATE * tf.convert_to_tensor(gradient))
            return loss

        ids, labels = next(iterator)
        return strategy.run(replica_step, args=(ids, labels))

    started = time.monotonic()
    done = 0
    result = None
    while done < options.steps and not finish_asked(options):
        count = min(options.checkpoint_every, options.steps - done)
        for _ in range(count):
            result = coordinator.schedule(step, args=(iterator,))
        coordinator.join()
        done += count
        print(f"chief: checkpoint {save(manager, done)}", flush=True)
    seconds = time.monotonic() - started
    loss = float(result.fetch()) if result is not None else float("nan")
    print(
        f"chief: {done} steps in {seconds:.1f} s, {done * BATCH / seconds:.0f} examples/s, loss {loss:.4f}", flush=True
    )


def evaluate(options: argparse.Namespace) -> None:
    """TensorFlow's side-car evaluation: each newest checkpoint, read into a model on this task's CPU."""
    # In a pod the program is PID 1, which the kernel spares from an unhandled SIGTERM.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    model = Model()  # the chief's variables, unpartitioned: a partitioned variable restores whole
    checkpoint = tf.train.Checkpoint(model=model)
    ids, labels = examples(3, BATCH * 16)  # held out: not the workers' examples (seed 1)
    print(f"evaluator: waiting for checkpoints in {options.checkpoint_dir}", flush=True)
    for path in tf.train.checkpoints_iterator(options.checkpoint_dir, min_interval_secs=1):
        try:
            checkpoint.read(path).expect_partial()
        except tf.errors.OpError as error:
            # The chief may have removed it (it keeps its last few) before it was read.
            print(f"evaluator: skipping {path}: {type(error).__name__}", flush=True)
            continue
        loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=model.logits(ids)))
        step = int(path.rsplit("-", 1)[1])
        print(f"evaluator: step {step} eval_loss {float(loss):.4f}", flush=True)
        if step >= options.steps:
            return


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--checkpoint-dir", required=True)
    parser.add_argument("--checkpoint-every", type=int, default=50)
    parser.add_argument("--finish-file", default="", help="the chief finishes once this file exists")
    options = parser.parse_args()
    if options.steps < 1 or options.checkpoint_every < 1:
        parser.error("--steps and --checkpoint-every must be at least 1")
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    if resolver.task_type in ("ps", "worker"):
        serve(resolver)
    elif resolver.task_type == "evaluator":
        evaluate(options)
    else:
        coordinate(resolver, options)
    return 0


if __name__ == "__main__":
    sys.exit(main())
