"""How tune brings a round's stack up and takes it down: the Pulumi engine, as `pulumi up` and
`pulumi destroy` would, with tfk8s's program inline and the policy pack on.

`UserEngine` is the user's own: the project's workspace (Pulumi.yaml, stacks/), their backend and
secrets provider as their `pulumi` uses them (`pulumi login`, $PULUMI_BACKEND_URL, the passphrase
variables). `make tune` gives tune the local cluster's engine instead (tools/engine/tune.py).
Whatever the engine raises (the CLI missing or too old, a backend not logged in to, a failed
update, a stack locked by another update) reaches tune as EngineFailed, in one line.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Protocol

from ..spec.stack_files import PROJECT_ROOT

# The pack as `pulumi up --policy-pack policy` runs it (README).
POLICY_PACK_FOLDER = PROJECT_ROOT / "policy"
# What every stack's state holds besides the experiment's own objects.
ENGINE_TYPES = ("pulumi:pulumi:Stack", "pulumi:providers:")


class EngineFailed(Exception):
    """The engine could not bring a stack up or take it down; its output said why."""


class RoundEngine(Protocol):
    """What tune asks of an engine, for a stack file (in stacks/, or a path where the engine takes one)."""

    where: str  # said in tune's output: whose engine and backend

    def is_up(self, stack_file: Path) -> bool:
        """Whether the stack's state holds objects: brought up, and not destroyed since."""

    def up(self, stack_file: Path) -> None:
        """`pulumi up`, the policy pack on."""

    def destroy(self, stack_file: Path, forget: bool) -> None:
        """`pulumi destroy`; with `forget`, the emptied stack removed too (one tune made)."""

    def destroy_hint(self, stack_file: Path) -> str:
        """The command that takes the stack down by hand, for what tune could not."""


def stack_name(stack_file: Path) -> str:
    return stack_file.name.removeprefix("Pulumi.").removesuffix(".yaml")


def holds_objects(deployment: Optional[Mapping[str, Any]]) -> bool:
    """Whether a stack's exported state holds anything but the stack and its providers."""
    resources = (deployment or {}).get("resources") or []
    return any(not str(r.get("type", "")).startswith(ENGINE_TYPES) for r in resources)


def engine_errors() -> tuple[type[BaseException], ...]:
    """What the Automation API raises for an engine that fails or cannot start."""
    from pulumi import automation as auto
    from pulumi.automation import errors

    return (auto.CommandError, errors.InvalidVersionError, OSError)


def said(error: BaseException) -> str:
    """An engine error in one line: the last line it printed."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[-1] if lines else type(error).__name__


def to_stderr(line: str) -> None:
    """The engine's output: on standard error, so that tune's own stays alone on standard output."""
    print(line, file=sys.stderr, flush=True)


class UserEngine:
    """The user's Pulumi: the project's workspace and their backend, tfk8s's program inline."""

    where = "the Pulumi engine, with your backend and secrets provider (as `pulumi up --policy-pack policy`)"

    def __init__(self, program: Optional[Callable[..., None]] = None) -> None:
        from ..resources.entry_point import main as tfk8s_program

        self._program = program or tfk8s_program

    def _stack(self, stack_file: Path, create: bool = True) -> Any:
        from pulumi import automation as auto

        choose = auto.create_or_select_stack if create else auto.select_stack
        program = functools.partial(self._program, stack_file=stack_file)
        return choose(
            stack_name(stack_file), program=program, opts=auto.LocalWorkspaceOptions(work_dir=str(PROJECT_ROOT))
        )

    def _run(self, stack_file: Path, command: str, **options: Any) -> Any:
        from ..resources.entry_point import collector_restored

        try:
            stack = self._stack(stack_file)
            with collector_restored():
                return getattr(stack, command)(on_output=to_stderr, **options)
        except engine_errors() as error:
            raise EngineFailed(f"pulumi {command} failed for stack '{stack_name(stack_file)}': {said(error)}") from None

    def is_up(self, stack_file: Path) -> bool:
        from pulumi import automation as auto

        try:
            return holds_objects(self._stack(stack_file, create=False).export_stack().deployment)
        except auto.StackNotFoundError:
            return False
        except engine_errors() as error:  # no `pulumi` on PATH, no backend logged in to
            raise EngineFailed(f"the Pulumi CLI cannot read stack '{stack_name(stack_file)}': {said(error)}") from None

    def up(self, stack_file: Path) -> None:
        self._run(stack_file, "up", policy_packs=[str(POLICY_PACK_FOLDER)])

    def destroy(self, stack_file: Path, forget: bool) -> None:
        self._run(stack_file, "destroy")
        if forget:
            try:
                self._stack(stack_file).workspace.remove_stack(stack_name(stack_file))
            except engine_errors() as error:
                raise EngineFailed(f"stack '{stack_name(stack_file)}' is down but not removed: {said(error)}") from None

    def destroy_hint(self, stack_file: Path) -> str:
        return f"pulumi destroy --stack {stack_name(stack_file)}"
