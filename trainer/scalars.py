"""The chief's figures as TensorBoard event files (tfk8s:tensorboard).

Written with TensorFlow's own summary op and the scalars plugin's metadata, which is all
`tf.summary.scalar` adds: the trainer's image needs no TensorBoard package (TensorFlow's wheel no
longer brings one), and TensorBoard reads them as any scalar.
"""

from __future__ import annotations

import os
from typing import Mapping, Optional

import tensorflow as tf
from tensorflow.core.framework import summary_pb2

from .shared_names import TENSORBOARD_DIR_ENV

SCALARS_PLUGIN = "scalars"
# Each writer's run: TensorBoard lists the folders under its log dir as runs.
TRAIN_RUN = "train"
EVAL_RUN = "eval"  # the evaluator's


class ScalarWriter:
    def __init__(self, log_dir: str) -> None:
        self.log_dir = log_dir
        # Made at the first point, not here: the file writer is a resource of the eager context
        # it is made in, and the chief's context becomes the training cluster's after start-up
        # (a writer made before is on a device that no longer exists).
        self._writer: Optional[tf.summary.SummaryWriter] = None
        self.failed = False
        self._metadata = summary_pb2.SummaryMetadata(
            plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name=SCALARS_PLUGIN)
        )

    def write(self, step: int, values: Mapping[str, float]) -> None:
        """One point per tag at `step`, on disk when this returns (TensorBoard reads it next). A
        folder it cannot write ends the scalars, said once, never the training."""
        if self.failed:
            return
        try:
            if self._writer is None:
                self._writer = tf.summary.create_file_writer(self.log_dir)
            with self._writer.as_default():
                for tag, value in values.items():
                    tf.summary.write(tag, tf.constant(float(value), tf.float32), step=step, metadata=self._metadata)
            self._writer.flush()
        except (tf.errors.OpError, OSError) as error:
            self.failed = True
            message = str(error).splitlines()[0] if str(error) else type(error).__name__
            print(f"tensorboard: cannot write scalars to {self.log_dir}: {message}; training goes on", flush=True)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()


def scalar_writer(run: str) -> Optional[ScalarWriter]:
    """A writer into `run` under the experiment's TensorBoard folder; None without tfk8s:tensorboard."""
    log_dir = os.environ.get(TENSORBOARD_DIR_ENV)
    return ScalarWriter(os.path.join(log_dir, run)) if log_dir else None
