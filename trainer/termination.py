"""Every task exits at once on SIGTERM or SIGINT, whatever it is doing (no TensorFlow here).

In a pod the trainer is PID 1, and the kernel drops a signal sent to PID 1
unless it has a handler for it, so without this every `kubectl delete pod`
waited out the whole grace period (30 s) while the task went on serving. A
Python handler is not enough either: PS and workers spend their lives inside
TensorFlow's C++ `join()`, where Python handlers never run. So the signals are
blocked in every thread (threads started later inherit the mask) and one
thread waits for them with sigwait, which works while the main thread is busy
anywhere.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from typing import Callable

TERMINATION_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def exit_on_termination(name: str, exit_now: Callable[[int], None] = os._exit) -> threading.Thread:
    """Call before TensorFlow starts any thread. On a termination signal, say so and
    exit with 128 + the signal number, as a shell reports a process a signal ended."""
    signal.pthread_sigmask(signal.SIG_BLOCK, TERMINATION_SIGNALS)

    def wait() -> None:
        received = signal.sigwait(TERMINATION_SIGNALS)
        print(f"{name}: stopping on {signal.Signals(received).name}", file=sys.stderr, flush=True)
        sys.stdout.flush()
        exit_now(128 + received)

    thread = threading.Thread(target=wait, name="termination", daemon=True)
    thread.start()
    return thread
