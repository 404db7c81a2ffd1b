"""A stack's values read as the user wrote them (docs/stack-files.md, "Values as written").

What YAML reads otherwise than written (strict_yaml.YamlReading) and keys left empty are refused here,
for every key alike, before the models see a value; what the models then read is plain values.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass, field
from typing import Any, Collection, Mapping

from .model_paths import TRAINER_KEY, annotation_at, bare, format_loc, is_model, is_required, origin_in
from .models import CONFIG_NAMESPACE
from .strict_yaml import YAML_1_2_NUMBER, YamlReading, plain_values, quoted, yaml_1_2_number


@dataclass
class AsWritten:
    """A stack's values with what YAML read otherwise than written taken apart (strict_yaml.YamlReading)."""

    values: dict[str, Any]  # plain values: what the models and the trainer's settings read
    errors: list[str] = field(default_factory=list)
    # Where a value was refused here: the models' own words about it would only repeat it, less clearly.
    refused: set[tuple[Any, ...]] = field(default_factory=set)
    # Values whose text YAML changed (`1.10` read as 1.1), where a number is fine: named as written if refused.
    readings: dict[tuple[Any, ...], YamlReading] = field(default_factory=dict)
    # What YAML 1.2 (Pulumi's) reads where a refused value was written: a key that must be given keeps it
    # when the refused values are set aside (set_aside).
    other_readings: dict[tuple[Any, ...], Any] = field(default_factory=dict)

    def explained(
        self, loc: tuple[Any, ...], message: str = "", said_with_refused_set_aside: Collection[str] = ()
    ) -> bool:
        """Whether what is wrong at `loc` (`()`: across keys) is already said. A value refused at `loc`, or
        at a mapping holding it, is: the models' words about it would only repeat it, less clearly. Above
        a refused value, a check may judge what YAML made of it, or its absence: `message` is left out
        where it names a refused key, or where the models do not say it of the values with every refused
        one set aside too (`said_with_refused_set_aside`); else it is a problem of its own, listed with
        the refusals rather than after they are fixed."""
        if any(loc[: len(refused)] == refused for refused in self.refused):
            return True
        below = [refused for refused in self.refused if refused[: len(loc)] == loc]
        if not below:
            return False
        return message not in said_with_refused_set_aside or any(_names(message, loc, key) for key in below)

    def set_aside(self) -> dict[str, Any]:
        """The values without those refused, for telling the problems that are theirs from the others:
        a refused key left out, or where its key must be given, read as YAML 1.2 reads it (`010` as 10)."""

        def kept(loc: tuple[Any, ...], value: Any) -> Any:
            if loc in self.refused:
                return self.other_readings[loc] if loc in self.other_readings and is_required(loc) else _EMPTY
            if isinstance(value, Mapping):
                entries = ((key, kept((*loc, key), item)) for key, item in value.items())
                return {key: item for key, item in entries if item is not _EMPTY}
            if isinstance(value, list):
                items = (kept((*loc, index), item) for index, item in enumerate(value))
                return [item for item in items if item is not _EMPTY]
            return value

        return kept((), self.values)

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
        result.errors.append(f"{format_loc(loc)}: {message}")
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
                if not value.written.startswith("!!"):
                    result.other_readings[loc] = _yaml_1_2_reading(value)
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


def _names(message: str, loc: tuple[Any, ...], key: tuple[Any, ...]) -> bool:
    """Whether `message`, about `loc`, names `key` below it: by its whole path, or by its path from `loc`."""
    whole = format_loc(key)
    names = [whole, whole[len(format_loc(loc)) :].lstrip(".")] if loc else [whole]
    return any(re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", message) for name in names)


def value_at(values: Mapping[str, Any], loc: tuple[Any, ...]) -> Any:
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
    if isinstance(value, str):  # text to YAML 1.1, a number to YAML 1.2
        return (
            f"{reading.written}, unquoted, is the text {written} to YAML 1.1 and {reading.reading}; quote it "
            f"for the text: {written}, or write the number as both read it: {yaml_1_2_number(value)!r}"
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


def _yaml_1_2_reading(reading: YamlReading) -> Any:
    """What YAML 1.2 makes of a value YAML 1.1 reads otherwise."""
    if isinstance(reading.value, str):  # `1e-3`: text to YAML 1.1
        return yaml_1_2_number(reading.value)
    if YAML_1_2_NUMBER.fullmatch(reading.written):  # `010`: octal to YAML 1.1
        return yaml_1_2_number(reading.written)
    return reading.written  # `1:30`, `yes`, `1_000`, dates: text to YAML 1.2


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
    annotation = annotation_at(loc)
    model = bare(annotation)
    if is_model(annotation) and any(info.is_required() for info in model.model_fields.values()):
        shape = "give its keys (docs/stack-reference.md)"
    elif loc == (TRAINER_KEY,) or is_model(annotation):
        shape = "write {} for the defaults of its keys"
    elif origin_in(annotation, (tuple, list)):
        shape = "write [] for an empty list, or its items"
    elif origin_in(annotation, (dict,)):
        shape = "write {} for none, or its entries"
    else:
        shape = "write its value"
    if is_required(loc):
        return f"empty; {shape} (a key with nothing after it is refused)"
    return f"empty; {shape}, or leave the key out for its default (a key with nothing after it is refused)"
