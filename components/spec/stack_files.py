"""The project's stack files (stacks/Pulumi.<stack>.yaml), read directly, for tools that run without the Pulumi CLI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from .models import StackConfigError
from .strict_yaml import TooLargeError, described, load_yaml, yaml_problem
from .user_files import UnreadableFile, read_user_text

PROJECT_ROOT = Path(__file__).resolve().parents[2]
STACKS_DIR = PROJECT_ROOT / "stacks"
STACK_FILE_SUFFIXES = (".yaml", ".yml")


def stack_names() -> list[str]:
    return sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in STACKS_DIR.glob("Pulumi.*.yaml"))


def looks_like_a_path(stack_or_path: str) -> bool:
    """A value with a '/' or a YAML suffix names a file; anything else names a stack of stacks/."""
    return "/" in stack_or_path or stack_or_path.endswith(STACK_FILE_SUFFIXES)


def stack_path(stack_or_path: str) -> Path:
    """`scene1-case3` -> stacks/Pulumi.scene1-case3.yaml; a path is taken as it is."""
    if looks_like_a_path(stack_or_path):
        return Path(stack_or_path)
    return STACKS_DIR / f"Pulumi.{stack_or_path}.yaml"


def stack_name_of(path: Path) -> str:
    name = path.name
    if name.startswith("Pulumi.") and name.endswith(STACK_FILE_SUFFIXES):
        return name[len("Pulumi.") :].rsplit(".", 1)[0]
    return path.stem


def read_stack_values(stack_or_path: str) -> tuple[str, dict[str, Any]]:
    """The stack's name and its `config:` mapping as the stack file writes it; StackConfigError, in one
    line naming the stack or path as given, for a file that cannot be read as a stack file."""
    if not stack_or_path.strip():
        # Else it would be looked for as stacks/Pulumi..yaml, a file nobody named.
        raise StackConfigError(
            f"the stack name is empty; give a stack of stacks/ ({_known_stacks()}) or a stack file's path"
        )
    path = stack_path(stack_or_path)
    # Named as the user gave it: a path as typed, a stack by its name and its file.
    if looks_like_a_path(stack_or_path):
        where = f"stack file '{stack_or_path}'"
    else:
        where = f"stack '{stack_or_path}': {shown_path(path)}"
    try:
        text = read_user_text(path)
    except UnreadableFile as why:
        if not looks_like_a_path(stack_or_path) and not path.exists():
            raise StackConfigError(f"stack '{stack_or_path}': no file {path}; {_known_stacks()}") from None
        raise StackConfigError(f"{where}: {why}") from None
    try:
        document = load_yaml(text)
    except TooLargeError as error:
        raise StackConfigError(f"{where}: not a stack file: {error}") from None
    except yaml.YAMLError as error:
        raise StackConfigError(f"{where}: not valid YAML: {yaml_problem(error)}") from None
    config = document.get("config") if isinstance(document, dict) else None
    if not isinstance(config, dict):
        raise StackConfigError(f"{where}: no 'config:' mapping{_instead(document)}")
    bad_key = next((key for key in config if not isinstance(key, str)), None)
    if bad_key is not None:
        raise StackConfigError(
            f"{where}: config key {bad_key!r} is not text; keys are '<namespace>:<name>', e.g. tfk8s:cluster"
        )
    return stack_name_of(path), config


def _known_stacks() -> str:
    return f"known stacks: {', '.join(stack_names()) or 'none'}"


def shown_path(path: Path) -> str:
    """The path relative to the project where it is in it, as a user would type it there."""
    try:
        return str(path.resolve().relative_to(PROJECT_ROOT))
    except ValueError:
        return str(path)


def _instead(document: Any) -> str:
    if document is None:
        return " (the file is empty)"
    if not isinstance(document, dict):
        return f" (the file holds {described(document)}, not a mapping with a 'config:' key)"
    if "config" not in document:
        return f" (its keys: {', '.join(map(str, document)) or 'none'})"
    return f" ('config:' holds {described(document['config'])})"
