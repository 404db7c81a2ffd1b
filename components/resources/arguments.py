"""The public constructors' own type checks: an argument of another type than it takes is a
TypeError naming the constructor, the argument, what it takes and what was given, as Python
libraries raise it, before anything is registered (not an AttributeError from deep inside).

What a mapping or model holds is the schema's to check (StackConfigError naming the field).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Optional

import pulumi

from .inputs import is_input

# The reason an Output cannot be a whole argument, as the schema gives it for a field.
PLAN_IS_PLAIN = (
    "the plan is decided and checked before anything is registered (Outputs are taken by a pool's node names, "
    "cluster.image, cluster.gpuImage, program.env values and their Secret references; docs/library.md)"
)

EXPERIMENT = "an Experiment (a TFExperiment's experiment)"


def given(value: Any) -> str:
    """What was given, as the message names it: its type, and a short repr."""
    if is_input(value):
        return "a pulumi Output" if isinstance(value, pulumi.Output) else f"an awaitable ({type(value).__name__})"
    shown = repr(value)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return f"{type(value).__name__} {shown}"


def refuse(owner: str, argument: str, takes: str, value: Any) -> TypeError:
    why = f": {PLAN_IS_PLAIN}" if is_input(value) else ""
    return TypeError(f"{owner}: {argument} takes {takes}, not {given(value)}{why}")


def check_name(owner: str, name: Any) -> None:
    if not isinstance(name, str):
        raise refuse(owner, "name", "a str (the resource's name, e.g. 'ranking')", name)


def check_args(owner: str, args: Any, args_type: type) -> None:
    if not isinstance(args, args_type):
        raise refuse(owner, "args", f"a {args_type.__name__}", args)


def check_opts(owner: str, opts: Any) -> None:
    if opts is not None and not isinstance(opts, pulumi.ResourceOptions):
        raise refuse(owner, "opts", "a pulumi.ResourceOptions or None", opts)


def check_instance(owner: str, argument: str, value: Any, kind: type, takes: Optional[str] = None) -> None:
    if not isinstance(value, kind):
        raise refuse(owner, argument, takes or f"a {kind.__name__}", value)


def check_section(owner: str, argument: str, value: Any, model: type, optional: bool) -> None:
    """A stack file's section: its typed model or a mapping of its keys (None where it may be left out)."""
    if (optional and value is None) or isinstance(value, (model, Mapping)):
        return
    key = f"tfk8s:{argument}" if argument != "node_pools" else "tfk8s:nodePools"
    takes = f"a {model.__name__} or a mapping of {key}'s keys" + (" (or None)" if optional else "")
    raise refuse(owner, argument, takes, value)


def check_node_pools(owner: str, pools: Any, model: type) -> None:
    if isinstance(pools, (str, bytes, Mapping)) or not isinstance(pools, Sequence):
        raise refuse(owner, "node_pools", f"a list of {model.__name__} or mappings (tfk8s:nodePools)", pools)
    for index, pool in enumerate(pools):
        if not isinstance(pool, (model, Mapping)):
            raise refuse(owner, f"node_pools[{index}]", f"a {model.__name__} or a mapping of a pool's keys", pool)


def project_folder(owner: str, root: Any) -> Optional[Path]:
    """`project_root` as a Path: any path-like (a str or an os.PathLike) naming a folder as text."""
    if root is None:
        return None
    takes = "a path (a str or an os.PathLike, such as pathlib.Path) or None"
    if not isinstance(root, (str, os.PathLike)):
        raise refuse(owner, "project_root", takes, root)
    path = os.fspath(root)
    if not isinstance(path, str):
        raise refuse(owner, "project_root", takes + ", naming the folder as text", path)
    if not path:
        raise ValueError(
            f"{owner}: project_root is empty; give the folder program.source is read from, or leave it out "
            "(the working directory)"
        )
    return Path(path)
