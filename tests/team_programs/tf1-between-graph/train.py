"""A team's TF1 between-graph program, written the way the seed's teams wrote theirs.

Every worker builds the whole graph; `replica_device_setter` puts the variables on the PS, a
`MonitoredTrainingSession` runs it, and worker 0 is the chief (it initializes the variables).
The cluster comes from the command line, as the seed's run.sh passes it. With --partitioned the
embedding is split over every PS; without, it lives on one PS, which then does the work of all
(the seed's finding).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

tf1 = tf.compat.v1
VOCABULARY = 200_000
DIMENSION = 64
BATCH = 2048


def main() -> int:
    parser = argparse.ArgumentParser()
    for name in ("ps_hosts", "worker_hosts", "job_name"):
        parser.add_argument(f"--{name}", required=True)
    for name in ("task_index", "ps_num", "worker_num"):
        parser.add_argument(f"--{name}", type=int, required=True)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--partitioned", action="store_true")
    parser.add_argument("--log-steps", action="store_true", help="each worker prints a line per step it runs")
    options = parser.parse_args()

    tf1.disable_eager_execution()
    cluster = tf.train.ClusterSpec({"ps": options.ps_hosts.split(","), "worker": options.worker_hosts.split(",")})
    assert cluster.num_tasks("ps") == options.ps_num and cluster.num_tasks("worker") == options.worker_num
    server = tf.distribute.Server(cluster, job_name=options.job_name, task_index=options.task_index)
    if options.job_name == "ps":
        print(f"ps-{options.task_index}: serving", flush=True)
        server.join()
        return 0

    worker = f"/job:worker/task:{options.task_index}"
    with tf1.device(tf1.train.replica_device_setter(worker_device=worker, cluster=cluster)):
        global_step = tf1.train.get_or_create_global_step()
        partitioner = tf1.fixed_size_partitioner(options.ps_num) if options.partitioned else None
        embedding = tf1.get_variable("embedding", [VOCABULARY, DIMENSION], partitioner=partitioner,
                                     initializer=tf1.random_normal_initializer(stddev=0.05))
        weights = tf1.get_variable("weights", [DIMENSION, 1], initializer=tf1.zeros_initializer())
        ids = tf1.random.uniform([BATCH, 16], maxval=VOCABULARY, dtype=tf.int64)
        labels = tf.cast(tf.reduce_sum(ids, axis=1, keepdims=True) % 2, tf.float32)
        features = tf.reduce_mean(tf1.nn.embedding_lookup(embedding, ids), axis=1)
        logits = tf.matmul(features, weights)
        loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits))
        train_op = tf1.train.AdagradOptimizer(0.1).minimize(loss, global_step=global_step)

    hooks = [tf1.train.StopAtStepHook(last_step=options.steps)]
    config = tf1.ConfigProto(device_filters=["/job:ps", worker])
    started, steps = time.monotonic(), 0
    with tf1.train.MonitoredTrainingSession(
        master=server.target, is_chief=options.task_index == 0, hooks=hooks, config=config
    ) as session:
        print(f"worker-{options.task_index}: training", flush=True)
        while not session.should_stop():
            _, step = session.run([train_op, global_step])
            steps += 1
            if options.log_steps:
                print(f"worker: step {step}", flush=True)
    seconds = time.monotonic() - started
    print(f"worker-{options.task_index}: {steps} steps to global step {step} in {seconds:.1f} s, "
          f"{steps * BATCH / seconds:.0f} examples/s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
