"""How the chief tells a lost parameter server from its own failures, and the exit codes it says so with."""

from __future__ import annotations

import re
from typing import Optional

import tensorflow as tf

EXIT_PS_LOST = 3
EXIT_CHECKPOINT_FAILED = 4

# What a lost PS looks like to the chief: unreachable or cut off mid-call, or,
# once restarted, an empty server whose variables are missing (NotFound) or
# uninitialized (FailedPrecondition). Counted only when the error names a PS,
# and never for checkpoint I/O, which is told apart where it happens.
PS_CONNECTION_FAILURES = (tf.errors.UnavailableError, tf.errors.AbortedError, tf.errors.CancelledError)
PS_FAILURES = (*PS_CONNECTION_FAILURES, tf.errors.FailedPreconditionError, tf.errors.NotFoundError)


# What TensorFlow wraps a failed op's own message in: where in the program the op was defined, the
# op's name and a hint that fits one error of many (an OOM hint on a full disk).
_TF_CONTEXT = re.compile(r"^\s*(Graph execution error:|Detected at node|File \"|\[\[|\[Op:|Hint: )")


def describe_cause(cause: Exception) -> str:
    """TensorFlow's own message, without the context it wraps it in (its first line is often only
    "Graph execution error:"): `ResourceExhaustedError: /checkpoints/...; No space left on device`."""
    text = getattr(cause, "message", None) or str(cause)
    said = [line.strip() for line in text.splitlines() if line.strip() and not _TF_CONTEXT.match(line)]
    return f"{type(cause).__name__}: {' '.join(said) or text.strip()}"


class PsLostError(RuntimeError):
    def __init__(self, index: Optional[int], address: Optional[str], cause: Exception) -> None:
        who = f"ps-{index} ({address})" if index is not None else "a parameter server"
        super().__init__(f"{who} is unreachable: {describe_cause(cause)}")


class CheckpointError(RuntimeError):
    """A checkpoint could not be written or read: not a lost server."""

    def __init__(self, action: str, directory: str, cause: Exception) -> None:
        super().__init__(f"could not {action} {directory}: {describe_cause(cause)}")


def is_ps_failure(error: Exception) -> bool:
    return "/job:ps" in str(error)
