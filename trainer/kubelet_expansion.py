"""`$(NAME)` in a container's command, args and env values, read exactly as the kubelet reads it
(standard library only: the stack's validator, the local launcher and the pods all use it, and the
policy pack keeps a copy that tests/policy/test_copies.py holds against it).

The kubelet's rules (Kubernetes' third_party/forked/golang/expansion): `$(NAME)` is replaced by the
variable NAME, whatever characters NAME holds up to the first `)`; a NAME it does not know stays
as written, `$(NAME)`; `$$` is one literal `$`; a `$` before anything else, or a `$(` that no `)`
closes, is literal text.
"""

from __future__ import annotations

from typing import Iterator, Mapping


def reference_spans(text: str) -> Iterator[tuple[int, int, str]]:
    """Each `$(NAME)` of `text`: its start, its end and NAME, in order."""
    cursor = 0
    while cursor < len(text) - 1:
        if text[cursor] != "$":
            cursor += 1
            continue
        following = text[cursor + 1]
        if following == "(":
            closer = text.find(")", cursor + 2)
            if closer >= 0:
                yield cursor, closer + 1, text[cursor + 2 : closer]
                cursor = closer + 1
                continue
        # `$$`, `$(` unclosed, or `$x`: two characters of literal text, read past together.
        cursor += 2


def references(text: str) -> list[str]:
    """The names `text` refers to with `$(NAME)`."""
    return [name for _, _, name in reference_spans(text)]


def expand(text: str, variables: Mapping[str, str]) -> tuple[str, list[str]]:
    """`text` as the kubelet passes it on, and the names it refers to that `variables` lacks."""
    pieces: list[str] = []
    unresolved: list[str] = []
    cursor = 0
    for start, end, name in reference_spans(text):
        pieces.append(_literal(text[cursor:start]))
        if name in variables:
            pieces.append(variables[name])
        else:
            unresolved.append(name)
            pieces.append(text[start:end])
        cursor = end
    pieces.append(_literal(text[cursor:]))
    return "".join(pieces), unresolved


def escaped(text: str, known: set[str]) -> tuple[str, list[str]]:
    """`text` with each `$(NAME)` of a name not in `known` escaped to `$$(NAME)`, the literal text
    the kubelet passes on for a name it does not know; and those names."""
    pieces: list[str] = []
    unknown: list[str] = []
    cursor = 0
    for start, _, name in reference_spans(text):
        if name not in known:
            pieces += [text[cursor:start], "$"]
            unknown.append(name)
            cursor = start
    return "".join(pieces) + text[cursor:], unknown


def _literal(text: str) -> str:
    """Text between references, where `$$` is one `$` and any other `$` stays."""
    out: list[str] = []
    cursor = 0
    while cursor < len(text):
        if text.startswith("$$", cursor):
            out.append("$")
            cursor += 2
        elif text[cursor] == "$" and cursor + 1 < len(text):
            out.append(text[cursor : cursor + 2])
            cursor += 2
        else:
            out.append(text[cursor])
            cursor += 1
    return "".join(out)
