"""A stack's `tfk8s:*` values to a frozen `StackConfig`: the only place a stack file is parsed and checked.

`load_stack_config(stack, values)` returns the `StackConfig`, or raises
`StackConfigError` with one message that names the stack, each bad field and
what is allowed. Nothing here touches Pulumi resources, so a bad stack fails
before anything is registered.
"""

from __future__ import annotations

import datetime
import difflib
import re
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from pydantic import BaseModel, ValidationError

from .cross_checks import cross_checks, task_count_problems
from .logs_rules import log_archive_checks
from .models import CONFIG_NAMESPACE, StackConfig, StackConfigError
from .program import DNS_SUBDOMAIN, SECRET_KEY
from .quantities import DNS_LABEL_PATTERN, LABEL_VALUE_PATTERN, NODE_NAME_PATTERN, QUANTITY_PATTERN
from .strict_yaml import YamlReading, described, plain_values, quoted
from .tensorboard_rules import tensorboard_checks
from .trainer_contract import SettingsError, TrainerSettings

# --------------------------------------------------------------------------
# Loading

# Read by its own parser (trainer/settings.py), and its defaults apply when the stack leaves it out.
TRAINER_KEY = "trainer"


def load_stack_config(stack: str, values: Mapping[str, Any]) -> StackConfig:
    """Validate the `tfk8s:*` config of `stack`.

    `values` maps keys with or without the `tfk8s:` prefix to decoded values
    (mappings and lists as the stack file writes them).
    """
    errors: list[str] = []
    keys = StackConfig.file_keys()
    if not re.match(LABEL_VALUE_PATTERN, stack) or not stack:
        errors.append(
            f"stack name '{stack}' must be usable as a label value: letters, digits, '-', '_', '.', at most 63"
        )
    given: dict[str, Any] = {}
    for key, value in values.items():
        if not isinstance(key, str):
            errors.append(f"config key {key!r} is not text; keys are '<namespace>:<name>', e.g. tfk8s:cluster")
            continue
        short = key.split(":", 1)[1] if key.startswith(f"{CONFIG_NAMESPACE}:") else key
        namespace = key.split(":", 1)[0] if ":" in key else None
        if short in keys:
            given[short] = value
        elif ":" not in key or key.startswith(f"{CONFIG_NAMESPACE}:"):
            errors.append(
                f"{CONFIG_NAMESPACE}:{short}: unknown key{_did_you_mean(short, keys)}; "
                f"allowed: {', '.join(f'{CONFIG_NAMESPACE}:{k}' for k in keys)}"
            )
        elif namespace is not None and is_near_namespace(namespace):
            errors.append(_namespace_typo(key, namespace, keys))

    # Every value as the user wrote it: what YAML reads otherwise than written, and keys left empty,
    # refused here for every key alike; what the models then see is plain values.
    as_written = read_as_written(given)
    errors.extend(as_written.errors)
    given = as_written.values

    # The keys whose fields have no default, but the trainer's, whose defaults are filled in below.
    required_keys = [
        key for key, name in keys.items() if StackConfig.model_fields[name].is_required() and key != TRAINER_KEY
    ]
    for required in required_keys:
        if required not in given and (required,) not in as_written.refused:
            errors.append(f"{CONFIG_NAMESPACE}:{required}: missing; every stack needs it")
    if "program" in given and TRAINER_KEY in given:
        errors.append(
            f"{CONFIG_NAMESPACE}:program and {CONFIG_NAMESPACE}:trainer are both set: a stack runs either the "
            f"team's own program or tfk8s's trainer; drop {CONFIG_NAMESPACE}:trainer (it configures tfk8s's "
            "trainer only)"
        )

    try:
        # Not `or None`: an empty list or a 0 is a mistake, not a request for the defaults.
        trainer = TrainerSettings.from_config(given.get(TRAINER_KEY))
    except SettingsError as exc:
        trainer = None
        loc = (TRAINER_KEY, exc.key) if exc.key else (TRAINER_KEY,)
        if not as_written.explained(loc):
            message = as_written.with_written_text(loc, exc.message)
            given_value = _value_at(given, loc)
            if isinstance(given_value, (dict, list)) and given_value:
                # Not Python's repr of what YAML made of it.
                message = re.sub(r"\(got [^\n]*\)$", f"(got {described(given_value)})", message)
            errors.append(f"{_format_loc(loc)}: {message}")

    # Every problem in one pass: the pools and the cluster are checked even when the trainer
    # settings or the top-level keys have errors of their own.
    config: StackConfig | None = None
    if all(required in given for required in required_keys):
        sections = {key: given[key] for key in keys if key in given}
        sections[TRAINER_KEY] = trainer or TrainerSettings()
        try:
            config = StackConfig.model_validate({"stack": stack, **sections})
        except ValidationError as exc:
            errors.extend(_describe_validation_error(exc, as_written))

    # The size bound first, alone: the other checks size memory from the task counts.
    size_problems = task_count_problems(config) if config is not None else []
    errors.extend(size_problems)
    # The cross checks size memory from the trainer settings: only with settings that are valid, and
    # values read as written (else they would judge what YAML made of a value that is refused).
    if config is not None and trainer is not None and not size_problems and not as_written.refused:
        errors.extend(cross_checks(config))
        errors.extend(tensorboard_checks(config))
        errors.extend(log_archive_checks(config))
    if errors:
        raise StackConfigError.listing(stack, errors)
    assert config is not None
    return config


def is_near_namespace(namespace: str) -> bool:
    """A config namespace one slip from tfk8s's (`tfk8`, `tfks`, `tf8s`, `tfk8S`, `tkf8s`): a typo, since
    a Pulumi stack passes every namespace's keys on and another namespace's are not tfk8s's to judge."""
    if namespace == CONFIG_NAMESPACE:
        return False
    return _edit_distance(namespace.lower(), CONFIG_NAMESPACE) <= 1


def _edit_distance(a: str, b: str) -> int:
    """Optimal string alignment distance: insertions, deletions, substitutions and swaps of neighbours."""
    previous_row: list[int] = []
    row = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        before, previous_row, row = previous_row, row, [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            row[j] = min(previous_row[j] + 1, row[j - 1] + 1, previous_row[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[j] = min(row[j], before[j - 2] + 1)
    return row[len(b)]


def _namespace_typo(key: str, namespace: str, keys: Mapping[str, str]) -> str:
    name = key.split(":", 1)[1]
    close = difflib.get_close_matches(name, list(keys), n=1)
    meant = name if name in keys else (close[0] if close else name)
    return (
        f"{key}: unknown namespace '{namespace}' (did you mean '{CONFIG_NAMESPACE}:{meant}'?); tfk8s reads "
        f"only {CONFIG_NAMESPACE}:* keys, so this one would be ignored"
    )


# --------------------------------------------------------------------------
# Values as written


@dataclass
class AsWritten:
    """A stack's values with what YAML read otherwise than written taken apart (strict_yaml.YamlReading)."""

    values: dict[str, Any]  # plain values: what the models and the trainer's settings read
    errors: list[str] = field(default_factory=list)
    # Where a value was refused here: the models' own words about it would only repeat it, less clearly.
    refused: set[tuple[Any, ...]] = field(default_factory=set)
    # Values whose text YAML changed (`1.10` read as 1.1), where a number is fine: named as written if refused.
    readings: dict[tuple[Any, ...], YamlReading] = field(default_factory=dict)

    def explained(self, loc: tuple[Any, ...]) -> bool:
        """Whether what is wrong at `loc` is already said: a value refused at or below it (a mapping's own
        checks would judge what YAML made of a value it holds, not what was written)."""
        return any(loc[: len(refused)] == refused or refused[: len(loc)] == loc for refused in self.refused)

    def with_written_text(self, loc: tuple[Any, ...], message: str) -> str:
        """`message` with a value YAML read otherwise named as written (`got 1.1` -> `got 1.10, which ...`)."""
        reading = self.readings.get(loc)
        if reading is None:
            return message
        return re.sub(r"\(got [^)]*\)$", f"(got {reading.written}, which YAML reads as {reading.reading})", message)


# A value that is not there: dropped from its mapping, as if the key were left out.
_EMPTY = object()


def read_as_written(given: Mapping[str, Any]) -> AsWritten:
    """The values of a stack's keys (`cluster`, without `tfk8s:`) read as the user wrote them. Refused,
    each naming its key, the value as written and how to write it:
    - a value YAML parsers read differently, or of a type only YAML has (strict_yaml.YamlReading):
      `ratio: 1:10` is the base-60 number 70 to PyYAML and the text '1:10' to Pulumi's YAML 1.2;
    - a key of a stack file with nothing after it (`tfk8s:logs:`, `null`), the same for every key at
      every depth: neither its default nor `{}`/`[]`, since the two differ (docs/stack-files.md); and
      a top-level key of any source that is None.
    """
    result = AsWritten(values={})

    def refuse(loc: tuple[Any, ...], message: str) -> None:
        result.errors.append(f"{_format_loc(loc)}: {message}")
        result.refused.add(loc)

    def walk(loc: tuple[Any, ...], value: Any) -> Any:
        if isinstance(value, YamlReading) and value.value is None:
            # Only the stack file's: Python's None inside a mapping (TFExperiment's arguments) is what
            # pydantic makes of it, for a key that may be unset its default.
            refuse(loc, _empty_help(loc))
            return _EMPTY
        if isinstance(value, YamlReading):
            if value.ambiguous:
                refuse(loc, _misread(value))
            else:
                result.readings[loc] = value
            return plain_values(value.value)
        if isinstance(value, Mapping):
            walked = {}
            for key, item in value.items():
                if isinstance(key, YamlReading) and not key.written:
                    refuse(loc, "a key with nothing before its ':'; name it")
                    key = key.written
                elif isinstance(key, YamlReading):
                    refuse(
                        (*loc, key.written),
                        f"the key {key.written} is, to YAML, {key.reading}; a key is a name: quote it: "
                        f"{quoted(key.written)}",
                    )
                    key = key.written  # what the user meant: a name
                item = walk((*loc, key), item)
                if item is not _EMPTY:
                    walked[key] = item
            return walked
        if isinstance(value, (list, tuple)):
            return [None if item is _EMPTY else item for item in (walk((*loc, i), v) for i, v in enumerate(value))]
        if isinstance(value, (set, frozenset, bytes, bytearray, datetime.date)):
            refuse(loc, f"{_python_kind(value)}, which no stack value is; {_how_to_write_python(value)}")
            return value
        return value

    for key, value in given.items():
        if value is None:
            # A top-level key the engine passes empty (its config holds what the file wrote: nothing),
            # refused as the stack file's reading is; TFExperimentArgs leaves its None arguments out.
            refuse((key,), _empty_help((key,)))
            continue
        walked = walk((key,), value)
        if walked is not _EMPTY:
            result.values[key] = walked
    return result


def _value_at(values: Mapping[str, Any], loc: tuple[Any, ...]) -> Any:
    """The value at `loc`, None where there is none."""
    value: Any = values
    for part in loc:
        if isinstance(value, Mapping) and part in value or isinstance(value, list) and isinstance(part, int):
            value = value[part] if not isinstance(value, list) or part < len(value) else None
        else:
            return None
    return value


def _misread(reading: YamlReading) -> str:
    """What YAML made of a value, and how to write what was meant."""
    value = reading.value
    written = quoted(reading.written)
    if isinstance(value, bool):
        return (
            f"{reading.written}, unquoted, is {reading.reading} to YAML 1.1 and the text {written} to YAML 1.2 "
            f"(Pulumi's); write true or false, or quote it for the text: {written}"
        )
    if isinstance(value, (int, float)):
        return (
            f"{reading.written}, unquoted, is {reading.reading} to YAML 1.1 and not to YAML 1.2 (Pulumi's); "
            f"quote it for the text: {written}, or write the number {value!r}"
        )
    if isinstance(value, datetime.date):
        return (
            f"{reading.written}, unquoted, is to YAML {reading.reading}, which no stack value is; quote it: {written}"
        )
    if isinstance(value, (set, list)):
        return (
            f"{reading.written} is {reading.reading}, which no stack value is; write a list [a, b] or a "
            "mapping {a: 1}"
        )
    return f"{reading.written} is {reading.reading}, which no stack value is; write the text itself"


def _python_kind(value: Any) -> str:
    if isinstance(value, (set, frozenset)):
        return "a set"
    if isinstance(value, (bytes, bytearray)):
        return "bytes"
    return f"the {'timestamp' if isinstance(value, datetime.datetime) else 'date'} {value.isoformat()}"


def _how_to_write_python(value: Any) -> str:
    if isinstance(value, (set, frozenset)):
        return "give a list (a set has no order)"
    return "give text"


def _empty_help(loc: tuple[Any, ...]) -> str:
    """A key with nothing after it: what to write instead, by what the key takes."""
    if isinstance(loc[-1], int):
        return "empty (a list item with nothing in it); give the item, or remove its '-'"
    if loc == ("program",):
        return (
            f"empty; give the program's keys (docs/programs.md), or leave {CONFIG_NAMESPACE}:program out to run "
            "tfk8s's trainer"
        )
    annotation = _annotation_at(loc)
    model = _bare(annotation)
    if _is_model(annotation) and any(info.is_required() for info in model.model_fields.values()):
        shape = "give its keys (docs/stack-reference.md)"
    elif loc == (TRAINER_KEY,) or _is_model(annotation):
        shape = "write {} for the defaults of its keys"
    elif _origin_in(annotation, (tuple, list)):
        shape = "write [] for an empty list, or its items"
    elif _origin_in(annotation, (dict,)):
        shape = "write {} for none, or its entries"
    else:
        shape = "write its value"
    if _is_required(loc):
        return f"empty; {shape} (a key with nothing after it is refused)"
    return f"empty; {shape}, or leave the key out for its default (a key with nothing after it is refused)"


def _is_required(loc: tuple[Any, ...]) -> bool:
    """Whether the field at `loc` must be given (`tfk8s:cluster`, `workers.pool`); the trainer's settings
    may be left out: their defaults apply."""
    if loc == (TRAINER_KEY,):
        return False
    parent = _bare(_annotation_at(loc[:-1]))
    if not (isinstance(parent, type) and issubclass(parent, BaseModel)):
        return False
    info = next((info for name, info in parent.model_fields.items() if (info.alias or name) == loc[-1]), None)
    return info is not None and info.is_required()


def _annotation_at(loc: tuple[Any, ...]) -> Any:
    """The annotation of the field at `loc` (a pydantic error location, without union members), None where
    none is known."""
    annotation: Any = StackConfig
    for part in loc:
        annotation = _step(annotation, part)
    return annotation


def _step(annotation: Any, part: Any) -> Any:
    """The annotation one part of a location further in: a model's field, a dict's value, a list's item."""
    if annotation is None:
        return None
    bare = _bare(annotation)
    if isinstance(bare, type) and issubclass(bare, BaseModel):
        name = next((name for name, info in bare.model_fields.items() if (info.alias or name) == part), None)
        return bare.model_fields[name].annotation if name is not None else None
    if typing.get_origin(bare) is dict or (isinstance(part, int) and typing.get_origin(bare) in (tuple, list)):
        return _value_type(bare)
    return None


def _union_members(annotation: Any) -> tuple[Any, ...]:
    """The forms of a union of several (`str` or `SecretRef`); () for any other annotation."""
    bare = _bare(annotation) if annotation is not None else None
    if typing.get_origin(bare) not in (typing.Union, types.UnionType):
        return ()
    return tuple(arg for arg in typing.get_args(bare) if arg is not type(None))


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
        members = _union_members(annotation)
        if members and isinstance(part, str) and part != "[key]":
            member = next((m for m in members if getattr(_bare(m), "__name__", None) == part), None)
            union = union or _UnionPart(tuple(kept), member, members)
            annotation = member
            continue
        kept.append(part)
        annotation = _step(annotation, part)
    return tuple(kept), union


def _form_words(member: Any) -> str:
    """A form of a union as a stack file writes it."""
    bare = _bare(member)
    if isinstance(bare, type) and issubclass(bare, BaseModel):
        return "{" + ", ".join(info.alias or name for name, info in bare.model_fields.items()) + "}"
    if typing.get_origin(bare) is typing.Literal:
        return " or ".join(str(choice) for choice in typing.get_args(bare))
    return {str: "text", int: "a whole number", bool: "true or false", float: "a number"}.get(bare, "a list")


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
            if _is_model(union.member) and (loc != at or error["type"] != "model_type")
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


def _bare(annotation: Any) -> Any:
    """Without Optional and Annotated."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin in (typing.Union, types.UnionType):
            rest = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
            if len(rest) != 1:
                return annotation
            annotation = rest[0]
        else:
            return annotation


def _is_model(annotation: Any) -> bool:
    bare = _bare(annotation)
    return isinstance(bare, type) and issubclass(bare, BaseModel)


def _origin_in(annotation: Any, origins: tuple[type, ...]) -> bool:
    return typing.get_origin(_bare(annotation)) in origins


def _value_type(annotation: Any) -> Any:
    """What a dict holds as values, or a tuple or list as items."""
    args = typing.get_args(_bare(annotation))
    return args[-1] if typing.get_origin(_bare(annotation)) is dict else args[0] if args else None


def _quote_hint(error: Mapping[str, Any], reading: Optional[YamlReading]) -> str:
    """Where text belongs and a number or boolean was written unquoted: how to write it."""
    got = error.get("input")
    if error["type"] != "string_type" or not isinstance(got, (bool, int, float)):
        return ""
    written = reading.written if reading is not None else str(got).lower() if isinstance(got, bool) else repr(got)
    return f"; quote it: {quoted(written)}"


def _describe_validation_error(exc: ValidationError, as_written: Optional[AsWritten] = None) -> list[str]:
    as_written = as_written or AsWritten(values={})
    messages = []
    for error in _one_error_per_union(exc.errors(include_url=False)):
        loc = tuple(error["loc"])
        if as_written.explained(loc):
            continue
        if error["type"] == "invalid_key":
            # A model's key that is not text (`ps: {1: 2}`): named as a key, not as a list's index.
            shown = str(loc[-1]).lower() if isinstance(loc[-1], bool) else str(loc[-1])
            messages.append(f"{_format_loc(loc[:-1])}: the key {shown} is not text; quote it: {quoted(shown)}")
            continue
        if loc[-1:] == ("[key]",):
            # A mapping's key that is not text (`selector: {1: a}`): pydantic puts it in the path.
            key = loc[-2]
            written = as_written.readings.get(loc[:-1])
            shown = written.written if written else str(key).lower() if isinstance(key, bool) else str(key)
            if error["type"] == "string_type":
                messages.append(f"{_format_loc(loc[:-2])}: the key {shown} is not text; quote it: {quoted(shown)}")
            else:
                messages.append(f"{_format_loc(loc[:-2])}: the key {shown}: {error['msg']}")
            continue
        field_path = _format_loc(loc)
        if error["type"] == "extra_forbidden":
            allowed = _allowed_keys(loc[:-1])
            key = str(loc[-1]).lower() if isinstance(loc[-1], bool) else str(loc[-1])
            hint = _did_you_mean(key, allowed)
            # A key, never a list's index: `ps: {1: 2}` is ps.1.
            messages.append(f"{_format_loc(loc[:-1])}.{key}: unknown key{hint}; allowed: {', '.join(allowed)}")
            continue
        message = error["msg"]
        if message.startswith("Value error, "):
            message = message[len("Value error, ") :]
        if error["type"] == "string_pattern_mismatch":
            message = _pattern_help(error)
        elif error["type"] == "dict_type":
            message = "should be a mapping"  # as YAML names it
        elif error["type"] == "tuple_type":
            message = "should be a list"  # a stack file's sequences are lists; tuples are how tfk8s holds them
        elif error["type"] == "model_type":
            # Not the class tfk8s holds it in: what the stack file writes (`{}` for every default).
            message = "should be a mapping of its keys (`{}` for the defaults)"
        got = error.get("input")
        reading = as_written.readings.get(loc)
        if error["type"] not in ("missing",) and not isinstance(got, (dict, list)):
            shown = f"{reading.written}, which YAML reads as {reading.reading}" if reading else _shown_input(got)
            message = f"{message} (got {shown}){_quote_hint(error, reading)}"
        messages.append(f"{field_path}: {message}")
    return messages


# What each pattern allows, in words.
_PATTERN_RULES = {
    DNS_LABEL_PATTERN: "lower-case letters, digits and '-', at most 63",
    LABEL_VALUE_PATTERN: "letters, digits, '-', '_', '.', at most 63",
    NODE_NAME_PATTERN: "lower-case letters, digits, '-' and '.', starting and ending with a letter or digit",
    DNS_SUBDOMAIN: "lower-case letters, digits, '-' and '.', starting and ending with a letter or digit",
    SECRET_KEY: "letters, digits, '-', '_' and '.'",
}
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
    DNS_LABEL_PATTERN: "a DNS label",
    LABEL_VALUE_PATTERN: "a label value",
    NODE_NAME_PATTERN: "a DNS subdomain",
    DNS_SUBDOMAIN: "a DNS subdomain",
    SECRET_KEY: "a Secret key",
}


def _pattern_help(error: Mapping[str, Any]) -> str:
    pattern = (error.get("ctx") or {}).get("pattern", "")
    if pattern == QUANTITY_PATTERN:
        return "must be a Kubernetes quantity such as '500m', '2', '4Gi'"
    rules = _PATTERN_RULES.get(pattern)
    if rules is None:
        return error["msg"]
    key = next((part for part in reversed(tuple(error["loc"])) if isinstance(part, str)), "")
    kind = _NAME_KINDS.get(key) or _KIND_OF_PATTERN[pattern]
    return f"must be {kind}: {rules}"


# A value echoed back in full would bury the message (a 400-digit quantity, a pasted blob).
SHOWN_INPUT_CHARS = 60


def _shown_input(value: Any) -> str:
    shown = str(value).lower() if isinstance(value, bool) else repr(value)  # a boolean as YAML writes it
    return shown if len(shown) <= SHOWN_INPUT_CHARS else f"{shown[:SHOWN_INPUT_CHARS]}... ({len(shown):,} characters)"


def _format_loc(loc: tuple) -> str:
    if not loc:
        return f"{CONFIG_NAMESPACE}:(stack)"
    head, *rest = loc
    path = f"{CONFIG_NAMESPACE}:{head}"
    annotation = _step(StackConfig, head)
    for part in rest:
        # A list's index in brackets; a mapping's key, a number too (`selector: {1: a}`), after a dot.
        in_mapping = typing.get_origin(_bare(annotation)) is dict if annotation is not None else False
        index = isinstance(part, int) and not isinstance(part, bool) and not in_mapping
        shown = str(part).lower() if isinstance(part, bool) else part
        path += f"[{part}]" if index else f".{shown}"
        annotation = _step(annotation, part)
    return path


def _allowed_keys(loc: tuple) -> list[str]:
    """The camelCase keys allowed at `loc` (a pydantic error location, without union members)."""
    model = _model_in(_annotation_at(loc))
    if model is None:
        return []
    return [info.alias or name for name, info in model.model_fields.items() if name != "stack"]


def _model_in(annotation: Any) -> Any:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def _did_you_mean(key: str, allowed: Any) -> str:
    close = difflib.get_close_matches(key, list(allowed), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""
