"""YAML read as a user means it: a key given twice in one mapping is refused, naming the key and both lines;
and a stack file's values that YAML reads otherwise than written are kept with their text (YamlReading).

YAML's own rule is that keys are unique, but PyYAML keeps the last of two
quietly: a second `workers:` left from an edit would replace the first, and
the experiment would run with the count nobody meant. libyaml parses (its
speed where it is installed); only the mapping construction is checked here.

PyYAML reads YAML 1.1, where unquoted `1:30` is 90 and `yes` is true; Pulumi's engine reads the same
file as YAML 1.2, where both are text. A stack file's reader (load_yaml) keeps such values as
YamlReadings, so that the stack's loader (loading.py) refuses them named as the user wrote them.
"""

from __future__ import annotations

import datetime
import re
from typing import Any, Iterator

import yaml

from .shown_values import shown

_BaseLoader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_MERGE_TAG = "tag:yaml.org,2002:merge"


class DuplicateKeyError(yaml.constructor.ConstructorError):
    """A mapping gives one key twice."""

    def __init__(self, key: Any, first_line: int, second_line: int, mark: Any) -> None:
        self.key, self.first_line, self.second_line = key, first_line, second_line
        super().__init__(problem=self.describe(), problem_mark=mark)

    def describe(self) -> str:
        return (
            f"the key '{self.key}' is given twice (lines {self.first_line} and {self.second_line}); "
            "the second would silently replace the first: keep one"
        )

    def __str__(self) -> str:
        return self.describe()


class UniqueKeyLoader(_BaseLoader):
    """The safe loader, refusing a key given twice in one mapping (merged `<<:` keys may be overridden)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == _MERGE_TAG:
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    first = seen.get(key)
                except TypeError:
                    continue  # an unhashable key: the safe loader refuses it itself
                line = key_node.start_mark.line + 1
                if first is not None:
                    raise DuplicateKeyError(key, first, line, key_node.start_mark)
                seen[key] = line
        return super().construct_mapping(node, deep=deep)


class YamlReading:
    """A value whose text, as written, YAML reads as something else: a plain (unquoted) scalar whose
    value is not its text (`1:30` is 90, `yes` is true, `1.10` is 1.1, `2026-01-01` a date, nothing
    or `~` null), or a YAML-only type (`!!set`, `!!binary`, `!!omap`, `!!pairs`). A stack file's reader keeps both, so
    that what is refused is named as the user wrote it; `value` is what PyYAML makes of it.

    `ambiguous`: YAML parsers disagree on it (YAML 1.1, which PyYAML reads, against YAML 1.2,
    which Pulumi's engine reads: `1:30`, `yes`, `010`, `1_000`, dates), or no stack value can be
    of its type (sets, binary, ordered maps); such a value is refused wherever it is given.
    Otherwise only its text is lost (`1.10`, `0x1F`, `.inf`): where a number belongs it is that number.
    """

    __slots__ = ("written", "value", "ambiguous", "reading")

    def __init__(self, written: str, value: Any, ambiguous: bool, reading: str) -> None:
        self.written, self.value, self.ambiguous, self.reading = written, value, ambiguous, reading

    def __repr__(self) -> str:
        return self.written

    __str__ = __repr__


def quoted(text: str) -> str:
    """`text` as a YAML single-quoted scalar: 'yes', 'it''s'."""
    return "'" + text.replace("'", "''") + "'"


def _integer_reading(written: str, value: int) -> str:
    digits = written.lstrip("+-")
    if ":" in written:
        return f"the base-60 number {value}"
    if digits.startswith(("0b", "0B")):
        return f"the binary number {value}"
    if digits.startswith(("0x", "0X")):
        return f"the hexadecimal number {value}"
    if len(digits) > 1 and digits.startswith("0"):
        return f"the octal number {value}"
    return f"the number {value}"


def _plain_integer(loader: Any, node: yaml.ScalarNode) -> Any:
    value = loader.construct_yaml_int(node)
    written = node.value
    if written == str(value):
        return value
    digits = written.lstrip("+-")
    # YAML 1.2 reads `010` as 10, `0b1`, `1_000` and `1:30` as text; hexadecimal, `+5` and `-0` alike.
    ambiguous = ":" in written or "_" in written or (len(digits) > 1 and digits[0] == "0" and digits[1] not in "xX")
    return YamlReading(written, value, ambiguous, _integer_reading(written, value))


def _plain_float(loader: Any, node: yaml.ScalarNode) -> Any:
    value = loader.construct_yaml_float(node)
    written = node.value
    if written == repr(value):
        return value
    base_60 = ":" in written
    reading = f"the base-60 number {value!r}" if base_60 else f"the number {value!r}"
    return YamlReading(written, value, base_60 or "_" in written, reading)


def _plain_boolean(loader: Any, node: yaml.ScalarNode) -> Any:
    value = loader.construct_yaml_bool(node)
    if node.value.lower() in ("true", "false"):
        return value
    # yes/no/on/off: booleans to YAML 1.1 only.
    return YamlReading(node.value, value, True, f"the boolean {str(value).lower()}")


def _null(loader: Any, node: yaml.ScalarNode) -> YamlReading:
    # A key with nothing after it, `null` or `~`: an empty key, which a stack file refuses (loading.py).
    return YamlReading(node.value, None, True, "nothing (null)")


def _timestamp(loader: Any, node: yaml.ScalarNode) -> Any:
    value = loader.construct_yaml_timestamp(node)
    kind = "timestamp" if isinstance(value, datetime.datetime) else "date"
    return YamlReading(node.value, value, True, f"the {kind} {value.isoformat()}")


def _binary(loader: Any, node: yaml.ScalarNode) -> Any:
    return YamlReading(f"!!binary {node.value.strip()[:20]}", loader.construct_yaml_binary(node), True, "binary data")


def _yaml_only_collection(constructor_name: str, tag: str, reading: str) -> Any:
    def construct(loader: Any, node: yaml.Node) -> Iterator[YamlReading]:
        built = getattr(loader, constructor_name)(node)
        value = next(built)  # the empty collection, filled in below (it may hold itself through an alias)
        yield YamlReading(f"!!{tag}", value, True, reading)
        for _ in built:
            pass

    return construct


# Plain scalars YAML 1.2 (Pulumi's engine, kubectl's parser) reads as numbers where PyYAML's YAML 1.1
# reads text: an exponent without a dot or a sign (1e3, 1e-3, 1.0e3) and 0o octals. Any string of this
# form is written quoted (render, the engine's copy of a stack file), so that every reader sees text.
YAML_1_2_NUMBER = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?|0o[0-7]+")


def text_style(text: str) -> str | None:
    """The scalar style that keeps `text` text for YAML 1.1 and 1.2 readers alike ('|' for lines)."""
    if "\n" in text:
        return "|"
    return "'" if YAML_1_2_NUMBER.fullmatch(text) else None


def yaml_1_2_number(text: str) -> int | float:
    """What YAML 1.2 makes of text of the YAML_1_2_NUMBER form (a whole number as an int)."""
    number = int(text[2:], 8) if text.startswith("0o") else float(text)
    return int(number) if isinstance(number, float) and number.is_integer() else number


def _plain_text(loader: Any, node: yaml.ScalarNode) -> Any:
    value = loader.construct_yaml_str(node)
    if not node.style and YAML_1_2_NUMBER.fullmatch(value):  # plain: None to PyYAML, '' to libyaml
        if loader.resolve(yaml.ScalarNode, value, (True, False)) != node.tag:
            return value  # tagged `!!str 4` (a plain 4 is a number to YAML 1.1 too): text to both
        return YamlReading(value, value, True, f"the number {yaml_1_2_number(value)!r} to YAML 1.2 (Pulumi's)")
    return value


class StackFileLoader(UniqueKeyLoader):
    """The stack file's loader: every value whose text YAML reads as something else is a YamlReading."""


for _tag, _constructor in {
    "str": _plain_text,
    "int": _plain_integer,
    "float": _plain_float,
    "bool": _plain_boolean,
    "null": _null,
    "timestamp": _timestamp,
    "binary": _binary,
    "set": _yaml_only_collection("construct_yaml_set", "set", "a YAML set (!!set)"),
    "omap": _yaml_only_collection("construct_yaml_omap", "omap", "a YAML ordered mapping (!!omap)"),
    "pairs": _yaml_only_collection("construct_yaml_pairs", "pairs", "a YAML list of pairs (!!pairs)"),
}.items():
    StackFileLoader.add_constructor(f"tag:yaml.org,2002:{_tag}", _constructor)


def _represent_reading(dumper: yaml.SafeDumper, reading: YamlReading) -> yaml.Node:
    """A stack file's value written back (tools/engine hands the values to Pulumi's engine) as it was
    written: `1:30` stays `1:30`, for the engine's YAML 1.2 to read as it reads the stack file itself."""
    node = dumper.represent_data(reading.value)
    if isinstance(node, yaml.ScalarNode) and not reading.written.startswith("!!"):
        return yaml.ScalarNode(node.tag, reading.written)
    return node


yaml.SafeDumper.add_representer(YamlReading, _represent_reading)


class TextKeepingDumper(yaml.SafeDumper):
    """PyYAML's safe dumper, writing quoted the text YAML 1.2 would read as a number (text_style)."""


TextKeepingDumper.add_representer(
    str, lambda dumper, text: dumper.represent_scalar("tag:yaml.org,2002:str", text, style=text_style(text))
)


def plain_values(value: Any) -> Any:
    """`value` with every YamlReading as PyYAML reads it: what a stack file held before it was read as written."""
    if isinstance(value, YamlReading):
        return plain_values(value.value)
    if isinstance(value, dict):
        return {plain_values(key): plain_values(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain_values(item) for item in value]
    if isinstance(value, set):
        return {plain_values(item) for item in value}
    return value


# Far past any stack file or manifest (a stack file nests six deep, and holds some hundred values);
# short of what would exhaust Python's stack or memory in what reads the values after.
MAX_DEPTH = 100
MAX_VALUES = 1_000_000


class TooLargeError(yaml.YAMLError):
    """A document nested too deeply, or one whose aliases expand to too many values."""


def load_yaml(text: str) -> Any:
    """The one YAML document of `text` (None for none), a stack file: each value whose text YAML reads as
    something else a YamlReading (`plain_values` gives what PyYAML alone makes of it)."""
    loader = StackFileLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_size(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()


class ManifestLoader(UniqueKeyLoader):
    """A Kubernetes manifest's loader, reading what Kubernetes' own reader (sigs.k8s.io/yaml, on go-yaml
    v2) reads: `1:30` is text, not YAML 1.1's base-60 number 90, and `2024-01-01` is text, not a date."""


def _without_base_60(construct: Any) -> Any:
    def constructor(loader: Any, node: yaml.ScalarNode) -> Any:
        return node.value if ":" in node.value else construct(loader, node)

    return constructor


ManifestLoader.add_constructor("tag:yaml.org,2002:int", _without_base_60(UniqueKeyLoader.construct_yaml_int))
ManifestLoader.add_constructor("tag:yaml.org,2002:float", _without_base_60(UniqueKeyLoader.construct_yaml_float))
ManifestLoader.add_constructor("tag:yaml.org,2002:timestamp", lambda loader, node: node.value)


def load_all_yaml(text: str, loader_class: type[UniqueKeyLoader] = UniqueKeyLoader) -> Iterator[Any]:
    """Each YAML document of `text`."""
    loader = loader_class(text)
    try:
        while loader.check_node():
            node = loader.get_node()
            _check_size(node)
            yield loader.construct_document(node)
    finally:
        loader.dispose()


def _check_size(root: yaml.Node) -> None:
    """TooLargeError for a document nested past MAX_DEPTH, or whose aliases (`*name`, each a copy of
    what `&name` holds) expand it past MAX_VALUES: both are cheap to write and costly to read."""
    expanded: dict[int, int] = {}
    # Depth first, without recursion: (node, depth, children done).
    stack: list[tuple[yaml.Node, int, bool]] = [(root, 1, False)]
    while stack:
        node, depth, done = stack.pop()
        if depth > MAX_DEPTH:
            mark = node.start_mark
            raise TooLargeError(f"nested more than {MAX_DEPTH} deep (line {mark.line + 1})")
        children = _children(node)
        if done:
            expanded[id(node)] = 1 + sum(expanded[id(child)] for child in children)
            if expanded[id(node)] > MAX_VALUES:
                raise TooLargeError(f"its aliases expand it to more than {MAX_VALUES:,} values")
        elif id(node) not in expanded:
            stack.append((node, depth, True))
            stack.extend((child, depth + 1, False) for child in children if id(child) not in expanded)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


# Enough of a text value to recognise it by, in a line that must stay one line.
DESCRIBED_TEXT_CHARS = 40


def described(value: Any) -> str:
    """A YAML value as a message names it where another kind belongs: `the text 'python train.py'`,
    `the number 5`, `a list`; every command describes a wrong value the same way."""
    if value is None or isinstance(value, YamlReading) and value.value is None:
        return "nothing (null)"
    if isinstance(value, YamlReading):
        return f"{value.written} (to YAML, {value.reading})"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"  # as YAML writes it
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the text {shown(value, DESCRIBED_TEXT_CHARS)}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return f"a YAML {type(value).__name__}"  # a timestamp, binary: what the safe loader makes of its tags


def yaml_problem(error: yaml.YAMLError) -> str:
    """What is wrong and where, in one line (PyYAML's own text spans several, with the source quoted)."""
    if isinstance(error, DuplicateKeyError):
        return error.describe()
    if isinstance(error, TooLargeError):
        return str(error)
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None) or str(error).splitlines()[0]
    return f"{problem} (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else problem
