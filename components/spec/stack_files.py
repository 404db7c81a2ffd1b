"""The project's stack files (stacks/Pulumi.<stack>.yaml), read directly, for tools that run without the Pulumi CLI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from .loading import load_stack_config
from .models import StackConfig, StackConfigError

PROJECT_ROOT = Path(__file__).resolve().parents[2]
STACKS_DIR = PROJECT_ROOT / "stacks"


def stack_names() -> list[str]:
    return sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in STACKS_DIR.glob("Pulumi.*.yaml"))


def stack_path(stack_or_path: str) -> Path:
    """`scene1-case3` -> stacks/Pulumi.scene1-case3.yaml; a path is taken as it is."""
    candidate = Path(stack_or_path)
    if candidate.suffix in (".yaml", ".yml") and candidate.exists():
        return candidate
    return STACKS_DIR / f"Pulumi.{stack_or_path}.yaml"


def stack_name_of(path: Path) -> str:
    name = path.name
    if name.startswith("Pulumi.") and name.endswith((".yaml", ".yml")):
        return name[len("Pulumi.") :].rsplit(".", 1)[0]
    return path.stem


def read_stack_values(stack_or_path: str) -> tuple[str, dict[str, Any]]:
    """The stack's name and its `config:` mapping as the stack file writes it."""
    path = stack_path(stack_or_path)
    if not path.exists():
        known = ", ".join(stack_names()) or "none"
        raise StackConfigError(f"stack '{stack_or_path}': no file {path}; known stacks: {known}")
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as error:
        raise StackConfigError(f"stack '{stack_name_of(path)}': {path} is not valid YAML: {error}")
    config = document.get("config") if isinstance(document, dict) else None
    if not isinstance(config, dict):
        raise StackConfigError(f"stack '{stack_name_of(path)}': {path} has no 'config:' mapping")
    return stack_name_of(path), config


def load_stack_file(stack_or_path: str) -> StackConfig:
    stack, values = read_stack_values(stack_or_path)
    return load_stack_config(stack, values)

