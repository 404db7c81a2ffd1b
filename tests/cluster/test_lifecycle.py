"""The local cluster leaves no process behind: after `down`, a failed start, or a killed parent."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from tools.localcluster import control_plane, paths
from tools.localcluster.control_plane import ControlPlane
from tools.localcluster.processes import ClusterError

LIFECYCLE = paths.ClusterDir(paths.CLUSTER_ROOT / "tests-lifecycle")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie has exited: it only waits for its parent to collect it.
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0] != "Z"


def wait_dead(pids, timeout_s: float = 15.0) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and any(alive(pid) for pid in pids):
        time.sleep(0.2)
    return [pid for pid in pids if alive(pid)]


def test_down_stops_every_process_it_started():
    plane = control_plane.up(LIFECYCLE)
    pids = list(plane.processes.values())
    try:
        # etcd, API server, controller manager, scheduler, kwok, JobSet's and Kueue's controllers
        assert len(pids) == 7 and all(alive(pid) for pid in pids)
        stopped = control_plane.down(LIFECYCLE)
        assert sorted(stopped) == sorted(plane.processes)
        assert wait_dead(pids) == []
        assert control_plane.down(LIFECYCLE) == []  # a second down has nothing to stop
    finally:
        control_plane.down(LIFECYCLE)


def test_a_failed_start_stops_what_it_started(monkeypatch):
    # The API server's port is taken: it exits, and etcd, already running, must go too.
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    real_free_port = control_plane.free_port
    ports = iter([real_free_port(), real_free_port(), taken.getsockname()[1]])
    monkeypatch.setattr(control_plane, "free_port", lambda *band: next(ports, None) or real_free_port(*band))
    try:
        with pytest.raises(ClusterError, match="kube-apiserver exited during start-up"):
            control_plane.up(LIFECYCLE)
        state = ControlPlane.load(LIFECYCLE)
        assert set(state.processes) == {"etcd", "kube-apiserver"}
        assert wait_dead(state.processes.values()) == []
    finally:
        taken.close()
        control_plane.down(LIFECYCLE)


def test_a_killed_parent_takes_its_cluster_with_it(tmp_path):
    # What an interrupted test run does: the Python process that started the cluster dies at once.
    script = (
        "import json, sys, time\n"
        "from tools.localcluster import control_plane, paths\n"
        "plane = control_plane.up(paths.ClusterDir(paths.CLUSTER_ROOT / 'tests-orphan'), tie_to_parent=True)\n"
        "print(json.dumps(list(plane.processes.values())), flush=True)\n"
        "time.sleep(600)\n"
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", script], cwd=paths.PROJECT_ROOT, stdout=subprocess.PIPE, text=True
    )
    try:
        line = parent.stdout.readline()
        pids = [int(pid) for pid in line.strip("[]\n").split(",")]
        assert all(alive(pid) for pid in pids)
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=10)
        assert wait_dead(pids) == []
    finally:
        parent.kill()
        control_plane.down(paths.ClusterDir(paths.CLUSTER_ROOT / "tests-orphan"))


def processes_naming(folder, but: int) -> list[int]:
    """PIDs but `but`'s whose command line names `folder` (every process of a local cluster does)."""
    marker = str(folder).encode()
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) not in (os.getpid(), but):
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                    if marker in cmdline.read():
                        found.append(int(entry))
            except OSError:
                continue
    return found


def test_a_start_killed_outright_leaves_every_started_process_to_down():
    """`make cluster-up` outlives its command, so nothing ties its processes to it: a start killed
    outright (SIGKILL, a session's end) between two processes must already have recorded the first."""
    where = paths.ClusterDir(paths.CLUSTER_ROOT / "tests-killed-start")
    script = (
        "from pathlib import Path\n"
        "from tools.localcluster import control_plane, paths\n"
        f"control_plane.up(paths.ClusterDir(Path({str(where.root)!r})))\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", script], cwd=paths.PROJECT_ROOT)
    try:
        deadline = time.monotonic() + 60
        while not (first := processes_naming(where.root, but=parent.pid)):
            assert parent.poll() is None and time.monotonic() < deadline, "no process of the cluster started"
            time.sleep(0.05)
        # Recorded as it starts: well before the next process, and the whole start, follows.
        deadline = time.monotonic() + 2
        while (state := ControlPlane.load(where)) is None or not set(first) <= set(state.processes.values()):
            assert time.monotonic() < deadline, f"{first} running, not in the cluster's state"
            time.sleep(0.05)
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=10)
        control_plane.down(where)
        assert wait_dead(processes_naming(where.root, but=parent.pid)) == []
    finally:
        parent.kill()
        control_plane.down(where)
