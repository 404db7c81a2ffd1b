"""`make tune`: tune (components/tune/) with the local cluster's engine, as `make up` runs it (the
toolchain's CLI and provider, the engine's own state under .cluster/pulumi, the policy pack as the
analyzer plugin)."""

from __future__ import annotations

from pathlib import Path

from pulumi import automation as auto

from components.tune.engine import EngineFailed, engine_errors, holds_objects, said, to_stderr

from .workspace import DEFAULT_DIRS, EngineDirs, EngineError, engine_stack, run_engine


class ToolchainEngine:
    where = "the local cluster's engine (make up's: .cluster/pulumi)"

    def __init__(self, kubeconfig: Path, dirs: EngineDirs = DEFAULT_DIRS) -> None:
        self.kubeconfig, self.dirs = kubeconfig, dirs

    def _stack(self, stack_file: Path) -> auto.Stack:
        try:
            return engine_stack(str(stack_file), self.kubeconfig, self.dirs)
        except EngineError as why:  # no toolchain, no cluster, a secret without its passphrase
            raise EngineFailed(str(why)) from None
        except engine_errors() as error:
            raise EngineFailed(f"the engine cannot open stack '{stack_file.name}': {said(error)}") from None

    def _run(self, stack_file: Path, command: str) -> None:
        stack = self._stack(stack_file)
        try:
            run_engine(stack, command, on_output=to_stderr, on_error=to_stderr)
        except EngineError as why:  # another run holds the stack
            raise EngineFailed(str(why)) from None
        except engine_errors():
            raise EngineFailed(f"pulumi {command} failed for stack '{stack.name}' (its output is above)") from None

    def is_up(self, stack_file: Path) -> bool:
        stack = self._stack(stack_file)
        try:
            return holds_objects(stack.export_stack().deployment)
        except engine_errors() as error:
            raise EngineFailed(f"the engine cannot read stack '{stack.name}': {said(error)}") from None

    def up(self, stack_file: Path) -> None:
        self._run(stack_file, "up")

    def destroy(self, stack_file: Path, forget: bool) -> None:
        self._run(stack_file, "destroy")
        if forget:
            stack = self._stack(stack_file)
            try:
                stack.workspace.remove_stack(stack.name)
            except engine_errors() as error:
                raise EngineFailed(f"stack '{stack.name}' is down but not removed: {said(error)}") from None

    def destroy_hint(self, stack_file: Path) -> str:
        return f"make destroy STACK={stack_file}"
