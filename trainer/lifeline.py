"""A task the local launcher starts dies with the launcher (no TensorFlow here).

The launcher stops its tasks on success, failure, Ctrl-C and SIGTERM; a
launcher killed with SIGKILL cannot, so each task asks the kernel to kill it
when its parent goes (Linux's PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from typing import Mapping

# Set by the local launcher (trainer/local/) on the tasks it starts; never in pods.
LAUNCHER_PID_ENV = "TFK8S_LAUNCHER_PID"
_PR_SET_PDEATHSIG = 1


def die_with_launcher(environ: Mapping[str, str] = os.environ) -> None:
    """Tie this process to the launcher that started it. Linux only: elsewhere the
    launcher's own cleanup is all there is."""
    launcher = environ.get(LAUNCHER_PID_ENV)
    if not launcher or not sys.platform.startswith("linux"):
        return
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != int(launcher):  # the launcher was gone before the kernel knew to tell us
        os._exit(1)


def die_with_parent() -> None:
    """For a process the launcher starts that knows nothing of tfk8s (a team's program): run
    between fork and exec, so the kernel kills it when the launcher goes. Linux only."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
