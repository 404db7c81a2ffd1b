"""`make tune`: tune (components/tune/) with the local cluster's engine, as `make up` runs it (the
toolchain's CLI and provider, the engine's own state under .cluster/pulumi, the policy pack as the
analyzer plugin)."""

from __future__ import annotations

import sys
from pathlib import Path

from pulumi import automation as auto

from components.tune.engine import EngineFailed, holds_objects

from .workspace import DEFAULT_DIRS, EngineDirs, engine_stack, run_engine


class ToolchainEngine:
    where = "the local cluster's engine (make up's: .cluster/pulumi)"

    def __init__(self, kubeconfig: Path, dirs: EngineDirs = DEFAULT_DIRS) -> None:
        self.kubeconfig, self.dirs = kubeconfig, dirs

    def _run(self, stack_file: Path, command: str) -> None:
        stack = engine_stack(str(stack_file), self.kubeconfig, self.dirs)
        try:
            run_engine(stack, command, on_output=_to_stderr, on_error=_to_stderr)
        except auto.CommandError:
            raise EngineFailed(f"pulumi {command} failed for stack '{stack.name}' (its output is above)") from None

    def is_up(self, stack_file: Path) -> bool:
        stack = engine_stack(str(stack_file), self.kubeconfig, self.dirs)
        return holds_objects(stack.export_stack().deployment or {})

    def up(self, stack_file: Path) -> None:
        self._run(stack_file, "up")

    def destroy(self, stack_file: Path) -> None:
        self._run(stack_file, "destroy")


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
