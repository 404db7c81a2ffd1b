"""The shell that starts each task's program with tfk8s:logs (task_shell.LOG_FORWARDER), run
with the real shipper and collector on 127.0.0.1: the program's output reaches the container's
output and the archive, whole, even from a program that ends at once; it exits with the program's
status, also where the image's python3 leaves the shipper's folder off sys.path; SIGTERM and SIGUSR1
reach the program and what it says on them is archived; without python3 the program runs as without
tfk8s:logs. As a pod's PID 1 on real nodes:
tests/realpods/test_logs.py."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from components.objects.task_shell import FORWARDER_NAME, LOG_FORWARDER, SCRATCH_LOG_PIPE, SHIPPER_PATH, SHIPPER_WAIT_S
from tests.objects.test_log_archive_scripts import (  # noqa: F401 (fixtures)
    PATIENCE_S,
    SHIPPER,
    archive,
    eventually,
    pod_folder,
    processes,
    shipper_env,
    start_collector,
)
from tests.objects.test_signal_forwarder import HANDLES_TERM, SHELLS
from trainer import log_protocol
from trainer.log_shipper import DRAIN_S


@pytest.fixture(params=list(SHELLS))
def shell(request) -> list[str]:
    shell = SHELLS[request.param]
    if shutil.which(shell[0]) is None:
        pytest.skip(f"{shell[0]} is not installed here")
    return shell


def forwarder(shell: list[str], folder: Path, shipper: Path = SHIPPER) -> list[str]:
    """The script with the pod's paths (the scratch folder, the shipper's mount) in `folder` and here."""
    script = LOG_FORWARDER.replace(SCRATCH_LOG_PIPE, str(folder / "pipe")).replace(SHIPPER_PATH, str(shipper))
    return [*shell, "-c", script, FORWARDER_NAME]


def archived(collector, task: str = "ps-0") -> bytes:
    return collector.latest(task)


def test_the_shell_waits_for_the_shipper_longer_than_the_shipper_drains():
    """Once the program ended the shipper still copies what a left-behind child writes, for DRAIN_S;
    the shell's bounded wait for it must outlast that, or it kills a shipper still sending."""
    assert SHIPPER_WAIT_S > DRAIN_S
    assert f'(sleep {SHIPPER_WAIT_S} && kill -KILL "$shipper")' in LOG_FORWARDER


def test_the_output_reaches_the_container_and_the_archive_and_the_status_is_the_programs(
    shell, tmp_path, start_collector
):
    collector = start_collector()
    program = [sys.executable, "-c", "import sys; print('to stdout'); print('to stderr', file=sys.stderr); sys.exit(3)"]
    done = subprocess.run(
        [*forwarder(shell, tmp_path), *program],
        capture_output=True,
        env=shipper_env(collector.ingest_port),
        timeout=PATIENCE_S,
    )
    assert done.returncode == 3
    assert sorted(done.stdout.splitlines()) == [b"to stderr", b"to stdout"]
    eventually(lambda: sorted(archived(collector).splitlines()) == [b"to stderr", b"to stdout"], "archived")
    assert not (tmp_path / "pipe").exists(), "the pipe is removed"


@pytest.mark.parametrize("start", ["PYTHONSAFEPATH=1", "-I"])
def test_a_python3_that_leaves_the_scripts_folder_off_sys_path_still_ships_the_output(
    shell, tmp_path, start_collector, start
):
    """A team's image (or its tfk8s:program.env) may set PYTHONSAFEPATH=1, or its python3 may run
    isolated (-I): neither puts the shipper's folder, where log_protocol.py lies, on sys.path. The
    shipper runs from a folder holding only its files of the ConfigMap, as from its mount in a pod;
    were it to die, the program would end of SIGPIPE (141) with its output lost."""
    collector = start_collector()
    shipper = pod_folder(tmp_path / "code", log_protocol.SHIPPER_FILES) / log_protocol.SHIPPER
    image_bin = tmp_path / "bin"
    image_bin.mkdir()
    isolated = " -I" if start == "-I" else ""
    (image_bin / "python3").write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)}{isolated} "$@"\n')
    (image_bin / "python3").chmod(0o755)
    env = shipper_env(collector.ingest_port)
    env["PATH"] = f"{image_bin}:{env.get('PATH', '/usr/bin:/bin')}"
    if start == "PYTHONSAFEPATH=1":
        env["PYTHONSAFEPATH"] = "1"
    program = [sys.executable, "-c", "import sys; print('to stdout'); print('to stderr', file=sys.stderr); sys.exit(3)"]
    done = subprocess.run(
        [*forwarder(shell, tmp_path, shipper), *program], capture_output=True, env=env, timeout=PATIENCE_S
    )
    assert (done.returncode, sorted(done.stdout.splitlines())) == (3, [b"to stderr", b"to stdout"]), done.stderr
    assert done.stderr == b""
    eventually(lambda: sorted(archived(collector).splitlines()) == [b"to stderr", b"to stdout"], "archived")


@pytest.mark.parametrize("attempt", range(5))
def test_a_program_that_ends_at_once_still_has_its_line_archived(shell, tmp_path, start_collector, attempt):
    """Repeated: the shipper must not die of the USR1 that says the program ended, even before it set
    its handler."""
    collector = start_collector()
    env = shipper_env(collector.ingest_port, pod=f"pod-{attempt}")
    done = subprocess.run([*forwarder(shell, tmp_path), "echo", "hi"], capture_output=True, env=env, timeout=PATIENCE_S)
    assert (done.returncode, done.stdout) == (0, b"hi\n"), done.stderr
    eventually(lambda: archived(collector) == b"hi\n", "archived")


def test_sigterm_reaches_the_program_and_its_last_words_are_archived(shell, tmp_path, start_collector):
    collector = start_collector()
    started = subprocess.Popen(
        [*forwarder(shell, tmp_path), sys.executable, "-c", HANDLES_TERM],
        stdout=subprocess.PIPE,
        env=shipper_env(collector.ingest_port),
    )
    try:
        assert started.stdout is not None and started.stdout.readline() == b"training\n"
        started.send_signal(signal.SIGTERM)
        assert started.wait(timeout=PATIENCE_S) == 7
        eventually(lambda: archived(collector) == b"training\nsaving a checkpoint\n", "archived")
    finally:
        started.kill()


FINISHES_ON_USR1 = (
    "import signal, sys, time\n"
    "finish = []\n"
    "signal.signal(signal.SIGUSR1, lambda *_: finish.append(1))\n"
    "print('training', flush=True)\n"
    "while not finish: time.sleep(0.05)\n"
    "print('finished early', flush=True)\n"
)


def test_sigusr1_reaches_the_program_as_the_trainers_chief_expects(shell, tmp_path, start_collector):
    collector = start_collector()
    started = subprocess.Popen(
        [*forwarder(shell, tmp_path), sys.executable, "-c", FINISHES_ON_USR1],
        stdout=subprocess.PIPE,
        env=shipper_env(collector.ingest_port, task_type="chief"),
    )
    try:
        assert started.stdout is not None and started.stdout.readline() == b"training\n"
        started.send_signal(signal.SIGUSR1)
        assert started.wait(timeout=PATIENCE_S) == 0
        eventually(lambda: archived(collector, "chief-0") == b"training\nfinished early\n", "archived")
    finally:
        started.kill()


def test_a_child_the_program_left_holding_the_pipe_keeps_the_container_a_bounded_while(
    shell, tmp_path, start_collector
):
    """The program ends at once, leaving a child that holds its output for ten minutes: the shell
    ends after the shipper's bounded wait, not the child's."""
    collector = start_collector()
    started = subprocess.Popen(
        [*forwarder(shell, tmp_path), "sh", "-c", "sleep 600 & echo started"],
        stdout=subprocess.PIPE,
        env=shipper_env(collector.ingest_port),
        start_new_session=True,
    )
    try:
        assert started.wait(timeout=PATIENCE_S) == 0
        eventually(lambda: archived(collector) == b"started\n", "archived")
    finally:
        os.killpg(started.pid, signal.SIGKILL)  # the left child, in the shell's session
        started.wait()


def test_an_older_python3_is_not_used_and_the_program_runs_as_without_logs(shell, tmp_path):
    old = tmp_path / "bin"
    old.mkdir()
    (old / "python3").write_text("#!/bin/sh\nexit 1\n")  # as Python 3.6 answers the version check
    (old / "python3").chmod(0o755)
    done = subprocess.run(
        [*forwarder(shell, tmp_path), "/bin/sh", "-c", "echo hi; exit 4"],
        capture_output=True,
        env={"PATH": f"{old}:/usr/bin:/bin"},
        timeout=PATIENCE_S,
    )
    assert (done.returncode, done.stdout) == (4, b"hi\n")
    assert done.stderr.count(b"tfk8s:") == 1 and b"3.8" in done.stderr


def test_without_python3_the_program_runs_as_without_logs_and_says_so(shell, tmp_path):
    shell_path = shutil.which(shell[0])
    assert shell_path is not None
    done = subprocess.run(
        [shell_path, *shell[1:], *forwarder(shell, tmp_path)[len(shell) :], "/bin/sh", "-c", "echo hi; exit 4"],
        capture_output=True,
        env={"PATH": str(tmp_path / "nothing")},
        timeout=PATIENCE_S,
    )
    assert (done.returncode, done.stdout) == (4, b"hi\n")
    assert done.stderr.count(b"tfk8s:") == 1 and b"not archived" in done.stderr
