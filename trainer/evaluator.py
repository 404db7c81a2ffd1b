"""The evaluator: TensorFlow's side-car evaluation, one task outside the training cluster.

It follows the chief's checkpoints and evaluates each new one on a held-out synthetic set
(trainer/data.py), on its own CPU: the model is built here, unsharded, and each checkpoint is
read into it. A table the chief saved in N shards over the PS restores into the one local
variable, since TensorFlow saves a sharded variable as slices of the whole
(tests/trainer/test_evaluator.py). It joins no cluster and serves nothing, so the chief waits
for nothing of it; it never writes into the checkpoint folder (read-only in a pod but for
TensorBoard's folder), and exits 0 once it has evaluated the checkpoint of the final step. With
tfk8s:tensorboard it writes each `eval_loss` as a scalar of run `eval`, beside the chief's run
`train`. SIGTERM ends it at once wherever it is (trainer/termination.py).
"""

from __future__ import annotations

import dataclasses
import os
import re
import sys
import threading
from dataclasses import dataclass
from typing import Mapping, Optional, TextIO

import tensorflow as tf

from .cluster import TaskConfig
from .data import evaluation_examples
from .devices import log_devices
from .log_lines import evaluation_event, evaluation_line
from .model import SparseModel
from .scalars import EVAL_RUN, ScalarWriter, scalar_writer
from .settings import TrainerSettings
from .shared_names import CHECKPOINT_DIR_ENV

# Between two looks at the checkpoint folder. The chief checkpoints every `checkpointEvery` steps,
# seconds apart at the very least; a look reads one small file (the `checkpoint` state file).
POLL_S = 3.0

EXIT_BAD_SETUP = 2

LOCAL_CPU = "/device:CPU:0"  # this process's own CPU, whatever job its eager context has

_CHECKPOINT_STEP = re.compile(r"-(\d+)$")

# A checkpoint that cannot be read (yet): TensorFlow's errors, and its reader's IndexError ("Read
# less bytes than requested") on a data file cut short.
UNREADABLE = (tf.errors.OpError, IndexError)
EXIT_MISMATCH = 1


class EvaluatorSetupError(ValueError):
    pass


class CheckpointMismatch(ValueError):
    """A checkpoint whose variables are not this model's: settings other than the chief's."""


@dataclass(frozen=True)
class Evaluation:
    step: int
    eval_loss: float
    checkpoint: str


def checkpoint_dir_of(settings: TrainerSettings, environ: Mapping[str, str] = os.environ) -> str:
    """Where the chief writes its checkpoints, as the chief's settings say."""
    if not settings.checkpoint_every:
        raise EvaluatorSetupError("checkpointEvery is 0: the chief writes no checkpoint, there is nothing to evaluate")
    if settings.checkpoint_dir != "default":
        return settings.checkpoint_dir
    if environ.get(CHECKPOINT_DIR_ENV):
        return environ[CHECKPOINT_DIR_ENV]
    raise EvaluatorSetupError(
        "checkpointDir is 'default', the chief's own scratch folder, which no other task can read: give a "
        f"checkpointDir (or cluster.chief.checkpointVolume), or set {CHECKPOINT_DIR_ENV}"
    )


def listed_checkpoints(directory: str) -> list[str]:
    """The checkpoints the chief's CheckpointManager lists, oldest first, under `directory`.

    Its `checkpoint` state file is replaced whole, and only once a checkpoint's files are written.
    The listed paths are as the chief saw them; their file names are taken under this task's own
    path of the folder (a volume may be mounted elsewhere here).
    """
    state = tf.train.get_checkpoint_state(directory)
    if state is None:
        return []
    return [os.path.join(directory, os.path.basename(path)) for path in state.all_model_checkpoint_paths]


def checkpoint_step(path: str) -> Optional[int]:
    """The step of a checkpoint the chief wrote (`ckpt-<step>`); None for another name."""
    match = _CHECKPOINT_STEP.search(path)
    return int(match[1]) if match else None


class Evaluator:
    """The local model, the held-out set, and the steps already evaluated."""

    def __init__(
        self,
        settings: TrainerSettings,
        directory: str,
        name: str = "evaluator-0",
        scalars: Optional[ScalarWriter] = None,
    ) -> None:
        self.settings = settings
        self.directory = directory
        self.name = name
        # tfk8s:tensorboard: each evaluation's eval_loss, as the chief writes its loss.
        self.scalars = scalars
        self.evaluated_step = -1
        self._unreadable: set[str] = set()  # said once each
        with tf.device(LOCAL_CPU):
            # It never trains: without the optimizer's slots (sgd has none) it holds, and reads, the
            # table once instead of two or three times; the checkpoint's slots are left unread.
            self.model = SparseModel(dataclasses.replace(settings, optimizer="sgd"))
            self.ids, self.labels = evaluation_examples(settings)
        self._checkpoint = tf.train.Checkpoint(model=self.model)
        self._summed_loss = tf.function(self._batch_loss_sum)

    def _batch_loss_sum(self, ids: tf.Tensor, labels: tf.Tensor) -> tf.Tensor:
        losses = tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=self.model(ids))
        return tf.reduce_sum(tf.cast(losses, tf.float64))

    def evaluate(self, path: str) -> Evaluation:
        """Read checkpoint `path` (read only) into the model and measure its mean loss on the held-out set.

        Raises one of UNREADABLE where the checkpoint cannot be read (yet), CheckpointMismatch where
        it is not this model's.
        """
        with tf.device(LOCAL_CPU):
            try:
                status = self._checkpoint.read(path)
                status.assert_existing_objects_matched().expect_partial()  # the slots and the save counter
            except (ValueError, AssertionError) as error:
                raise CheckpointMismatch(
                    f"{path} does not hold this model (the evaluator takes the chief's settings): {error}"
                ) from None
            batch = self.settings.batch_size
            total = tf.constant(0.0, tf.float64)
            count = int(self.labels.shape[0])
            for start in range(0, count, batch):
                total += self._summed_loss(self.ids[start : start + batch], self.labels[start : start + batch])
        return Evaluation(int(self.model.step.numpy()), float(total) / count, path)

    def poll(self, out: TextIO = sys.stdout) -> list[Evaluation]:
        """Evaluate, oldest first, each listed checkpoint newer than the last evaluated.

        The chief keeps its last few checkpoints: one it removed before this evaluator got to it
        (it fell behind) is skipped. One that cannot be read yet is tried again at the next poll
        when it is the newest (still being written, or not yet visible on a remote filesystem);
        an older one the chief has moved past is skipped, saying so.
        """
        evaluations = []
        listed = [(checkpoint_step(path), path) for path in listed_checkpoints(self.directory)]
        newer = sorted((step, path) for step, path in listed if step is not None and step > self.evaluated_step)
        for position, (step, path) in enumerate(newer):
            try:
                evaluation = self.evaluate(path)
            except UNREADABLE as error:
                newest = position == len(newer) - 1
                if newest and path not in self._unreadable:
                    self._unreadable.add(path)
                    self._say(f"cannot read {path} yet ({type(error).__name__}); trying again", out)
                if newest:
                    break
                self._say(f"skipping {path}, which cannot be read: {type(error).__name__}", out)
                self.evaluated_step = step
                continue
            self.evaluated_step = step
            evaluations.append(evaluation)
            print(evaluation_line(evaluation.step, evaluation.eval_loss), file=out, flush=True)
            print(evaluation_event(evaluation.step, evaluation.eval_loss, path), file=out, flush=True)
            if self.scalars is not None:
                self.scalars.write(evaluation.step, {"eval_loss": evaluation.eval_loss})
        return evaluations

    @property
    def finished(self) -> bool:
        return self.evaluated_step >= self.settings.steps

    def run(self, out: TextIO = sys.stdout, stop: Optional[threading.Event] = None, poll_s: float = POLL_S) -> int:
        """Evaluate checkpoints as they come; 0 once the final step's is evaluated (or `stop` is set)."""
        stop = stop or threading.Event()
        self._say(f"waiting for checkpoints in {self.directory} (every {poll_s:g} s)", out)
        while not stop.is_set():
            self.poll(out)
            if self.finished:
                self._say(f"evaluated the checkpoint of the final step {self.settings.steps}; done", out)
                return 0
            stop.wait(poll_s)
        return 0

    def _say(self, line: str, out: TextIO) -> None:
        print(f"{self.name}: {line}", file=out, flush=True)


def main(task: TaskConfig, settings: TrainerSettings, environ: Mapping[str, str] = os.environ) -> int:
    log_devices(task.name)
    try:
        directory = checkpoint_dir_of(settings, environ)
    except EvaluatorSetupError as error:
        print(f"{task.name}: {error}", file=sys.stderr, flush=True)
        return EXIT_BAD_SETUP
    try:
        return Evaluator(settings, directory, task.name, scalar_writer(EVAL_RUN)).run()
    except CheckpointMismatch as error:
        print(f"{task.name}: {error}", file=sys.stderr, flush=True)
        return EXIT_MISMATCH
