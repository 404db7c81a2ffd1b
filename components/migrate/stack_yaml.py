"""A stack's values written the way the seed stacks are: a comment at the top, block mappings and
lists, small mappings and lists of words on one line, a comment above a key where it says why."""

from __future__ import annotations

from typing import Any

import yaml

from ..spec.strict_yaml import text_style

# Wider than this, a mapping or list is written one item a line.
FLOW_WIDTH = 88
# Lists written one item a line whatever their width, as the seed stacks write them.
BLOCK_LISTS = {"nodes"}

Comments = dict[tuple[str, ...], str]


def stack_yaml(values: dict[str, Any], header: str, comments: Comments) -> str:
    """The stack file: `header` (lines, without '#'), then `config:` with `values`. `comments` maps a key's
    path (list items are not counted: ("tfk8s:nodePools", "gpu")) to the comment written above it."""
    lines = [f"# {line}".rstrip() for line in header.splitlines()]
    lines.append("config:")
    _mapping(values, 1, (), comments, lines)
    return "\n".join(lines) + "\n"


def _scalar(value: Any, in_flow: bool = False) -> str:
    """A scalar as YAML reads it back, 1.1 and 1.2 alike: plain where it can be, else double-quoted
    (text such as `0e0`, plain to YAML 1.1, is a number to the engine's YAML 1.2). `in_flow`: inside
    `[...]` or `{...}`, where `,` `[]` `{}` end a plain value (`0[` is plain on its own line only)."""
    if in_flow:  # PyYAML's own judgement of the value as an item of a flow list: `[item]`
        plain = yaml.safe_dump([value], default_flow_style=True, width=10**6).strip()[1:-1]
    else:
        plain = yaml.safe_dump(value, default_flow_style=True, width=10**6).removesuffix("\n...\n").strip()
    quote = plain.startswith("'") or isinstance(value, str) and text_style(value) is not None
    if not quote:
        return plain
    # YAML's own double quotes: every character escaped as YAML reads it back (JSON's \ud83d\ude00 is not).
    return yaml.safe_dump(value, default_style='"', width=10**6).removesuffix("\n...\n").strip()


def _flow(value: Any, in_flow: bool = False) -> str:
    if isinstance(value, dict):
        items = (f"{_scalar(key, True)}: {_flow(item, True)}" for key, item in value.items())
        return "{" + ", ".join(items) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_flow(item, True) for item in value) + "]"
    return _scalar(value, in_flow)


def _is_flat(value: Any) -> bool:
    items = value.values() if isinstance(value, dict) else value
    return all(not isinstance(item, (dict, list)) for item in items)


def _fits_on_one_line(key: str, value: Any, path: tuple[str, ...], comments: Comments, indent: int) -> bool:
    """A flat mapping or list, or a list of flat mappings, that fits the width and holds no comment."""
    if not value or key in BLOCK_LISTS or any(where[: len(path)] == path and where != path for where in comments):
        return False
    flat = _is_flat(value) or (isinstance(value, list) and all(isinstance(v, dict) and _is_flat(v) for v in value))
    return flat and 2 * indent + len(key) + 2 + len(_flow(value)) <= FLOW_WIDTH


def _mapping(values: dict[str, Any], indent: int, path: tuple[str, ...], comments: Comments, lines: list[str]) -> None:
    pad = "  " * indent
    for key, value in values.items():
        here = (*path, key)
        for line in comments.get(here, "").splitlines():
            lines.append(f"{pad}# {line}")
        _entry(f"{pad}{_scalar(key)}:", key, value, indent, here, comments, lines)


def _entry(
    prefix: str, key: str, value: Any, indent: int, path: tuple[str, ...], comments: Comments, lines: list[str]
) -> None:
    # An empty mapping or list is `{}` or `[]`: a key with nothing after it is null to YAML.
    if not isinstance(value, (dict, list)) or not value or _fits_on_one_line(key, value, path, comments, indent):
        lines.append(f"{prefix} {_flow(value)}")
    elif isinstance(value, dict):
        lines.append(prefix)
        _mapping(value, indent + 1, path, comments, lines)
    else:
        lines.append(prefix)
        _items(value, indent + 1, path, comments, lines)


def _items(items: list[Any], indent: int, path: tuple[str, ...], comments: Comments, lines: list[str]) -> None:
    pad = "  " * indent
    for item in items:
        if not isinstance(item, dict):
            lines.append(f"{pad}- {_flow(item)}")
            continue
        # The item's keys line up under its first, which sits on the dash's line.
        nested: list[str] = []
        _mapping(item, indent + 1, path, comments, nested)
        first = next(index for index, line in enumerate(nested) if not line.lstrip().startswith("#"))
        nested[first] = f"{pad}- {nested[first][len(pad) + 2 :]}"
        lines += nested
