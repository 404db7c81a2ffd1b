"""The shell that starts a team's program: it passes SIGTERM on, keeps the program's arguments
as given and exits with the program's status. (That it does so as a pod's PID 1, where the kernel
would drop the signal for a program that sets no handler, is tests/realpods/test_programs.py's.)"""

from __future__ import annotations

import signal
import subprocess
import sys

from components.objects.program_container import FORWARDER_NAME, SIGNAL_FORWARDER

FORWARDER = ["/bin/sh", "-c", SIGNAL_FORWARDER, FORWARDER_NAME]


def test_the_program_gets_its_arguments_verbatim_and_its_exit_status_is_the_containers():
    program = [sys.executable, "-c", "import sys; print(sys.argv[1:]); sys.exit(3)", "a b", "$x", "*", ""]
    done = subprocess.run([*FORWARDER, *program], capture_output=True, text=True, timeout=60)
    assert done.stdout == "['a b', '$x', '*', '']\n"
    assert done.returncode == 3


def test_sigterm_reaches_the_program_and_its_own_exit_status_is_kept():
    handles_term = (
        "import signal, sys, time\n"
        "signal.signal(signal.SIGTERM, lambda *_: (print('saving a checkpoint', flush=True), sys.exit(7)))\n"
        "print('training', flush=True)\n"
        "time.sleep(600)\n"
    )
    forwarder = subprocess.Popen([*FORWARDER, sys.executable, "-c", handles_term], stdout=subprocess.PIPE, text=True)
    try:
        assert forwarder.stdout is not None and forwarder.stdout.readline() == "training\n"
        forwarder.send_signal(signal.SIGTERM)
        assert forwarder.wait(timeout=60) == 7
        assert forwarder.stdout.read() == "saving a checkpoint\n"
    finally:
        forwarder.kill()


def test_a_program_without_a_handler_ends_on_sigterm_with_its_status():
    forwarder = subprocess.Popen(
        [*FORWARDER, sys.executable, "-c", "print('up', flush=True)\nimport time\ntime.sleep(600)"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert forwarder.stdout is not None and forwarder.stdout.readline() == "up\n"
        forwarder.send_signal(signal.SIGTERM)
        assert forwarder.wait(timeout=60) == 128 + signal.SIGTERM
    finally:
        forwarder.kill()


def test_the_kubelet_expands_nothing_in_the_script():
    """The kubelet reads `$(NAME)` and `$$` in a container's command; the script has neither."""
    assert "$(" not in SIGNAL_FORWARDER and "$$" not in SIGNAL_FORWARDER
