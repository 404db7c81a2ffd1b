"""Paths as the command line shows them."""

from __future__ import annotations

from pathlib import Path


def shown(path: Path) -> str:
    """`path` relative to the current folder where it is under it, else as it is."""
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)
