"""The forms of the commands' flag values: each parses one value or raises argparse's error, whose
message names what the flag takes and what was given (argparse adds the flag's name)."""

from __future__ import annotations

import argparse
import math

from ..spec.shown_values import shown

# A flag's value as every message quotes it: the one helper, by the name the commands' own forms call.
shown_value = shown


def node_names(text: str) -> tuple[str, ...]:
    """--nodes n1,n2: every name given, none left empty (an empty one would be dropped unseen)."""
    names = tuple(name.strip() for name in text.split(","))
    if not any(names):
        raise argparse.ArgumentTypeError(
            f"no node name in {text!r}; give the pool's nodes as n1,n2,..., or leave --nodes out (a placeholder "
            "to fill in)"
        )
    if not all(names):
        raise argparse.ArgumentTypeError(f"an empty node name in {text!r}; give the pool's nodes as n1,n2,...")
    return names


def local_port(text: str) -> int:
    # ASCII digits only: str.isdigit() also takes '²', which int() refuses; and few of them, for int()
    # refuses more than 4,300 digits with a ValueError argparse would blame on this function by its name.
    digits = text.lstrip("0") or "0"
    if not (text.isascii() and text.isdigit()) or len(digits) > 5 or int(digits) > 65535:
        raise argparse.ArgumentTypeError(f"must be a port number from 0 to 65535 (got {shown(text)})")
    return int(digits)


def whole_number(text: str, low: int, high: int) -> int:
    """A whole number from `low` to `high`, ASCII digits only (as local_port reads one)."""
    digits = text.lstrip("0") or "0"
    if not (text.isascii() and text.isdigit()) or len(digits) > len(str(high)) or not low <= int(digits) <= high:
        raise argparse.ArgumentTypeError(f"must be a whole number from {low} to {high} (got {shown(text)})")
    return int(digits)


def positive_seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        seconds = 0.0
    # float() reads 'nan' and 'inf' too, and a number too large for a float as inf: none is a number
    # of seconds to wait.
    if not (math.isfinite(seconds) and seconds > 0):
        overflow = " (too large: no finite number)" if seconds == math.inf and text.strip().lower() not in INF else ""
        raise argparse.ArgumentTypeError(f"must be a number of seconds above 0 (got {shown(text)}){overflow}")
    return seconds


INF = {"inf", "+inf", "infinity", "+infinity"}

# `top --watch`'s floor: each refresh lists the experiment's pods, their metrics and the chief's log from
# the API server, and the kubelet renews a pod's figures only every 10-15 s, so a shorter interval shows
# nothing new; it only loads the API server (a near-zero one without pause).
MIN_WATCH_SECONDS = 1.0
# Its ceiling, as `diagnose --seconds`': a view refreshed less than hourly is not watched; and a
# wait past the platform's clock (1e23 s) ended the watch in a traceback after its first view.
MAX_WATCH_SECONDS = 3600.0


def watch_seconds(text: str) -> float:
    """--watch SECONDS: a number of seconds, from MIN_WATCH_SECONDS to MAX_WATCH_SECONDS."""
    seconds = positive_seconds(text)
    if seconds < MIN_WATCH_SECONDS:
        raise argparse.ArgumentTypeError(
            f"must be at least {MIN_WATCH_SECONDS:g} second (got {shown(text)}): every refresh asks the API "
            "server again, and a pod's CPU and memory change only every 10-15 s"
        )
    if seconds > MAX_WATCH_SECONDS:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_WATCH_SECONDS:g} seconds, an hour (got {shown(text)})")
    return seconds
