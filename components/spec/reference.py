"""The stack file reference, generated from the models' field descriptions (`make docs`).

Every `tfk8s:` key a stack file may set, with its type, its default, the
values it allows and one line of meaning: walked from `StackConfig` (and
`TrainerSettings` for `tfk8s:trainer`), so the reference cannot drift from
what the loader accepts. `tests/spec/test_reference.py` fails, naming the
key, when docs/stack-reference.md is stale or a field has no description.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from dataclasses import dataclass
from typing import Any, Iterator, Optional

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from .atomic_files import write_text_atomic
from .kubernetes_limits import DNS1123_LABEL_PATTERN, DNS1123_SUBDOMAIN_PATTERN, LABEL_VALUE_PATTERN
from .models import CONFIG_NAMESPACE, StackConfig
from .quantities import QUANTITY_PATTERN
from .stack_files import PROJECT_ROOT
from .trainer_contract import TrainerSettings, to_camel

REFERENCE_FILE = "docs/stack-reference.md"
# Fields of the models that no stack file writes.
NOT_KEYS = {"stack"}
PATTERN_NAMES = {
    QUANTITY_PATTERN: "quantity (`500m`, `2`, `4Gi`)",
    DNS1123_LABEL_PATTERN: "DNS label",
    DNS1123_SUBDOMAIN_PATTERN: "DNS subdomain",
    LABEL_VALUE_PATTERN: "label value",
}


@dataclass(frozen=True)
class KeyDoc:
    key: str  # `tfk8s:cluster.ps.cpu`; `[]` marks an item of a list
    type: str
    default: str
    allowed: str
    meaning: Optional[str]  # None: the field has no description


def _unwrapped(annotation: Any) -> tuple[Any, list[Any]]:
    """The annotation without Optional and Annotated, and the Annotated metadata met on the way."""
    metadata: list[Any] = []
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation, *extra = typing.get_args(annotation)
            metadata.extend(extra)
        elif origin in (typing.Union, types.UnionType):
            rest = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
            if len(rest) != 1:
                return annotation, metadata
            annotation = rest[0]
        else:
            return annotation, metadata


def _item_model(annotation: Any) -> Optional[type[BaseModel]]:
    """The model of a field that is a model or a list of models (its keys are documented below it)."""
    annotation, _ = _unwrapped(annotation)
    if typing.get_origin(annotation) is tuple:
        annotation, _ = _unwrapped(typing.get_args(annotation)[0])
    return next((c for c in _alternatives(annotation) if isinstance(c, type) and issubclass(c, BaseModel)), None)


def _alternatives(annotation: Any) -> tuple[Any, ...]:
    """The forms a value of a union may take (`chief`, `workers` or a mapping); a plain type's own."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return typing.get_args(annotation)
    return (annotation,)


def _mapped_model(annotation: Any) -> Optional[tuple[str, type[BaseModel]]]:
    """A map whose values are (or may be) a model: the placeholder of its keys, and that model."""
    annotation, _ = _unwrapped(annotation)
    if typing.get_origin(annotation) is not dict:
        return None
    key, value = typing.get_args(annotation)
    candidates = typing.get_args(value) if typing.get_origin(value) in (typing.Union, types.UnionType) else (value,)
    model = next((c for c in candidates if isinstance(c, type) and issubclass(c, BaseModel)), None)
    if model is None:
        return None
    choices = typing.get_args(key) if typing.get_origin(key) is typing.Literal else ()
    return ("<" + "\\|".join(choices) + ">" if choices else "<NAME>"), model


def _type_text(annotation: Any, metadata: list[Any]) -> str:
    annotation, more = _unwrapped(annotation)
    metadata = metadata + more
    origin = typing.get_origin(annotation)
    if origin is tuple:
        item, item_metadata = _unwrapped(typing.get_args(annotation)[0])
        return f"list of {_type_text(item, item_metadata)}"
    if origin is dict:
        value = typing.get_args(annotation)[1]
        kinds = (
            [_type_text(arg, []) for arg in typing.get_args(value)]
            if typing.get_origin(value) in (typing.Union, types.UnionType)
            else [_type_text(value, [])]
        )
        return "map of " + " or ".join(f"{kind}s" if kind in ("string", "mapping") else kind for kind in kinds)
    if origin is typing.Literal:
        return "string"
    if origin in (typing.Union, types.UnionType):
        return " or ".join(dict.fromkeys(_type_text(arg, []) for arg in typing.get_args(annotation)))
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "mapping"
    for item in metadata:
        for constraint in [item, *getattr(item, "metadata", [])]:
            pattern = getattr(constraint, "pattern", None)
            if pattern in PATTERN_NAMES:
                return PATTERN_NAMES[pattern]
    names = {bool: "boolean", int: "integer", float: "number", str: "string"}
    return names.get(annotation, getattr(annotation, "__name__", str(annotation)))


def _allowed(choices: tuple[Any, ...], minimum: Any) -> str:
    """What a key allows: its choices, else its least value, else nothing to say."""
    if choices:
        return " \\| ".join(f"`{choice}`" for choice in choices)
    return f"≥ {minimum}" if minimum is not None else ""


def _allowed_text(annotation: Any, field: FieldInfo) -> str:
    annotation, _ = _unwrapped(annotation)
    choices = tuple(
        choice
        for alternative in _alternatives(annotation)
        if typing.get_origin(alternative) is typing.Literal
        for choice in typing.get_args(alternative)
    )
    minimum = next((c.ge for c in field.metadata if getattr(c, "ge", None) is not None), None)
    return _allowed(choices, minimum)


def _value_text(value: Any) -> str:
    if isinstance(value, BaseModel):
        return "`{}`"
    if isinstance(value, tuple):
        value = list(value)
    return f"`{json.dumps(value)}`" if not isinstance(value, str) else f"`{value}`"


def _default_text(field: FieldInfo) -> str:
    if field.default_factory is not None:
        return _value_text(field.get_default(call_default_factory=True))
    if field.default is PydanticUndefined:
        return "required"
    return "—" if field.default is None else _value_text(field.default)


def _model_keys(model: type[BaseModel], prefix: str) -> Iterator[KeyDoc]:
    for name, field in model.model_fields.items():
        if name in NOT_KEYS:
            continue
        key = f"{prefix}{field.alias or name}"
        if field.annotation is TrainerSettings:
            yield KeyDoc(key, "mapping", "`{}`", "", field.description)
            yield from _trainer_keys(f"{key}.")
            continue
        yield KeyDoc(
            key,
            _type_text(field.annotation, field.metadata),
            _default_text(field),
            _allowed_text(field.annotation, field),
            field.description,
        )
        mapped = _mapped_model(field.annotation)
        if mapped is not None:
            placeholder, model = mapped
            yield from _model_keys(model, f"{key}.{placeholder}.")
        nested = _item_model(field.annotation)
        if nested is not None:
            is_list = typing.get_origin(_unwrapped(field.annotation)[0]) is tuple
            yield from _model_keys(nested, f"{key}[]." if is_list else f"{key}.")


def _trainer_keys(prefix: str) -> Iterator[KeyDoc]:
    """`tfk8s:trainer`: the trainer's own schema (trainer/settings.py, standard library only)."""
    hints = typing.get_type_hints(TrainerSettings)
    for spec in dataclasses.fields(TrainerSettings):
        allowed = _allowed(spec.metadata.get("choices") or (), spec.metadata.get("minimum"))
        yield KeyDoc(
            f"{prefix}{to_camel(spec.name)}",
            _type_text(hints[spec.name], []),
            _value_text(spec.default),
            allowed,
            spec.metadata.get("help"),
        )


def stack_keys() -> list[KeyDoc]:
    """Every key of a stack file, in the order the models declare them."""
    return list(_model_keys(StackConfig, f"{CONFIG_NAMESPACE}:"))


def reference_markdown() -> str:
    lines = [
        "# Stack file reference",
        "",
        "Every `tfk8s:` key of a stack file (`stacks/Pulumi.<stack>.yaml`). Generated by `make docs` from",
        "the models' field descriptions (`components/spec/models.py`, and `trainer/settings.py` for",
        "`tfk8s:trainer`): edit those, not this file. `[]` is an item of a list; `—` is unset.",
        "",
        "| key | type | default | allowed | meaning |",
        "| --- | --- | --- | --- | --- |",
    ]
    for doc in stack_keys():
        meaning = (doc.meaning or "").replace("|", "\\|")
        lines.append(f"| `{doc.key}` | {doc.type} | {doc.default} | {doc.allowed} | {meaning} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    write_text_atomic(PROJECT_ROOT / REFERENCE_FILE, reference_markdown())
    print(f"wrote {REFERENCE_FILE} ({len(stack_keys())} keys)")


if __name__ == "__main__":
    main()
