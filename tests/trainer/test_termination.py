"""A task stops at once on SIGTERM, also as PID 1, as it runs in a pod.

The kernel drops a signal sent to a PID namespace's first process unless that
process handles it, so outside a container a task would die of SIGTERM's
default action and hide the defect; here it runs as PID 1 of a new PID
namespace (`unshare`), as in a pod.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from tests.trainer.conftest import PROJECT_ROOT

STOP_WITHIN_S = 5.0


def _address() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{probe.getsockname()[1]}"


def _read_until(stream, marker: str, timeout_s: float) -> list[str]:
    lines: list[str] = []
    found = threading.Event()

    def read() -> None:
        for line in stream:
            lines.append(line)
            if marker in line:
                found.set()
                return

    threading.Thread(target=read, daemon=True).start()
    assert found.wait(timeout_s), f"no '{marker}' in {lines}"
    return lines


@pytest.mark.skipif(os.geteuid() != 0, reason="a new PID namespace needs root")
@pytest.mark.parametrize("role", ["ps", "worker"])
def test_a_task_running_as_pid_1_exits_promptly_on_sigterm(role, tmp_path):
    cluster = {"chief": [_address()], "ps": [_address()], "worker": [_address()]}
    environ = {
        **os.environ,
        "TF_CONFIG": json.dumps({"cluster": cluster, "task": {"type": role, "index": 0}}),
        "PYTHONPATH": str(PROJECT_ROOT),
    }
    task = subprocess.Popen(
        ["unshare", "--pid", "--fork", "--kill-child", sys.executable, "-m", "trainer"],
        cwd=tmp_path,
        env=environ,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _read_until(task.stdout, "serving on", timeout_s=60)
        trainer_pid = int(open(f"/proc/{task.pid}/task/{task.pid}/children").read().split()[0])
        with open(f"/proc/{trainer_pid}/status") as status:
            namespace_pids = next(line for line in status if line.startswith("NSpid:")).split()[1:]
        assert namespace_pids[-1] == "1", "the task is PID 1 in its namespace, as in a container"

        sent = time.monotonic()
        os.kill(trainer_pid, signal.SIGTERM)
        code = task.wait(timeout=30)
        assert time.monotonic() - sent < STOP_WITHIN_S
        assert code == 128 + signal.SIGTERM
        assert f"{role}-0: stopping on SIGTERM" in task.stderr.read()
    finally:
        if task.poll() is None:
            task.kill()  # --kill-child takes the task with it
            task.wait()


def test_the_chief_is_asked_to_finish_by_sigusr1_and_still_stops_on_sigterm(tmp_path):
    """SIGUSR1 calls the chief's finish hook (as often as it comes) and ends nothing; SIGTERM still exits."""
    program = (
        "import os, signal, sys, threading, time\n"
        "from trainer.termination import exit_on_termination\n"
        "asked = []\n"
        "exit_on_termination('chief-0', on_finish=lambda: asked.append(1))\n"
        "threading.Thread(target=lambda: [time.sleep(0.05) or print(len(asked), flush=True) for _ in iter(int, 1)],"
        " daemon=True).start()\n"
        "time.sleep(120)\n"
    )
    task = subprocess.Popen(
        [sys.executable, "-c", program], cwd=PROJECT_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        _read_until(task.stdout, "0", timeout_s=30)
        for times in (1, 2):
            task.send_signal(signal.SIGUSR1)
            _read_until(task.stdout, str(times), timeout_s=10)
        assert task.poll() is None, "asked to finish, it goes on until the chief has finished"
        task.send_signal(signal.SIGTERM)
        assert task.wait(timeout=10) == 128 + signal.SIGTERM
        said = task.stderr.read()
        assert said.count("chief-0: finishing early on SIGUSR1") == 2 and "chief-0: stopping on SIGTERM" in said
    finally:
        if task.poll() is None:
            task.kill()
            task.wait()
