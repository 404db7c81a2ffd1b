"""A child process as a terminal's foreground job starts it, whoever started the tests."""

from __future__ import annotations

import signal


def ctrl_c_as_in_a_terminal() -> None:
    """`preexec_fn` for a child that a test stops with Ctrl-C (SIGINT). A shell starts background
    commands with SIGINT ignored, a process keeps an ignored signal ignored, and Python then installs
    no KeyboardInterrupt handler: run from such a job (CI started with `&`), the child would never see
    the test's Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
