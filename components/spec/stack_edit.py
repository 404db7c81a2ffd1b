"""A stack file with some of its keys changed, and the diff of the two (pure: text in, text out).

`diagnose` proposes the next experiment as stack keys (`tfk8s:cluster.ps.replicas` is `config:`
`tfk8s:cluster:` `ps:` `replicas:`). The new stack file is the old one with exactly those values
changed: every other byte stays as the user wrote it (comments, key order, blank lines, flow mappings
such as `ps: {replicas: 10, pool: servers}`, quoting, `secure:` values, `encryptionsalt`), so that the
diff of the two files is the change and nothing else.

ruamel.yaml reads the file as Pulumi does (YAML 1.2) and tells where each node is in the text; a
value is replaced there, a key left out is added at the end of its mapping (at the indentation of
its keys, or inside the braces of a flow mapping), a key set to None is taken out. A round-trip dump
would not do: it writes every sequence at one indentation, whatever the file had.
"""

from __future__ import annotations

import difflib
import json
from typing import TYPE_CHECKING, Any, Optional, Sequence

import yaml

from .models import CONFIG_NAMESPACE
from .stack_changes import Change

if TYPE_CHECKING:
    from ruamel.yaml.nodes import MappingNode, Node


class StackEditError(ValueError):
    """A change that cannot be made to the stack file as written; the message names the key."""


class SharedValuesError(StackEditError):
    """The stack file shares values through YAML anchors: no key of it is changed alone."""


def apply_changes(text: str, changes: Sequence[Change]) -> str:
    """`text` with each change made, in order."""
    if changes:
        shared = shared_values_problem(text)
        if shared is not None:
            raise SharedValuesError(f"{changes[0].key}: {shared}")
    for change in changes:
        text = _apply(text, change.key, change.new)
    return text


def shared_values_problem(text: str) -> Optional[str]:
    """Why no key of the file can be edited alone, or None: its values are shared through YAML anchors
    (`ps: &r {...}`, then `workers: *r`). Changing one key would change every key that shares it, and
    a key added inside the shared value would land where the alias is read, not written."""
    try:
        shared = [event.anchor for event in yaml.parse(text) if isinstance(event, yaml.AliasEvent)]
    except yaml.YAMLError:
        return None  # read as it is by the steps that follow, which say what is wrong
    if not shared:
        return None
    aliases = ", ".join(sorted({f"*{anchor}" for anchor in shared}))
    return (
        f"the stack file shares values through YAML anchors ({aliases}), so one key cannot be changed alone; "
        "make the change by hand"
    )


def stack_diff(old_text: str, new_text: str, old_stack: str, new_stack: str) -> str:
    """The unified diff of two stack files, named as the files in stacks/ are."""
    lines = difflib.unified_diff(
        _lines(old_text), _lines(new_text), fromfile=f"Pulumi.{old_stack}.yaml", tofile=f"Pulumi.{new_stack}.yaml"
    )
    return "".join(lines)


def _lines(text: str) -> list[str]:
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n\\ No newline at end of file\n"
    return lines


def key_path(key: str) -> list[str]:
    """`tfk8s:cluster.ps.replicas` -> ['tfk8s:cluster', 'ps', 'replicas'], as `pulumi config --path` reads it."""
    top, _, rest = key.partition(".")
    names = [top, *rest.split(".")] if rest else [top]
    if not top.startswith(f"{CONFIG_NAMESPACE}:") or not all(names):
        raise StackEditError(f"{key}: not a tfk8s stack key (tfk8s:<section>.<key>...)")
    return names


def _compose(text: str) -> Node:
    from ruamel.yaml import YAML

    return YAML(typ="rt").compose(text)


def _apply(text: str, key: str, value: Any) -> str:
    names = key_path(key)
    root = _compose(text)
    # A mapping once checked: ruamel's nodes are typed as their base class.
    node: Any = _entry(root, "config")
    if node is None or not _is_mapping(node):
        raise StackEditError(f"{key}: the stack file has no 'config:' mapping")
    holder_key: Any = None  # the key whose value `node` is (None for config:)
    for depth, name in enumerate(names):
        if _is_secure(node):
            raise StackEditError(f"{key}: {'.'.join(names[:depth])} is a secret; change it with `pulumi config set`")
        found = _entry(node, name)
        if found is None:
            return text if value is None else _insert(text, node, names[depth:], value)
        if depth == len(names) - 1:
            if value is None:
                return _remove(text, node, name, key, holder_key)
            if _is_secure(found):
                raise StackEditError(f"{key}: is a secret; change it with `pulumi config set --secret`")
            if _is_scalar(found) and not isinstance(value, (dict, list, tuple)):
                return _replace(text, found, value, key, flow=bool(node.flow_style))
            return _replace_collection(text, names, found, value)
        if not _is_mapping(found):
            raise StackEditError(f"{key}: {'.'.join(names[: depth + 1])} is not a mapping in the stack file")
        holder_key = next(k for k, v in node.value if v is found)
        node = found
    raise AssertionError("unreachable: the last name returns")


def _is_mapping(node: Node) -> bool:
    from ruamel.yaml.nodes import MappingNode

    return isinstance(node, MappingNode)


def _entry(mapping: Node, name: str) -> Optional[Node]:
    return next((value for key, value in mapping.value if key.value == name), None) if _is_mapping(mapping) else None


def _is_secure(node: Node) -> bool:
    """A `{secure: v1:...}` leaf, as `pulumi config set --secret` writes it: never touched here."""
    return _is_mapping(node) and [key.value for key, _ in node.value] == ["secure"]


def _is_scalar(node: Node) -> bool:
    from ruamel.yaml.nodes import ScalarNode

    return isinstance(node, ScalarNode)


def _replace(text: str, node: Any, value: Any, key: str, flow: bool) -> str:
    if node.style in ("|", ">"):
        raise StackEditError(f"{key}: is a block of text in the stack file; change it by hand")
    start, end = node.start_mark.index, node.end_mark.index
    return text[:start] + yaml_value(value, quote=node.style, flow=flow) + text[end:]


# ruamel.yaml's (mapping, sequence, offset) indentations tried on a collection, the first that writes
# it back as the file has it wins: `- ` under its key's indentation plus 2, as the stacks of stacks/
# and kubectl write it, or at its key's own (ruamel.yaml's default).
_INDENTS = ((2, 4, 2), (2, 2, 0), (4, 4, 2), (4, 6, 4), (4, 4, 0))


def _replace_collection(text: str, names: list[str], node: Node, value: Any) -> str:
    """A mapping or list replaced by `value` (or a value by a collection). What stays the same keeps its
    text: the old collection is written back by ruamel.yaml at the indentation that reproduces it, with
    the new value merged into it (mappings key by key, lists of named mappings by name), so comments and
    flow mappings inside it stay."""
    from ruamel.yaml import YAML

    loader = YAML(typ="rt")
    loader.preserve_quotes = True
    parent = loader.load(text)["config"]
    for name in names[:-1]:
        parent = parent[name]
    old = parent[names[-1]]
    start, column = node.start_mark.index, node.start_mark.column
    if isinstance(old, (dict, list)):
        for indents in _INDENTS:
            before = _dumped(old, indents, column)
            if text.startswith(before, start):
                return text[:start] + _dumped(_merged(old, value), indents, column) + text[start + len(before) :]
    # A layout none of the indentations writes back: the new value alone, in the stacks' own layout.
    return text[:start] + _dumped(value, _INDENTS[0], column).rstrip("\n") + text[_content_end(node) :]


def _dumped(value: Any, indents: tuple[int, int, int], column: int) -> str:
    """`value` as ruamel.yaml writes it, its first line to go at `column`, the others indented to it."""
    import io

    from ruamel.yaml import YAML

    writer = YAML(typ="rt")
    writer.indent(mapping=indents[0], sequence=indents[1], offset=indents[2])
    writer.width = 4096  # a long list in a flow mapping stays on its line, as written
    written = io.StringIO()
    writer.dump(value, written)
    lines = written.getvalue().splitlines(keepends=True)
    lead = min((len(line) - len(line.lstrip(" ")) for line in lines if line.strip()), default=0)
    lines = [line[lead:] for line in lines]
    return "".join([lines[0], *(" " * column + line if line.strip() else line for line in lines[1:])])


def _merged(old: Any, new: Any) -> Any:
    """`new`, reusing `old`'s collections where they hold the same place (their comments and flow style
    go with them): a mapping's keys updated in place, a list's items paired by `name` where every item
    has one, else by position."""
    if isinstance(old, dict) and isinstance(new, dict):
        for gone in [key for key in old if key not in new]:
            del old[gone]
        for key, value in new.items():
            old[key] = _merged(old[key], value) if key in old else value
        return old
    if isinstance(old, list) and isinstance(new, (list, tuple)):
        named = all(isinstance(item, dict) and "name" in item for item in [*old, *new])
        by_name = {item["name"]: item for item in old} if named else {}
        items = [
            _merged(by_name[item["name"]], item)
            if named and item["name"] in by_name
            else _merged(old[index], item)
            if not named and index < len(old)
            else item
            for index, item in enumerate(new)
        ]
        old[:] = items
        return old
    return new


def _insert(text: str, mapping: MappingNode, names: list[str], value: Any) -> str:
    """`names[0]` added at the end of `mapping`, holding `names[1:]` as flow mappings down to `value`."""
    flow = bool(mapping.flow_style)
    rendered = yaml_value(value, flow=flow or len(names) > 1)
    for name in reversed(names[1:]):
        rendered = f"{{{yaml_value(name)}: {rendered}}}"
    entry = f"{yaml_value(names[0], flow=flow)}: {rendered}"
    if mapping.flow_style:
        if not mapping.value:
            brace = mapping.end_mark.index - 1  # `{}`: the new key goes between the braces
            return text[:brace] + entry + text[brace:]
        after = mapping.value[-1][1].end_mark.index
        return text[:after] + ", " + entry + text[after:]
    indent = mapping.value[0][0].start_mark.column
    newline = "\r\n" if "\r\n" in text else "\n"
    at = _line_end(text, _content_end(mapping))
    return text[:at] + newline + " " * indent + entry + text[at:]


def _remove(text: str, mapping: MappingNode, name: str, key: str, holder_key: Optional[Node]) -> str:
    index = next(i for i, (k, _) in enumerate(mapping.value) if k.value == name)
    key_node, value_node = mapping.value[index]
    if mapping.flow_style:
        if index > 0:  # `, name: value` after the entry before it
            return text[: mapping.value[index - 1][1].end_mark.index] + text[value_node.end_mark.index :]
        if len(mapping.value) > 1:  # `name: value, ` up to the next key
            return text[: key_node.start_mark.index] + text[mapping.value[1][0].start_mark.index :]
        return text[: key_node.start_mark.index] + text[value_node.end_mark.index :]
    line_start = text.rfind("\n", 0, key_node.start_mark.index) + 1
    if text[line_start : key_node.start_mark.index].strip():
        raise StackEditError(f"{key}: shares its line with another key; take it out by hand")
    end = _line_end(text, _content_end(value_node))
    text = text[:line_start] + text[end + 1 :] if end < len(text) else text[: max(line_start - 1, 0)]
    if len(mapping.value) == 1 and holder_key is not None:
        # Its last key out, the mapping is `{}` on its key's line: a key with nothing after it is null.
        colon = text.index(":", holder_key.end_mark.index)
        text = f"{text[: colon + 1]} {{}}{text[colon + 1 :]}"
    return text


def _content_end(node: Node) -> int:
    """Where a node's own text ends: a block collection's last value, not the comments after it."""
    from ruamel.yaml.nodes import MappingNode, SequenceNode

    if isinstance(node, (MappingNode, SequenceNode)) and not node.flow_style and node.value:
        last = node.value[-1]
        return _content_end(last[1] if isinstance(node, MappingNode) else last)
    end: int = node.end_mark.index
    # A block scalar's text ends with its line break.
    return end - 1 if end > 0 and node.end_mark.column == 0 else end


def _line_end(text: str, index: int) -> int:
    """The index of the line break that ends the line holding `index` (the text's end on its last line)."""
    found = text.find("\n", index)
    if found < 0:
        return len(text)
    return found - 1 if found > 0 and text[found - 1] == "\r" else found


def yaml_value(value: Any, quote: Optional[str] = None, flow: bool = True) -> str:
    """`value` as YAML text that Pulumi (YAML 1.2) and PyYAML (1.1) both read back as `value`: plain
    where it may be, else quoted (`quote`: the quote the old value had, kept where it was quoted;
    `flow`: written inside a flow mapping, where `,` `[]` `{}` end a plain value)."""
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(yaml_value(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{yaml_value(k)}: {yaml_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, bool):
        plain = "true" if value else "false"
    elif isinstance(value, (int, float)):
        plain = repr(value)
    elif isinstance(value, str):
        plain = value
        if quote == "'":
            return "'" + value.replace("'", "''") + "'"
        if quote == '"' or not _reads_back(plain, value, flow):
            return json.dumps(value)
        return plain
    else:
        raise StackEditError(f"cannot write {value!r} in a stack file")
    if not _reads_back(plain, value, flow):
        raise StackEditError(f"cannot write {value!r} in a stack file so that YAML reads it back")
    return plain


def _reads_back(plain: str, value: Any, flow: bool) -> bool:
    """Whether `plain`, unquoted as a block mapping's value (and a flow mapping's, with `flow`), reads as
    `value` in both YAMLs."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError as RuamelError

    for document in (f"k: {plain}\n", *([f"{{k: {plain}}}\n"] if flow else [])):
        try:
            read = [yaml.safe_load(document), YAML(typ="safe", pure=True).load(document)]
        except (yaml.YAMLError, RuamelError):
            return False
        if any(not isinstance(got, dict) or type(got.get("k")) is not type(value) or got["k"] != value for got in read):
            return False
    return True
