"""Stack files derived from the seed stacks, for tests that need an experiment of another shape."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Callable

import yaml

from components.spec.stack_files import read_stack_values


def write_variant(directory: Path, base: str, name: str, edit: Callable[[dict[str, Any]], None]) -> str:
    """A stack file derived from `base`, changed by `edit(values)`; its path."""
    _, values = read_stack_values(base)
    values = copy.deepcopy(values)
    edit(values)
    path = directory / f"Pulumi.{name}.yaml"
    path.write_text(yaml.safe_dump({"config": values}, sort_keys=False))
    return str(path)
