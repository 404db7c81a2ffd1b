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


def scaled_values(values: dict[str, Any], factor: int) -> dict[str, Any]:
    """The stack with `factor` times its servers (each pool's, named on from its first: srv-0000,
    srv-0001, ...; ps-srv-0000, ...), PS and workers."""
    values = copy.deepcopy(values)
    for pool in values["tfk8s:nodePools"]:
        if pool.get("nodes"):
            prefix = pool["nodes"][0].rstrip("0123456789")
            pool["nodes"] = [f"{prefix}{i:04d}" for i in range(len(pool["nodes"]) * factor)]
    cluster = values["tfk8s:cluster"]
    cluster["ps"]["replicas"] *= factor
    cluster["workers"]["replicas"] *= factor
    return values


def write_scaled(directory: Path, base: str, factor: int, name: str = "") -> str:
    """`base` with `factor` times its servers, PS and workers, as a stack file; its path."""
    _, values = read_stack_values(base)
    path = directory / f"Pulumi.{name or f'{base}-x{factor}'}.yaml"
    path.write_text(yaml.safe_dump({"config": scaled_values(values, factor)}, sort_keys=False))
    return str(path)
