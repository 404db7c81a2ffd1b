"""A PS:worker ratio as a stack file writes it ('1:10'), and the PS count it gives for some workers."""

from __future__ import annotations

import re

from .shown_values import shown

# More digits than any count of tasks: a ratio past it is a typo (and Python refuses long numbers' text).
MAX_RATIO_DIGITS = 9
_RATIO = re.compile(r"^\s*([0-9]+)\s*:\s*([0-9]+)\s*$")


def parse_ratio(ratio: str) -> tuple[int, int]:
    match = _RATIO.match(ratio)
    if match and max(len(match.group(1)), len(match.group(2))) > MAX_RATIO_DIGITS:
        raise ValueError(f"ratio {shown(ratio)}: P and W are whole numbers of at most {MAX_RATIO_DIGITS} digits")
    if not match or int(match.group(1)) < 1 or int(match.group(2)) < 1:
        raise ValueError(f"ratio {shown(ratio)} is not of the form 'P:W' with positive whole numbers, e.g. '1:10'")
    return int(match.group(1)), int(match.group(2))


def ps_count_for_ratio(ratio: str, workers: int) -> int:
    ps, per_workers = parse_ratio(ratio)
    # Whole numbers throughout: a float would overflow on a count no stack should have, before it is refused.
    return max(1, -(-workers * ps // per_workers))
