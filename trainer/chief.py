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
"""

from __future__ import annotations

import collections
import json
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, TextIO

import tensorflow as tf

from .checkpoints import restore_latest, save
from .cluster import TaskConfig, ps_named_in
from .data import TASK_PROCESS_FILE, worker_dataset_fn
from .devices import log_devices
from .failures import EXIT_CHECKPOINT_FAILED, EXIT_PS_LOST, PS_FAILURES, CheckpointError, PsLostError, is_ps_failure
from .log_lines import SUMMARY, event_line, progress_line
from .model import SparseModel, table_partitioner
from .peers import PS_WATCH_GRACE_S, wait_until_serving, watch_parameter_servers
from .scalars import TRAIN_RUN, ScalarWriter, scalar_writer
from .settings import CHECKPOINTS_KEPT, TrainerSettings
from .shared_names import CHECKPOINT_DIR_ENV
from .tf_private import before_cluster_updates


@dataclass
class ChiefOptions:
    checkpoint_dir: str
    metrics_file: Optional[str] = None
    # With tfk8s:tensorboard: the progress figures as TensorBoard scalars too.
    scalars: Optional[ScalarWriter] = None
    progress_every: int = 50  # steps between progress lines
    out: TextIO = field(default_factory=lambda: sys.stdout)
    # Set to finish before `steps` (SIGUSR1): no more steps scheduled, checkpoint, summary, exit 0.
    finish: threading.Event = field(default_factory=threading.Event)


@dataclass
class Progress:
    """What the chief has seen come back from the workers."""

    steps_done: int
    examples: int = 0
    losses: list[float] = field(default_factory=list)
    rows_per_shard: Optional[list[int]] = None
    steps_measured: int = 0
    # "worker-1@<host> pid <pid> started <time>" -> steps it ran: a replaced worker
    # (same pod name, same PID 1 in a container) shows up as a second process.
    steps_by_worker_process: dict[str, int] = field(default_factory=dict)

    def add_unreported(self, steps: int, batch_size: int) -> None:
        """Steps that ran, whose loss and rows were lost with their worker."""
        self.steps_done += steps
        self.steps_measured += steps
        self.examples += steps * batch_size

    def add(self, steps: int, loss: float, rows: list[int], batch_size: int, worker_process: str) -> None:
        self.add_unreported(steps, batch_size)
        self.steps_by_worker_process[worker_process] = self.steps_by_worker_process.get(worker_process, 0) + steps
        self.losses.append(loss)
        if self.rows_per_shard is None:
            self.rows_per_shard = [0] * len(rows)
        self.rows_per_shard = [a + b for a, b in zip(self.rows_per_shard, rows)]


def _emit(out: TextIO, event: str, **fields: Any) -> None:
    print(event_line(event, **fields), file=out, flush=True)


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


def make_train_function(model: SparseModel) -> Callable:
    @tf.function
    def train_steps(iterator: tf.data.Iterator, steps: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        total_loss = tf.constant(0.0)
        rows = tf.zeros([len(model.table_shards)], tf.int64)
        for _ in tf.range(steps):
            ids, labels = next(iterator)
            loss, fetched = model.train_step(ids, labels)
            total_loss += loss
            rows += fetched
        model.step.assign_add(tf.cast(steps, tf.int64))
        # Read where the function runs: the worker process that ran these steps.
        worker_process = tf.io.read_file(TASK_PROCESS_FILE)
        return total_loss / tf.cast(steps, tf.float32), rows, worker_process

    return train_steps


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
        _emit(options.out, "restored", checkpoint=restored_from, step=progress.steps_done)

    iterator = iter(coordinator.create_per_worker_dataset(worker_dataset_fn(settings, task.worker_count)))
    loop = TrainingLoop(settings, options, model, manager, coordinator, iterator, progress)
    _emit(options.out, "start", step=progress.steps_done, ps=task.ps_count, workers=task.worker_count)
    try:
        loop.run()
    finally:
        loop.close()

    summary = _summary(task, settings, model, progress, loop.elapsed, restored_from)
    _emit(options.out, SUMMARY, **summary)
    return summary


class TrainingLoop:
    """Schedules calls of `stepsPerCall` steps, collects their results, checkpoints, reports."""

    def __init__(
        self,
        settings: TrainerSettings,
        options: ChiefOptions,
        model: SparseModel,
        manager: tf.train.CheckpointManager,
        coordinator: tf.distribute.coordinator.ClusterCoordinator,
        iterator: tf.distribute.experimental.coordinator.PerWorkerValues,
        progress: Progress,
    ) -> None:
        self.settings = settings
        self.options = options
        self.model = model
        self.manager = manager
        self.coordinator = coordinator
        self.iterator = iterator
        self.progress = progress
        self.train_steps = make_train_function(model)
        self.in_flight: collections.deque = collections.deque()
        self.metrics = open(options.metrics_file, "a", encoding="utf-8") if options.metrics_file else None
        self.started = time.perf_counter()
        self.next_report = progress.steps_done + options.progress_every
        self.saved_step = progress.steps_done

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def run(self) -> None:
        settings = self.settings
        scheduled = self.progress.steps_done
        next_checkpoint = _next_multiple(scheduled, settings.checkpoint_every)
        while scheduled < settings.steps:
            if self.options.finish.is_set():
                _emit(
                    self.options.out, "finishing", step=scheduled, steps=settings.steps, reason="asked to finish early"
                )
                break
            steps = min(settings.steps_per_call, settings.steps - scheduled)
            if next_checkpoint is not None and scheduled < next_checkpoint < scheduled + steps:
                steps = next_checkpoint - scheduled  # end a call exactly on the checkpoint step
            remote = self.coordinator.schedule(self.train_steps, args=(self.iterator, tf.constant(steps)))
            self.in_flight.append((steps, remote))
            scheduled += steps
            while len(self.in_flight) > settings.max_in_flight:
                self._collect_oldest()
            if next_checkpoint is not None and scheduled >= next_checkpoint:
                self._drain()
                self._checkpoint()
                next_checkpoint = _next_multiple(scheduled, settings.checkpoint_every)
        self._drain()
        if settings.checkpoint_every:
            self._checkpoint()

    def close(self) -> None:
        if self.metrics:
            self.metrics.close()
        if self.options.scalars:
            self.options.scalars.close()

    def _drain(self) -> None:
        self.coordinator.join()  # every scheduled step has landed on the PS
        while self.in_flight:
            self._collect_oldest()

    def _checkpoint(self) -> None:
        # The chief's count of finished calls is the step. The coordinator runs a
        # call again when its worker is lost mid-call, and that call's assign_add
        # may already have landed on the PS: the PS counter would run ahead.
        step = self.progress.steps_done
        if int(self.model.step.numpy()) != step:
            self.model.step.assign(step)
        if step != self.saved_step:
            save(self.manager, step)
            self.saved_step = step
            _emit(self.options.out, "checkpoint", step=step)

    def _collect_oldest(self) -> None:
        steps, remote = self.in_flight.popleft()
        progress = self.progress
        try:
            loss, rows, worker_process = remote.fetch()
        except tf.errors.UnavailableError as error:
            if ps_named_in(str(error)) is not None:
                raise
            # fetch() returns once the call has finished (a call cut off with its worker is
            # run again elsewhere), so its steps are on the PS; only its results, still on
            # the worker that was lost, cannot be copied.
            progress.add_unreported(steps, self.settings.batch_size)
            _emit(
                self.options.out, "results_lost", steps=steps, step=progress.steps_done, reason="their worker is gone"
            )
            return
        worker_process = worker_process.decode()
        if worker_process not in progress.steps_by_worker_process:
            # A worker process's first steps: at the start, or a replaced worker rejoining.
            _emit(self.options.out, "worker_joined", worker=worker_process, step=progress.steps_done)
        progress.add(steps, float(loss), [int(r) for r in rows], self.settings.batch_size, worker_process)
        if progress.steps_done >= self.next_report or progress.steps_done >= self.settings.steps:
            self._report()
            self.next_report = progress.steps_done + self.options.progress_every

    def _report(self) -> None:
        elapsed = max(self.elapsed, 1e-9)
        progress = self.progress
        step, loss, examples_per_sec = (
            progress.steps_done,
            round(progress.losses[-1], 6),
            round(progress.examples / elapsed, 1),
        )
        print(progress_line(step, loss, examples_per_sec), file=self.options.out, flush=True)
        record = {"step": step, "loss": loss, "examples_per_sec": examples_per_sec, "elapsed_sec": round(elapsed, 3)}
        if self.metrics:
            self.metrics.write(json.dumps(record) + "\n")
            self.metrics.flush()
        if self.options.scalars:
            self.options.scalars.write(step, {"loss": loss, "examples_per_sec": examples_per_sec})


def _next_multiple(step: int, every: int) -> Optional[int]:
    return None if not every else (step // every + 1) * every


def _summary(
    task: TaskConfig,
    settings: TrainerSettings,
    model: SparseModel,
    progress: Progress,
    elapsed: float,
    restored_from: Optional[str],
) -> dict[str, Any]:
    bytes_by_device = model.bytes_per_device()
    bytes_per_ps = [0] * task.ps_count
    for device, size in bytes_by_device.items():
        index = ps_named_in(device)
        if index is not None:
            bytes_per_ps[index] += size
    rows = progress.rows_per_shard or []
    mean_rows = sum(rows) / len(rows) if rows else 0.0
    steps_measured = max(progress.steps_measured, 1)
    return {
        "steps": progress.steps_done,
        "steps_this_run": progress.steps_measured,
        "resumed_from_step": progress.steps_done - progress.steps_measured if restored_from else 0,
        "examples_per_sec": round(progress.examples / elapsed, 1) if elapsed > 0 else 0.0,
        "loss_first": round(progress.losses[0], 6) if progress.losses else None,
        "loss_last": round(progress.losses[-1], 6) if progress.losses else None,
        "partition": settings.partition,
        "shards": len(model.table_shards),
        "bytes_per_ps": bytes_per_ps,
        "rows_fetched_per_step": round(sum(rows) / steps_measured, 1),
        "rows_per_shard": rows,
        "row_imbalance": round(max(rows) / mean_rows, 3) if mean_rows else None,
        "steps_by_worker_process": progress.steps_by_worker_process,
        # Which PS holds each table shard (the strategy places shards round robin after other variables).
        "ps_of_shard": [ps_named_in(shard.device) for shard in model.table_shards],
        "seconds": round(elapsed, 3),
    }


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
    _emit(options.out, "cluster_serving", waited_sec=round(waited, 2))
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
    others = {
        f"{role}-{index}": address for role in ("ps", "worker") for index, address in enumerate(task.cluster[role])
    }
    return wait_until_serving(others, say)


def _fail(options: ChiefOptions, message: str, code: int) -> int:
    """Report why the chief stops (an event and a line on stderr); the exit code."""
    _emit(options.out, "failed", error=message)
    print(f"chief: {message}", file=sys.stderr, flush=True)
    return code
