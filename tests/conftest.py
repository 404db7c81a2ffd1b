"""Fixtures: the program under recording mocks; Pulumi's runtime reset after each test."""

from __future__ import annotations

import gc
import sys
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parent.parent
if str(PROJECT_ROOT) not in sys.path:
    sys.path.insert(0, str(PROJECT_ROOT))

from tests.harness import ProgramRun, RecordingMonitor, reset_pulumi  # noqa: E402
from tests.runs import SHIPPED_STACKS, program_run  # noqa: E402


@pytest.fixture(autouse=True)
def _reset_pulumi_runtime():
    yield
    reset_pulumi()
    gc.enable()  # the program pauses the collector for its own short-lived process


@pytest.fixture(params=SHIPPED_STACKS)
def stack_run(request) -> ProgramRun:
    """The program's run for each stack in stacks/."""
    return program_run(request.param)


@pytest.fixture
def recording_monitor() -> RecordingMonitor:
    """A fresh recording monitor: shows what a failed run registered."""
    return RecordingMonitor()
