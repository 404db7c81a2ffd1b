"""pydantic's errors about a stack's values in the words of a stack file: the key as written, what it
takes, what was given as the user wrote it (YAML's reading named), and one line for a union's forms."""

from __future__ import annotations

import difflib
import typing
from dataclasses import dataclass
from typing import Any, Collection, Mapping, Optional

from pydantic import BaseModel, ValidationError

from .as_written import AsWritten, value_at
from .kubernetes_limits import (
    CONFIG_MAP_KEY_PATTERN,
    DNS1123_LABEL_PATTERN,
    DNS1123_SUBDOMAIN_PATTERN,
    LABEL_VALUE_PATTERN,
)
from .model_paths import allowed_keys, bare, format_loc, is_model, step, union_members
from .models import StackConfig
from .quantities import QUANTITY_FORM, QUANTITY_PATTERN
from .shown_values import shown
from .strict_yaml import YamlReading, quoted


@dataclass(frozen=True)
class _UnionPart:
    at: tuple[Any, ...]  # where the union's value is
    member: Any  # the form pydantic tried
    members: tuple[Any, ...]


def _without_union_members(loc: tuple[Any, ...]) -> tuple[tuple[Any, ...], Optional[_UnionPart]]:
    """`loc` without the label pydantic puts in it for each form of a union (`env.X.str`, `env.X.SecretRef`):
    a user never wrote those; and the first union met, if any."""
    annotation: Any = StackConfig
    kept: list[Any] = []
    union: Optional[_UnionPart] = None
    for part in loc:
        members = union_members(annotation)
        if members and isinstance(part, str) and part != "[key]":
            member = next((m for m in members if getattr(bare(m), "__name__", None) == part), None)
            union = union or _UnionPart(tuple(kept), member, members)
            annotation = member
            continue
        kept.append(part)
        annotation = step(annotation, part)
    return tuple(kept), union


def _form_words(member: Any) -> str:
    """A form of a union as a stack file writes it."""
    form = bare(member)
    if isinstance(form, type) and issubclass(form, BaseModel):
        return "{" + ", ".join(info.alias or name for name, info in form.model_fields.items()) + "}"
    if typing.get_origin(form) is typing.Literal:
        return " or ".join(str(choice) for choice in typing.get_args(form))
    return {str: "text", int: "a whole number", bool: "true or false", float: "a number"}.get(form, "a list")


def _one_error_per_union(errors: list[Any]) -> list[Any]:
    """pydantic's errors with each union's reported once: a mapping given where a mapping is one of the
    forms, that form's errors; anything else, one error saying which forms there are."""
    plain: list[Any] = []
    by_union: dict[tuple[Any, ...], list[tuple[_UnionPart, tuple[Any, ...], Any]]] = {}
    for error in errors:
        loc, union = _without_union_members(tuple(error["loc"]))
        if union is None:
            plain.append(error)
        else:
            by_union.setdefault(union.at, []).append((union, loc, error))
    for at, tried in by_union.items():
        members = tried[0][0].members
        given = next((error.get("input") for _, loc, error in tried if loc == at), None)
        mapping_form = [
            {**error, "loc": loc}
            for union, loc, error in tried
            if is_model(union.member) and (loc != at or error["type"] != "model_type")
        ]
        if mapping_form and (given is None or isinstance(given, Mapping)):
            plain.extend(mapping_form)
            continue
        words = " or ".join(_form_words(member) for member in members)
        plain.append(
            {
                "type": "string_type" if str in members else "union_type",
                "loc": at,
                "msg": f"should be {words}",
                "input": given,
            }
        )
    return plain


def _text_not(given: Any) -> str:
    """Text given as a mapping or a list; Kubernetes' own form of a reference, `{name: regcred}`, as
    the name itself, which is what a stack file writes there."""
    if not isinstance(given, dict):
        return "should be text, not a list"
    name = given.get("name")
    if set(given) == {"name"} and isinstance(name, str):
        return f"should be text, not a mapping: write the name itself, {quoted(name)}"
    return "should be text, not a mapping"


def _quote_hint(error: Mapping[str, Any], reading: Optional[YamlReading]) -> str:
    """Where text belongs and a number or boolean was written unquoted: how to write it."""
    got = error.get("input")
    if error["type"] != "string_type" or not isinstance(got, (bool, int, float)):
        return ""
    written = reading.written if reading is not None else str(got).lower() if isinstance(got, bool) else repr(got)
    return f"; quote it: {quoted(written)}"


def describe_validation_error(
    exc: ValidationError, as_written: Optional[AsWritten] = None, said_with_refused_set_aside: Collection[str] = ()
) -> list[str]:
    """The models' errors, each in a stack file's words; those a value refused as written explains left
    out (AsWritten.explained: `said_with_refused_set_aside` are the models' words without those values)."""
    as_written = as_written or AsWritten(values={})
    return [
        message
        for loc, message in _described(exc, as_written)
        if not as_written.explained(loc, message, said_with_refused_set_aside)
    ]


def _described(exc: ValidationError, as_written: AsWritten) -> list[tuple[tuple[Any, ...], str]]:
    messages: list[tuple[tuple[Any, ...], str]] = []
    for error in _one_error_per_union(exc.errors(include_url=False)):
        loc = tuple(error["loc"])
        if error["type"] == "invalid_key":
            # A model's key that is not text (`ps: {1: 2}`): named as a key, not as a list's index.
            named = str(loc[-1]).lower() if isinstance(loc[-1], bool) else str(loc[-1])
            messages.append((loc, f"{format_loc(loc[:-1])}: the key {named} is not text; quote it: {quoted(named)}"))
            continue
        if loc[-1:] == ("[key]",):
            # A mapping's key that is not text (`selector: {1: a}`): pydantic puts it in the path.
            key = loc[-2]
            written = as_written.readings.get(loc[:-1])
            named = written.written if written else str(key).lower() if isinstance(key, bool) else str(key)
            if error["type"] == "string_type":
                messages.append(
                    (loc, f"{format_loc(loc[:-2])}: the key {named} is not text; quote it: {quoted(named)}")
                )
            else:
                messages.append((loc, f"{format_loc(loc[:-2])}: the key {named}: {error['msg']}"))
            continue
        field_path = format_loc(loc)
        if loc[-2:] == ("namespace", "name") and isinstance(value_at(as_written.values, loc[:-1]), str):
            field_path = format_loc(loc[:-1])  # `namespace: Team-A`, the name alone: no `name` key was written
        if error["type"] == "extra_forbidden":
            allowed = allowed_keys(loc[:-1])
            key = str(loc[-1]).lower() if isinstance(loc[-1], bool) else str(loc[-1])
            hint = did_you_mean(key, allowed)
            # A key, never a list's index: `ps: {1: 2}` is ps.1.
            messages.append((loc, f"{format_loc(loc[:-1])}.{key}: unknown key{hint}; allowed: {', '.join(allowed)}"))
            continue
        message = error["msg"]
        if message.startswith("Value error, "):
            message = message[len("Value error, ") :]
        if error["type"] == "string_pattern_mismatch":
            message = _pattern_help(error)
        elif error["type"] == "string_too_long":
            message = f"must be {_name_kind(error, 'text')} of at most {error['ctx']['max_length']} characters"
        elif error["type"] == "dict_type":
            message = "should be a mapping"  # as YAML names it
        elif error["type"] == "tuple_type":
            message = "should be a list"  # a stack file's sequences are lists; tuples are how tfk8s holds them
        elif error["type"] == "model_type":
            # Not the class tfk8s holds it in: what the stack file writes (`{}` for every default).
            message = "should be a mapping of its keys (`{}` for the defaults)"
        elif error["msg"] == "Input should be a valid string" and isinstance(error.get("input"), (dict, list)):
            # Only pydantic's own words: a union's message, made above, already names its forms.
            message = _text_not(error["input"])
        got = error.get("input")
        reading = as_written.readings.get(loc)
        if error["type"] not in ("missing",) and not isinstance(got, (dict, list)):
            given = f"{reading.written}, which YAML reads as {reading.reading}" if reading else shown(got)
            message = f"{message} (got {given}){_quote_hint(error, reading)}"
        messages.append((loc, f"{field_path}: {message}"))
    return messages


# What each pattern allows, in words.
_PATTERN_RULES = {
    DNS1123_LABEL_PATTERN: "lower-case letters, digits and '-', at most 63",
    LABEL_VALUE_PATTERN: "letters, digits, '-', '_', '.', at most 63",
    DNS1123_SUBDOMAIN_PATTERN: "lower-case letters, digits, '-' and '.', starting and ending with a letter or digit",
    CONFIG_MAP_KEY_PATTERN: "letters, digits, '-', '_' and '.'",
}
# What a DNS subdomain of the right letters and ends breaks: a part between its dots ('a..b', 'a.-b').
_SUBDOMAIN_PARTS = ", each part between dots too"
# What a name names, by its key: a claim refused as "a node name" sends the user to the wrong docs.
_NAME_KINDS = {
    "nodes": "a node name",
    "name": "a pool name",
    "pool": "a pool name",
    "claim": "a PersistentVolumeClaim's name",
    "secret": "a Secret's name",
    "imagePullSecrets": "a Secret's name",
    "key": "a key of the Secret",
    "storageClass": "a StorageClass's name",
    "priorityClass": "a PriorityClass's name",
    "namespace": "a namespace (a DNS label)",
    "queue": "a ClusterQueue's name",
    "product": "a GPU product's label value",
}
_KIND_OF_PATTERN = {
    DNS1123_LABEL_PATTERN: "a DNS label",
    LABEL_VALUE_PATTERN: "a label value",
    DNS1123_SUBDOMAIN_PATTERN: "a DNS subdomain",
    CONFIG_MAP_KEY_PATTERN: "a Secret key",
}


def _pattern_help(error: Mapping[str, Any]) -> str:
    pattern = (error.get("ctx") or {}).get("pattern", "")
    if pattern == QUANTITY_PATTERN:
        return QUANTITY_FORM
    rules = _PATTERN_RULES.get(pattern)
    if rules is None:
        return error["msg"]
    got = error.get("input")
    if pattern == DNS1123_SUBDOMAIN_PATTERN and isinstance(got, str) and any(p in got for p in ("..", ".-", "-.")):
        rules += _SUBDOMAIN_PARTS
    return f"must be {_name_kind(error, _KIND_OF_PATTERN[pattern])}: {rules}"


def _name_kind(error: Mapping[str, Any], otherwise: str) -> str:
    keys = [part for part in error["loc"] if isinstance(part, str)]
    key = keys[-1] if keys else ""
    # A `name` is the pool's, except under `namespace`, where it is the namespace's.
    if key == "name" and keys[-2:-1] == ["namespace"]:
        key = "namespace"
    return _NAME_KINDS.get(key) or otherwise


def did_you_mean(key: str, allowed: Any) -> str:
    close = difflib.get_close_matches(key, list(allowed), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""
