"""Columns aligned for the terminal, as `status` and `top` print them (pure)."""

from __future__ import annotations

from typing import Sequence


def aligned(rows: Sequence[Sequence[str]]) -> list[str]:
    """One line per row, each column as wide as its widest cell, two spaces apart; the last column
    unpadded (a free-text reason or a list of tasks)."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return ["  ".join([cell.ljust(width) for cell, width in zip(row, widths)] + [row[-1]]).rstrip() for row in rows]
