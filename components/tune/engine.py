"""How tune brings a round's stack up and takes it down: the Pulumi engine, as `pulumi up` and
`pulumi destroy` would, with tfk8s's program inline and the policy pack on.

`UserEngine` is the user's own: the project's workspace (Pulumi.yaml, stacks/), their backend and
secrets provider as their `pulumi` uses them (`pulumi login`, $PULUMI_BACKEND_URL, the passphrase
variables). `make tune` gives tune the local cluster's engine instead (tools/engine/tune.py).
"""

from __future__ import annotations

import functools
import gc
import sys
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol

from ..spec.stack_files import PROJECT_ROOT

# The pack as `pulumi up --policy-pack policy` runs it (README).
POLICY_PACK_FOLDER = PROJECT_ROOT / "policy"
# What every stack's state holds besides the experiment's own objects.
ENGINE_TYPES = ("pulumi:pulumi:Stack", "pulumi:providers:")


class EngineFailed(Exception):
    """The engine could not bring a stack up or take it down; its output said why."""


class RoundEngine(Protocol):
    """What tune asks of an engine, for a stack file in stacks/ (or a path, where the engine takes one)."""

    where: str  # said in tune's output: whose engine and backend

    def is_up(self, stack_file: Path) -> bool:
        """Whether the stack's state holds objects: brought up, and not destroyed since."""

    def up(self, stack_file: Path) -> None:
        """`pulumi up`, the policy pack on; EngineFailed when it fails."""

    def destroy(self, stack_file: Path) -> None:
        """`pulumi destroy`; EngineFailed when it fails."""


def stack_name(stack_file: Path) -> str:
    return stack_file.name.removeprefix("Pulumi.").removesuffix(".yaml")


def holds_objects(deployment: Mapping[str, Any]) -> bool:
    """Whether a stack's exported state holds anything but the stack and its providers."""
    resources = deployment.get("resources") or []
    return any(not str(r.get("type", "")).startswith(ENGINE_TYPES) for r in resources)


def run_quietly(stack: Any, command: str, **options: Any) -> Any:
    """`command` on an Automation API stack, its output on standard error (tune's own is on standard
    output); EngineFailed when it fails. The inline program pauses the garbage collector for its run
    (components/resources/entry_point.py): this process goes on, and gets it back."""
    from pulumi import automation as auto

    collecting = gc.isenabled()
    try:
        return getattr(stack, command)(on_output=_to_stderr, **options)
    except auto.CommandError as error:
        raise EngineFailed(f"pulumi {command} failed for stack '{stack.name}': {_last_line(str(error))}") from None
    finally:
        gc.unfreeze()
        if collecting:
            gc.enable()


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "no output"


class UserEngine:
    """The user's Pulumi: the project's workspace and their backend, tfk8s's program inline."""

    where = "the Pulumi engine, with your backend and secrets provider (as `pulumi up --policy-pack policy`)"

    def __init__(self, program: Callable[..., None] | None = None) -> None:
        from ..resources.entry_point import main as tfk8s_program

        self._program = program or tfk8s_program

    def _stack(self, stack_file: Path) -> Any:
        from pulumi import automation as auto

        program = functools.partial(self._program, stack_file=stack_file)
        options = auto.LocalWorkspaceOptions(work_dir=str(PROJECT_ROOT))
        return auto.create_or_select_stack(stack_name(stack_file), program=program, opts=options)

    def is_up(self, stack_file: Path) -> bool:
        from pulumi import automation as auto

        try:
            stack = auto.select_stack(
                stack_name(stack_file),
                program=functools.partial(self._program, stack_file=stack_file),
                opts=auto.LocalWorkspaceOptions(work_dir=str(PROJECT_ROOT)),
            )
        except auto.StackNotFoundError:
            return False
        return holds_objects(stack.export_stack().deployment or {})

    def up(self, stack_file: Path) -> None:
        run_quietly(self._stack(stack_file), "up", policy_packs=[str(POLICY_PACK_FOLDER)])

    def destroy(self, stack_file: Path) -> None:
        run_quietly(self._stack(stack_file), "destroy")
