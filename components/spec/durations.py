"""A duration as a stack file writes it: whole seconds (`90`), or a number with `s`, `m` or `h`
(`90s`, `10m`, `1h`), held as seconds."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BeforeValidator, Field

from .shown_values import shown

_DURATION = re.compile(r"^([0-9]+)([smh])$")
_SECONDS_PER_UNIT = {"s": 1, "m": 60, "h": 3600}
# A day is past any start a cluster makes; more is a slip of units.
LONGEST_S = 86_400


def _in_seconds(value: Any) -> Any:
    if isinstance(value, str):
        text = value.strip()
        if text.isascii() and text.isdigit():
            # Quoted seconds: text where a number is meant, which "no duration" would not explain.
            raise ValueError(f"must be a number of seconds, not text: write {int(text)} unquoted, or {int(text)}s")
        match = _DURATION.fullmatch(text)
        if match is None:
            raise ValueError(f"{shown(value)} is no duration: write whole seconds (90) or 90s, 10m, 1h")
        return int(match[1]) * _SECONDS_PER_UNIT[match[2]]
    return value


Seconds = Annotated[int, BeforeValidator(_in_seconds), Field(strict=True, ge=1, le=LONGEST_S)]
