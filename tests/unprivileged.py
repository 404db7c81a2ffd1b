"""`python -m components` as a user without root runs it, so a read-only folder refuses its writes.

root writes into read-only folders through the CAP_DAC_OVERRIDE capability; the
command here runs without it (dropped from the bounding set before the exec),
so the kernel refuses it exactly as it refuses any user's write. Run as another
user, dropping nothing changes nothing.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
from pathlib import Path

from tests.harness import PROJECT_ROOT

_PR_CAPBSET_DROP = 24
_CAP_DAC_OVERRIDE = 1
_CAP_DAC_READ_SEARCH = 2


def _drop_file_override() -> None:
    if os.geteuid() != 0:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH):
        if libc.prctl(_PR_CAPBSET_DROP, capability, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "cannot drop root's override of file permissions")


def run_python(*args: str, cwd: Path = PROJECT_ROOT) -> subprocess.CompletedProcess:
    """`python ARGS` without root's override of file permissions; its exit code, stdout and stderr."""
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120,
        preexec_fn=_drop_file_override,
    )


def read_only(folder: Path) -> None:
    """`folder` and everything under it: no one may write there (r-x for folders, r-- for files)."""
    for path in [*folder.rglob("*"), folder]:
        path.chmod(0o555 if path.is_dir() else 0o444)
