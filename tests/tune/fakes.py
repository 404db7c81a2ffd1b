"""An engine that records what tune asked of it, and a round run around it, for tests under mocks."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from components.tune.engine import EngineFailed
from components.tune.round_run import RoundRun


class RecordingEngine:
    where = "a recording engine"

    def __init__(self, up_already: tuple[str, ...] = (), fail_up: bool = False, fail_destroy: bool = False) -> None:
        self.calls: list[tuple[str, str]] = []
        self.up_already, self.fail_up, self.fail_destroy = set(up_already), fail_up, fail_destroy

    def destroy_hint(self, stack_file: Path) -> str:
        return f"destroy {stack_file.name}"

    def is_up(self, stack_file: Path) -> bool:
        return stack_file.name in self.up_already

    def up(self, stack_file: Path) -> None:
        self.calls.append(("up", stack_file.name))
        if self.fail_up:
            raise EngineFailed(f"pulumi up failed for stack '{stack_file.name}': a mandatory policy")

    def destroy(self, stack_file: Path, forget: bool) -> None:
        self.calls.append(("destroy", stack_file.name) if not forget else ("destroy and forget", stack_file.name))
        if self.fail_destroy:
            raise EngineFailed(f"pulumi destroy failed for stack '{stack_file.name}': the API server does not answer")


class FakeClock:
    """Time that passes only as the code under test sleeps."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def round_run(engine: RecordingEngine, said: Optional[list[str]] = None) -> RoundRun:
    clock = FakeClock()
    return RoundRun(object(), engine, 30.0, (said if said is not None else []).append, clock=clock, sleep=clock.sleep)
