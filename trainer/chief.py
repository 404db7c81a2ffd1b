"""The chief: coordinates training over the PS and workers, checkpoints, reports.

Work goes to workers as scheduled functions of `stepsPerCall` steps, at most
`maxInFlight` at a time. The step counter lives with the model on the PS and
is saved with it, so a restarted chief resumes exactly where the last
checkpoint stood, into any number of PS (sharded variables re-shard on
restore). A lost worker is the coordinator's business: its functions run
elsewhere and it rejoins when restarted. A lost PS ends the chief at once with
a message naming it, so the cluster restarts from the checkpoint.

Checkpoints are written and read by the chief alone (TensorFlow's
`experimental_io_device`): by default every PS would write its own shards to
`checkpointDir` on its own filesystem, and in a pod that folder exists only
in the chief's. The shards travel to the chief and are saved there, so the
chief holds a whole checkpoint in memory while it writes (components/spec/sizing.py
sizes it for that).

This module connects the chief, restores the model and turns failures into exit codes; the loop
that schedules the steps, and the summary of what it counted, are trainer/training_loop.py.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any, Callable, Optional

import tensorflow as tf

from .checkpoints import restore_latest
from .cluster import TaskConfig, ps_named_in
from .data import worker_dataset_fn
from .devices import log_devices
from .failures import EXIT_CHECKPOINT_FAILED, EXIT_PS_LOST, PS_FAILURES, CheckpointError, PsLostError, is_ps_failure
from .log_lines import SUMMARY
from .model import SparseModel, table_partitioner
from .peers import PS_WATCH_GRACE_S, wait_until_serving, watch_parameter_servers
from .scalars import TRAIN_RUN, scalar_writer
from .settings import CHECKPOINTS_KEPT, TrainerSettings
from .shared_names import CHECKPOINT_DIR_ENV, SERVING_ROLES
from .tf_private import before_cluster_updates
from .training_loop import ChiefOptions, Progress, TrainingLoop, emit
from .training_loop import summary as training_summary


def build_cluster(
    task: TaskConfig, settings: TrainerSettings
) -> tuple[tf.distribute.ParameterServerStrategy, tf.distribute.coordinator.ClusterCoordinator]:
    resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
        tf.train.ClusterSpec(task.cluster), task_type="chief", task_id=0, rpc_layer="grpc"
    )
    strategy = tf.distribute.ParameterServerStrategy(
        resolver, variable_partitioner=table_partitioner(settings, task.ps_count)
    )
    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
    return strategy, coordinator


def reconnect_once_serving(task: TaskConfig, say: Callable[[str], None]) -> None:
    """The coordinator reaches a lost worker's replacement only once every task serves.

    TensorFlow's coordinator updates the cluster (`update_server_def`) the moment a worker is
    lost, and that call waits for the worker. Meanwhile the worker's DNS name does not exist (its
    pod is gone until its Job replaces it, 10 s or more), and gRPC's DNS resolver backs off
    between failed lookups (1 s, then 1.6 times longer each time; no setting changes it), so the
    replacement was reached up to 5.6 s (mostly 2 to 3.6 s) after it served (real pods). Asked once the replacement
    serves, the first lookup finds it: about a second. The coordinator calls the eager context's
    own method, a private API (trainer/tf_private.py).
    """
    before_cluster_updates(lambda: wait_for_cluster(task, say))


def run_chief(task: TaskConfig, settings: TrainerSettings, options: ChiefOptions) -> dict[str, Any]:
    """Train to `settings.steps`; return the summary (also printed as the last line).

    A PS failure at any stage (connecting, restoring, creating the datasets,
    training) raises PsLostError naming the PS; a checkpoint that cannot be
    written or read raises CheckpointError.
    """
    try:
        return _train(task, settings, options)
    except PS_FAILURES as error:
        index = ps_named_in(str(error))
        if index is None and not is_ps_failure(error):
            raise
        address = task.cluster["ps"][index] if index is not None else None
        raise PsLostError(index, address, error) from None


def _train(task: TaskConfig, settings: TrainerSettings, options: ChiefOptions) -> dict[str, Any]:
    strategy, coordinator = build_cluster(task, settings)
    reconnect_once_serving(task, lambda line: print(f"chief: {line}", file=options.out, flush=True))
    with strategy.scope():
        model = SparseModel(settings, strategy.extended.colocate_vars_with)
    manager = tf.train.CheckpointManager(
        tf.train.Checkpoint(model=model), options.checkpoint_dir, max_to_keep=CHECKPOINTS_KEPT
    )
    restored_from = restore_latest(manager)
    progress = Progress(steps_done=int(model.step.numpy()))
    if restored_from:
        emit(options.out, "restored", checkpoint=restored_from, step=progress.steps_done)

    iterator = iter(coordinator.create_per_worker_dataset(worker_dataset_fn(settings, task.worker_count)))
    loop = TrainingLoop(settings, options, model, manager, coordinator, iterator, progress)
    emit(options.out, "start", step=progress.steps_done, ps=task.ps_count, workers=task.worker_count)
    try:
        loop.run()
    finally:
        loop.close()

    summary = training_summary(task, settings, model, progress, loop.elapsed, restored_from)
    emit(options.out, SUMMARY, **summary)
    return summary


def main(task: TaskConfig, settings: TrainerSettings, finish: Optional[threading.Event] = None) -> int:
    log_devices(task.name)
    scratch = os.environ.get("TMPDIR", ".")
    checkpoint_dir = settings.checkpoint_dir
    if checkpoint_dir == "default":
        checkpoint_dir = os.environ.get(CHECKPOINT_DIR_ENV, os.path.join(scratch, "checkpoints"))
    options = ChiefOptions(
        checkpoint_dir=checkpoint_dir,
        metrics_file=os.environ.get("TFK8S_METRICS_FILE", os.path.join(scratch, "metrics.jsonl")),
        scalars=scalar_writer(TRAIN_RUN),
        progress_every=int(os.environ.get("TFK8S_PROGRESS_EVERY", "50")),
        finish=finish or threading.Event(),
    )

    def exit_ps_lost(index: int, address: str) -> None:
        # The training thread may be blocked inside the coordinator: leave from here.
        message = (
            f"ps-{index} ({address}) is unreachable: no connection for {PS_WATCH_GRACE_S:.0f} s; "
            "exiting so the cluster restarts from the last checkpoint"
        )
        os._exit(_fail(options, message, EXIT_PS_LOST))

    def say(line: str) -> None:
        print(f"chief: {line}", file=options.out, flush=True)

    waited = wait_for_cluster(task, say)
    emit(options.out, "cluster_serving", waited_sec=round(waited, 2))
    # Stopped when this function returns: a chief run in-process must not be ended later.
    done = threading.Event()
    watch_parameter_servers(task.cluster["ps"], exit_ps_lost, done)
    try:
        run_chief(task, settings, options)
    except PsLostError as error:
        return _fail(options, f"{error}; exiting so the cluster restarts from the last checkpoint", EXIT_PS_LOST)
    except CheckpointError as error:
        return _fail(options, str(error), EXIT_CHECKPOINT_FAILED)
    finally:
        done.set()
    return 0


def wait_for_cluster(task: TaskConfig, say: Callable[[str], None]) -> float:
    """Every PS and worker serving before the chief connects (see trainer/peers.py); seconds waited."""
    others = {f"{role}-{index}": address for role in SERVING_ROLES for index, address in enumerate(task.cluster[role])}
    return wait_until_serving(others, say)


def _fail(options: ChiefOptions, message: str, code: int) -> int:
    """Report why the chief stops (an event and a line on stderr); the exit code."""
    emit(options.out, "failed", error=message)
    print(f"chief: {message}", file=sys.stderr, flush=True)
    return code
