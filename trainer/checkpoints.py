"""Checkpoints are written and read by the chief alone (TensorFlow's experimental_io_device),
retried while a PS cannot call the chief back yet; a failure is a CheckpointError, not a lost PS."""

from __future__ import annotations

import functools
import time
from typing import Any, Callable, Optional

import tensorflow as tf

from .cluster import ps_named_in
from .failures import PS_CONNECTION_FAILURES, CheckpointError

# Where checkpoints are written and read: the chief's own CPU, so its own filesystem.
CHECKPOINT_IO_DEVICE = "/job:chief/replica:0/task:0/device:CPU:0"

# Checkpoint I/O goes through the chief (experimental_io_device), so each PS calls the chief
# back. Right after the chief's pod or container (re)starts, a PS's channel to it can still be
# in gRPC's reconnect back-off (peers.py) and fail such a call at once: seen on
# real pods as a chief crash-looping on its restore. It is transient, so the chief retries.
CHIEF_UNREACHED_RETRY_S = 15.0
CHIEF_UNREACHED = "remote target /job:chief/"


def _checkpoint_io(action: str, directory: str, operation: Callable[[], Any]) -> Any:
    """Run a save or restore; a PS lost meanwhile is still a lost PS, anything else a CheckpointError."""
    deadline = time.monotonic() + CHIEF_UNREACHED_RETRY_S
    while True:
        try:
            return operation()
        except PS_CONNECTION_FAILURES as error:
            if CHIEF_UNREACHED in str(error) and time.monotonic() < deadline:
                print(f"chief: a PS cannot reach the chief yet to {action}; retrying", flush=True)
                time.sleep(1.0)
                continue
            if ps_named_in(str(error)) is None:
                raise CheckpointError(action, directory, error) from None
            raise
        except tf.errors.OpError as error:
            raise CheckpointError(action, directory, error) from None


def restore_latest(manager: tf.train.CheckpointManager) -> Optional[str]:
    """Restore the newest checkpoint, read by the chief; its path, or None for a fresh start."""
    latest = manager.latest_checkpoint
    if latest is None:
        return None
    _checkpoint_io("restore the checkpoint", latest, lambda: manager.checkpoint.restore(latest, options=_io_options()))
    return latest


def save(manager: tf.train.CheckpointManager, step: int) -> str:
    """Write checkpoint `step` from the chief; its path."""
    return _checkpoint_io(
        f"write the checkpoint of step {step} to",
        manager.directory,
        lambda: manager.save(checkpoint_number=step, options=_io_options()),
    )


@functools.lru_cache(maxsize=1)
def _io_options() -> tf.train.CheckpointOptions:
    # One object for every save: the saver traces its save function again for each new options object.
    return tf.train.CheckpointOptions(experimental_io_device=CHECKPOINT_IO_DEVICE)
