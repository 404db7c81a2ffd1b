"""The local cluster's processes: started each in its own process group, recorded, and stopped by
group (never by name); tied to the Python process that started them when asked, so an interrupted
test leaves nothing behind; waited for until ready, or until one of them exits."""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Callable, Optional

from components.spec.atomic_files import write_text_atomic

from . import paths

READY_TIMEOUT_S = 60.0


STOP_GRACE_S = 10.0


_PR_SET_PDEATHSIG = 1


class ClusterError(RuntimeError):
    pass


def _die_with_parent() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _executable(pid: int) -> Optional[str]:
    """The binary the PID runs, or None where no such process is (or it is a zombie)."""
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return None


def is_ours(pid: int) -> bool:
    """The PID still runs one of our binaries (not a reused PID)."""
    executable = _executable(pid)
    if executable is None:
        return False
    return executable.startswith(str(paths.TOOLS_BIN)) or executable in paths.SYSTEM_BINARIES.values()


def runs_a_node_binary(pid: int) -> bool:
    """The PID runs a real node's binary from any checkout's toolchain (another checkout's
    cluster is no less alive for running binaries other than ours)."""
    executable = _executable(pid)
    node_binaries = {*paths.REAL_NODE_BINARIES, *(Path(b).name for b in paths.SYSTEM_BINARIES.values())}
    return executable is not None and Path(executable).name in node_binaries


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def stop_processes(processes: dict[str, int]) -> list[str]:
    """SIGTERM each process group, SIGKILL what is left after a grace period; names stopped.

    A recorded PID that now runs something else (reused after our process
    ended) is left alone. The binaries do not fork, so the group leader is the
    whole group.
    """
    signalled: dict[str, int] = {}
    # Reverse start order: nodes and controllers first, etcd last.
    for name, pgid in reversed(list(processes.items())):
        _reap(pgid)
        if group_alive(pgid) and is_ours(pgid):
            os.killpg(pgid, signal.SIGTERM)
            signalled[name] = pgid
    deadline = time.monotonic() + STOP_GRACE_S
    for pgid in signalled.values():
        while group_alive(pgid) and time.monotonic() < deadline:
            _reap(pgid)
            time.sleep(0.1)
        if group_alive(pgid):
            os.killpg(pgid, signal.SIGKILL)
        _reap(pgid)
    return list(signalled)


def _reap(pid: int) -> None:
    """Collect our own exited child, so it does not linger as a zombie."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def wait_until(check: Callable[[], bool], what: str, launcher: "Launcher", timeout_s: float = READY_TIMEOUT_S) -> None:
    """Poll `check` until it holds; ClusterError when a started process exits first or time runs out."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for name, pid in launcher.processes.items():
            if not group_alive(pid) or _exited(pid):
                raise ClusterError(f"{name} exited during start-up; see {launcher.where.log_dir / (name + '.log')}")
        if check():
            return
        time.sleep(0.25)
    raise ClusterError(f"{what} not ready after {timeout_s:.0f} s; logs in {launcher.where.log_dir}")


def _exited(pid: int) -> bool:
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        return done == pid
    except ChildProcessError:
        return False


def start_record(where: paths.ClusterDir, name: str) -> Path:
    """Where the Launcher keeps how it started process `name`: its arguments and extra environment."""
    return where.log_dir / f"{name}.start.json"


class Launcher:
    """Starts processes of the control plane and remembers them for cleanup."""

    def __init__(
        self,
        where: paths.ClusterDir,
        tie_to_parent: bool,
        record: Callable[[dict[str, int]], None] = lambda started: None,
    ) -> None:
        """`record` is handed every process started so far, after each start: a start killed
        outright (SIGKILL, a session's end) leaves on disk every process that `down` must stop."""
        self.where = where
        self.tie_to_parent = tie_to_parent
        self.record = record
        self.processes: dict[str, int] = {}

    def start(
        self, name: str, args: list[str], executable: Optional[Path] = None, env: Optional[dict[str, str]] = None
    ) -> int:
        """Start `executable` (default: the toolchain's binary `name`) logging to logs/<name>.log; its PID.
        How it was started is kept beside its log (logs/<name>.start.json), for `restart`."""
        argv = [str(executable or paths.binary(name)), *args]
        write_text_atomic(start_record(self.where, name), json.dumps({"argv": argv, "env": env or {}}))
        return self._run(name, argv, env, "wb")

    def restart(self, name: str) -> int:
        """Start `name` again exactly as `start` did (after it was stopped), logging after its earlier log."""
        started_as = json.loads(start_record(self.where, name).read_text())
        return self._run(name, started_as["argv"], started_as["env"], "ab")

    def _run(self, name: str, argv: list[str], env: Optional[dict[str, str]], log_mode: str) -> int:
        log = open(self.where.log_dir / f"{name}.log", log_mode)
        try:
            process = subprocess.Popen(
                argv,
                env={**os.environ, **env} if env else None,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.where.root,
                start_new_session=True,  # its own process group: stopped by group
                preexec_fn=_die_with_parent if self.tie_to_parent else None,
            )
        finally:
            log.close()
        self.processes[name] = process.pid
        self.record(dict(self.processes))
        return process.pid
