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


def round_run(engine: RecordingEngine, said: Optional[list[str]] = None) -> RoundRun:
    return RoundRun(api=object(), engine=engine, seconds=30.0, say=(said if said is not None else []).append, sleep=lambda s: None)
