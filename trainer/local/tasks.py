"""One task of the local cluster as a process: started in its own process group, logged, signalled, stopped."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from ..lifeline import die_with_parent

if TYPE_CHECKING:
    from typing import Protocol

    class TextOut(Protocol):
        """Where the launcher's lines go: a text stream, or what writes and flushes text (trainer.report's bar)."""

        def write(self, text: str, /) -> int: ...

        def flush(self) -> None: ...


STOP_GRACE = 5.0

TRAINER_COMMAND = (sys.executable, "-m", "trainer")


def last_lines(text: str, count: int = 1, none: str = "(no output)") -> str:
    """The last `count` non-empty lines of a task's output, joined by ' | ': where it says why it stopped."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return " | ".join(lines[-count:]) if lines else none


@dataclass
class Task:
    name: str
    env: dict[str, str]
    directory: Path
    process: Optional[subprocess.Popen] = None
    restarts: int = 0
    log: Any = None
    command: tuple[str, ...] = TRAINER_COMMAND
    log_offset: int = 0  # where this start's output begins in the (appended) log
    cwd: Optional[Path] = None  # where it runs: its own folder unless given (a program's source)
    # Tied to the launcher by the kernel from its start: a team's program does not tie itself
    # (tfk8s's trainer does, trainer/lifeline.py).
    tie_to_launcher: bool = False

    def start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        if self.log is None:
            self.log = open(self.directory / "task.log", "ab")
        self.log.flush()
        self.log_offset = self.log.seek(0, os.SEEK_END)
        self.process = subprocess.Popen(
            list(self.command),
            cwd=self.cwd or self.directory,
            env=self.env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: stopped as a whole
            preexec_fn=die_with_parent if self.tie_to_launcher else None,
        )

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def output_since_start(self) -> str:
        try:
            with open(self.directory / "task.log", "rb") as handle:
                handle.seek(self.log_offset)
                return handle.read().decode(errors="replace")
        except OSError:
            return ""

    def signal(self, signum: int) -> None:
        """Signal the task's whole process group, also when its leader has already exited
        (what it started may still run); a group with no process left is skipped."""
        if self.process is None:
            return
        try:
            os.killpg(self.process.pid, signum)
        except ProcessLookupError:
            pass

    def close_log(self) -> None:
        if self.log is not None:
            self.log.close()
            self.log = None


def stop_all(tasks: list[Task], chief: Optional[subprocess.Popen] = None) -> None:
    """TERM each process group, KILL what is left after STOP_GRACE; close the task logs."""
    if chief is not None and chief.poll() is None:
        try:
            os.killpg(chief.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    for task in tasks:
        task.signal(signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE
    for process in [chief] + [t.process for t in tasks]:
        if process is None:
            continue
        try:
            process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait()
    for task in tasks:
        task.close_log()
