"""The chief's training loop: calls of `stepsPerCall` steps scheduled on the workers, at most
`maxInFlight` at a time, their results collected, checkpoints written on the checkpoint steps,
progress reported; and the summary of what it counted, the chief's last line.

trainer/chief.py connects to the cluster, restores the model and runs this loop; its failures
(a lost PS, a checkpoint not written) are the chief's to report.
"""

from __future__ import annotations

import collections
import json
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, TextIO

import tensorflow as tf

from .checkpoints import save
from .cluster import TaskConfig, ps_named_in
from .data import TASK_PROCESS_FILE
from .log_lines import event_line, progress_line
from .model import SparseModel
from .scalars import ScalarWriter
from .settings import TrainerSettings


@dataclass
class ChiefOptions:
    """Where the chief checkpoints and reports, and what has it finish early."""

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


def emit(out: TextIO, event: str, **fields: Any) -> None:
    """One of the chief's event lines (trainer/log_lines.py), as it happens: `top`, `status` and the
    local launcher read them."""
    print(event_line(event, **fields), file=out, flush=True)


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
                emit(
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
            emit(self.options.out, "checkpoint", step=step)

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
            emit(self.options.out, "results_lost", steps=steps, step=progress.steps_done, reason="their worker is gone")
            return
        worker_process = worker_process.decode()
        if worker_process not in progress.steps_by_worker_process:
            # A worker process's first steps: at the start, or a replaced worker rejoining.
            emit(self.options.out, "worker_joined", worker=worker_process, step=progress.steps_done)
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


def summary(
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
