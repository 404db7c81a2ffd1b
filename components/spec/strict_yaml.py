"""YAML read as a user means it: a key given twice in one mapping is refused, naming the key and both lines.

YAML's own rule is that keys are unique, but PyYAML keeps the last of two
quietly: a second `workers:` left from an edit would replace the first, and
the experiment would run with the count nobody meant. libyaml parses (its
speed where it is installed); only the mapping construction is checked here.
"""

from __future__ import annotations

from typing import Any, Iterator

import yaml

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


# Far past any stack file or manifest (a stack file nests six deep, and holds some hundred values);
# short of what would exhaust Python's stack or memory in what reads the values after.
MAX_DEPTH = 100
MAX_VALUES = 1_000_000


class TooLargeError(yaml.YAMLError):
    """A document nested too deeply, or one whose aliases expand to too many values."""


def load_yaml(text: str) -> Any:
    """The one YAML document of `text` (None for none)."""
    loader = UniqueKeyLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_size(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def load_all_yaml(text: str) -> Iterator[Any]:
    """Each YAML document of `text`."""
    loader = UniqueKeyLoader(text)
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
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"  # as YAML writes it
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the text {value[:DESCRIBED_TEXT_CHARS]!r}"
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
