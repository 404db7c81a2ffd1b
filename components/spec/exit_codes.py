"""`failOn`: a role's exit codes that end the experiment, as a stack file writes them (codes and
ranges) and as Kubernetes' Pod failure policy wants them (distinct, sorted, 1 to 255)."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field

FAIL_ON_HELP = (
    "exit codes (1 to 255) of this role's program that end the experiment at once as Failed, naming the task "
    "and the code, with no restart: codes and ranges, e.g. [2, 64-78]; other exits are retried as before (PS and "
    "workers: needs workload: jobset)"
)
EXIT_CODE_RANGE = re.compile(r"^([0-9]+)-([0-9]+)$")
LARGEST_EXIT_CODE = 255


def _code_not_text(item: Any) -> Any:
    """Text that reaches a code is no range (those are expanded before): said as such, since the
    number's own message ("a valid integer") would hide that ranges are taken too."""
    if not isinstance(item, str):
        return item
    if item.isascii() and item.isdigit():
        raise ValueError(f"must be a number, not text: write {int(item)} unquoted")
    raise ValueError("must be an exit code (1 to 255) or a range of them such as 64-78")


# A container's exit code as a Pod failure policy matches it (0 is success, never a failure).
ExitCode = Annotated[int, BeforeValidator(_code_not_text), Field(strict=True, ge=1, le=LARGEST_EXIT_CODE)]


def _codes_and_ranges(items: Any) -> Any:
    """`64-78` (YAML reads it as text) is every code from 64 to 78; a code is checked as a number."""
    if not isinstance(items, (list, tuple)):
        return items
    codes: list[Any] = []
    for item in items:
        match = EXIT_CODE_RANGE.fullmatch(item) if isinstance(item, str) else None
        if match is None:
            codes.append(item)
            continue
        low, high = int(match[1]), int(match[2])
        if not 1 <= low <= high <= LARGEST_EXIT_CODE:
            raise ValueError(f"the range {item} must run upwards within 1-255 (0 is success, never a failure)")
        codes.extend(range(low, high + 1))
    return codes


def _distinct_codes(codes: tuple[int, ...]) -> tuple[int, ...]:
    """Sorted, as Kubernetes requires; a code given twice is a slip worth naming."""
    twice = sorted({code for code in codes if codes.count(code) > 1})
    if twice:
        raise ValueError(f"lists {', '.join(map(str, twice))} more than once")
    return tuple(sorted(codes))


FailOn = Annotated[tuple[ExitCode, ...], BeforeValidator(_codes_and_ranges), AfterValidator(_distinct_codes)]
