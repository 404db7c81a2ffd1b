"""A value as every message quotes it, in every layer and command: whole where it is short, else its
start and how long it is, so that a pasted blob or a 400-digit number never buries the message.

The one such helper: the stack's errors (error_messages.py, limit_checks.py), what YAML read
(strict_yaml.described) and the command line's flags (cli/argument_types.py) call it. It sits below
them all, importing nothing of tfk8s's, since the models, which error_messages.py reads, call it too.
"""

from __future__ import annotations

from typing import Any

SHOWN_CHARS = 60


def shown(value: Any, limit: int = SHOWN_CHARS) -> str:
    """`value` as a message quotes it: Python's repr, so that a space at either end or a line break
    shows (a boolean as YAML writes it: true); past `limit` characters, its start and its length (of
    text, the characters the user gave)."""
    text = str(value).lower() if isinstance(value, bool) else repr(value)
    if len(text) <= limit:
        return text
    length = len(value) if isinstance(value, str) else len(text)
    return f"{text[:limit]}... ({length:,} characters)"
