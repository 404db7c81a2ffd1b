"""The shell that starts a team's program: it passes SIGTERM on, keeps the program's arguments
as given and exits with the program's status, under the shells images have as /bin/sh (dash on
Debian and Ubuntu, bash on UBI and Amazon Linux, busybox on Alpine; each where installed here:
`make test-shells`, which `make test-program` runs, installs busybox).
That it does so as a pod's PID 1, where the kernel drops a signal for a program that sets no
handler, is tests/realpods/test_programs.py's."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys

import pytest

from components.objects.task_shell import FORWARDER_NAME, SIGNAL_FORWARDER

SHELLS = {"dash": ["dash"], "bash": ["bash"], "busybox": ["busybox", "sh"]}


@pytest.fixture(params=list(SHELLS))
def forwarder(request) -> list[str]:
    shell = SHELLS[request.param]
    if shutil.which(shell[0]) is None:
        pytest.skip(f"{shell[0]} is not installed here")
    return [*shell, "-c", SIGNAL_FORWARDER, FORWARDER_NAME]


def test_the_program_gets_its_arguments_verbatim_and_its_exit_status_is_the_containers(forwarder):
    program = [sys.executable, "-c", "import sys; print(sys.argv[1:]); sys.exit(3)", "a b", "$x", "*", ""]
    done = subprocess.run([*forwarder, *program], capture_output=True, text=True, timeout=60)
    assert done.stdout == "['a b', '$x', '*', '']\n"
    assert done.returncode == 3


def test_a_first_word_that_names_a_shell_builtin_runs_the_program_of_that_name(forwarder):
    done = subprocess.run([*forwarder, "echo", "-e", "a\\tb"], capture_output=True, text=True, timeout=60)
    assert done.stdout == "a\tb\n", "/bin/echo, not the shell's echo"


HANDLES_TERM = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGTERM, lambda *_: (print('saving a checkpoint', flush=True), sys.exit(7)))\n"
    "print('training', flush=True)\n"
    "time.sleep(600)\n"
)


@pytest.mark.parametrize("attempt", range(10))
def test_sigterm_reaches_the_program_and_its_own_exit_status_is_kept(forwarder, attempt):
    """Repeated: a shell that reaps the child in its trap could lose the status now and then."""
    started = subprocess.Popen([*forwarder, sys.executable, "-c", HANDLES_TERM], stdout=subprocess.PIPE, text=True)
    try:
        assert started.stdout is not None and started.stdout.readline() == "training\n"
        started.send_signal(signal.SIGTERM)
        assert started.wait(timeout=60) == 7
        assert started.stdout.read() == "saving a checkpoint\n"
    finally:
        started.kill()


def test_a_program_without_a_handler_ends_on_sigterm_with_its_status(forwarder):
    program = [sys.executable, "-c", "print('up', flush=True)\nimport time\ntime.sleep(600)"]
    started = subprocess.Popen([*forwarder, *program], stdout=subprocess.PIPE, text=True)
    try:
        assert started.stdout is not None and started.stdout.readline() == "up\n"
        started.send_signal(signal.SIGTERM)
        assert started.wait(timeout=60) == 128 + signal.SIGTERM
    finally:
        started.kill()


def test_the_kubelet_expands_nothing_in_the_script():
    """The kubelet reads `$(NAME)` and `$$` in a container's command; the script has neither."""
    assert "$(" not in SIGNAL_FORWARDER and "$$" not in SIGNAL_FORWARDER
