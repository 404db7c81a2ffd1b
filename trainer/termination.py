"""Every task exits at once on SIGTERM or SIGINT, whatever it is doing; the chief finishes
early on SIGUSR1 (no TensorFlow here).

In a pod the trainer is PID 1, and the kernel drops a signal sent to PID 1
unless it has a handler for it, so without this every `kubectl delete pod`
waited out the whole grace period (30 s) while the task went on serving. A
Python handler is not enough either: PS and workers spend their lives inside
TensorFlow's C++ `join()`, where Python handlers never run. So the signals are
blocked in every thread (threads started later inherit the mask) and one
thread waits for them with sigwait, which works while the main thread is busy
anywhere (a blocked signal is never dropped, not even for PID 1).

SIGUSR1 asks the chief to finish now instead of at `steps`: it schedules no
more steps, lets those in flight land, writes its checkpoint and its summary,
and exits 0, so the experiment succeeds with the model it has
(`kubectl exec <chief pod> -- kill -USR1 1`).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from typing import Callable, Optional

TERMINATION_SIGNALS = (signal.SIGTERM, signal.SIGINT)
FINISH_SIGNAL = signal.SIGUSR1


def exit_on_termination(
    name: str,
    exit_now: Callable[[int], None] = os._exit,
    on_finish: Optional[Callable[[], None]] = None,
) -> threading.Thread:
    """Call before TensorFlow starts any thread. On a termination signal, say so and
    exit with 128 + the signal number, as a shell reports a process a signal ended.
    With `on_finish`, SIGUSR1 calls it (as often as it comes) instead of ending the task."""
    handled = TERMINATION_SIGNALS + ((FINISH_SIGNAL,) if on_finish else ())
    signal.pthread_sigmask(signal.SIG_BLOCK, handled)

    def wait() -> None:
        while True:
            received = signal.sigwait(handled)
            if received == FINISH_SIGNAL and on_finish is not None:
                print(f"{name}: finishing early on {signal.Signals(received).name}", file=sys.stderr, flush=True)
                on_finish()
                continue
            print(f"{name}: stopping on {signal.Signals(received).name}", file=sys.stderr, flush=True)
            sys.stdout.flush()
            exit_now(128 + received)

    thread = threading.Thread(target=wait, name="termination", daemon=True)
    thread.start()
    return thread
