"""Where a key of a stack file is in the models: its annotation, what it allows, how a message names it.

A pydantic error's location (`('cluster', 'workers', 'cpu')`) walked along the models' annotations,
so that a message names a key as the stack file writes it (`tfk8s:cluster.workers.cpu`, a mapping's
key after a dot, a list's index in brackets) and says what the key takes.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any

from pydantic import BaseModel

from .models import CONFIG_NAMESPACE, StackConfig
from .trainer_contract import to_camel

# Read by its own parser (trainer/settings.py), and its defaults apply when the stack leaves it out.
TRAINER_KEY = "trainer"


def format_loc(loc: tuple) -> str:
    if not loc:
        return f"{CONFIG_NAMESPACE}:(stack)"
    head, *rest = loc
    path = f"{CONFIG_NAMESPACE}:{head}"
    annotation = step(StackConfig, head)
    for part in rest:
        # A list's index in brackets; a mapping's key, a number too (`selector: {1: a}`), after a dot.
        in_mapping = typing.get_origin(bare(annotation)) is dict if annotation is not None else False
        index = isinstance(part, int) and not isinstance(part, bool) and not in_mapping
        shown = str(part).lower() if isinstance(part, bool) else part
        path += f"[{part}]" if index else f".{shown}"
        annotation = step(annotation, part)
    return path


def stack_key(*keys: str) -> str:
    """A stack file's key as `pulumi config` names it (`stack_key("cluster", "ps", "replicas")` is
    "tfk8s:cluster.ps.replicas"), each part checked against the models (and the trainer's settings):
    code that names a key the models do not have fails where it is written, not in a user's stack."""
    annotation: Any = StackConfig
    for depth, key in enumerate(keys):
        form = bare(annotation)
        if dataclasses.is_dataclass(form):
            known = {to_camel(spec.name) for spec in dataclasses.fields(form)}
            annotation = None
        else:
            known = set(allowed_keys(keys[:depth])) if depth else set(StackConfig.file_keys())
            annotation = step(annotation, key)
        if key not in known:
            raise KeyError(f"{CONFIG_NAMESPACE}:{'.'.join(keys[: depth + 1])} is no key of a stack file")
    return f"{CONFIG_NAMESPACE}:{'.'.join(keys)}"


def allowed_keys(loc: tuple) -> list[str]:
    """The camelCase keys allowed at `loc` (a pydantic error location, without union members)."""
    model = model_in(annotation_at(loc))
    if model is None:
        return []
    return [info.alias or name for name, info in model.model_fields.items() if name != "stack"]


def model_in(annotation: Any) -> Any:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = model_in(arg)
        if found is not None:
            return found
    return None


def annotation_at(loc: tuple[Any, ...]) -> Any:
    """The annotation of the field at `loc` (a pydantic error location, without union members), None where
    none is known."""
    annotation: Any = StackConfig
    for part in loc:
        annotation = step(annotation, part)
    return annotation


def step(annotation: Any, part: Any) -> Any:
    """The annotation one part of a location further in: a model's field, a dict's value, a list's item."""
    if annotation is None:
        return None
    form = bare(annotation)
    if isinstance(form, type) and issubclass(form, BaseModel):
        name = next((name for name, info in form.model_fields.items() if (info.alias or name) == part), None)
        return form.model_fields[name].annotation if name is not None else None
    if typing.get_origin(form) is dict or (isinstance(part, int) and typing.get_origin(form) in (tuple, list)):
        return value_type(form)
    return None


def union_members(annotation: Any) -> tuple[Any, ...]:
    """The forms of a union of several (`str` or `SecretRef`); () for any other annotation."""
    form = bare(annotation) if annotation is not None else None
    if typing.get_origin(form) not in (typing.Union, types.UnionType):
        return ()
    return tuple(arg for arg in typing.get_args(form) if arg is not type(None))


def bare(annotation: Any) -> Any:
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


def is_model(annotation: Any) -> bool:
    form = bare(annotation)
    return isinstance(form, type) and issubclass(form, BaseModel)


def origin_in(annotation: Any, origins: tuple[type, ...]) -> bool:
    return typing.get_origin(bare(annotation)) in origins


def value_type(annotation: Any) -> Any:
    """What a dict holds as values, or a tuple or list as items."""
    args = typing.get_args(bare(annotation))
    return args[-1] if typing.get_origin(bare(annotation)) is dict else args[0] if args else None


def is_required(loc: tuple[Any, ...]) -> bool:
    """Whether the field at `loc` must be given (`tfk8s:cluster`, `workers.pool`); the trainer's settings
    may be left out: their defaults apply."""
    if loc == (TRAINER_KEY,):
        return False
    parent = bare(annotation_at(loc[:-1]))
    if not (isinstance(parent, type) and issubclass(parent, BaseModel)):
        return False
    info = next((info for name, info in parent.model_fields.items() if (info.alias or name) == loc[-1]), None)
    return info is not None and info.is_required()
