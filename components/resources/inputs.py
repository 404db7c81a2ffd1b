"""Pulumi Inputs in a TFExperiment's arguments: node names or an env value from another resource,
the image from the team's image build, a Secret's name.

The plan is pure and decided before anything registers, so it cannot wait for an Output. Only
values the plan treats as names may be Inputs (INPUT_PATHS): a node is a server the plan places
tasks on, whatever it is called. Each is replaced by a placeholder of the same shape for
validation and planning (`lift`), and the placeholder in a finished manifest (a label value, a
node selector, a NodePatch's name) by the Output itself (`InputSlots.resolve`), which the engine
resolves like any resource input. An Input anywhere else (replicas, placement, pools, sizes) is
refused, naming the field. What each Input resolves to is checked as the same value given plain
(`InputSlots.checked`): a refused one fails every resource that holds it, with the plain value's
message (ResolvedInputError).

An env value given as an Output reaches the pods through the experiment's Secret, as a value set
with `pulumi config set --secret` does: tfk8s cannot know before the engine resolves it whether
the Output is a secret, and a secret is never a value in a pod spec.
"""

from __future__ import annotations

import copy
import inspect
import re
from dataclasses import dataclass, field, replace
from typing import Any, Awaitable, Callable, Mapping, Optional, cast

import pulumi

from ..spec.models import CONFIG_NAMESPACE, StackConfigError

_ENV = rf"{CONFIG_NAMESPACE}:program\.env\.[A-Za-z_][A-Za-z0-9_]*"
# Where an Input may be, as a stack value's path: values no placement, count or check depends on.
_NODE_PREFIX = f"{CONFIG_NAMESPACE}:nodePools["
INPUT_PATHS = (
    re.compile(rf"{CONFIG_NAMESPACE}:nodePools\[\d+\]\.nodes\[\d+\]"),
    re.compile(rf"{CONFIG_NAMESPACE}:cluster\.(image|gpuImage)"),
    re.compile(_ENV),
    re.compile(rf"{_ENV}\.(secret|key)"),
)
_ENV_VALUE = re.compile(_ENV)
# What starts every stand-in: `tfk8s-input-<n>-<token>`, with an image's or a node's tail.
_MARKER = "tfk8s-input-"
_PLACEHOLDER = re.compile(_MARKER + r"(\d+)-[0-9a-f]{8}(?:@sha256:0{64}|\.n{56})?")
# The placeholder's digest makes an image Input read as pinned: an image build's reference is a digest.
_DIGEST = "@sha256:" + "0" * 64
# A node's is longer than a label value may be, as a node's name may be: its pool's servers are then
# labelled by position (`s0`, `s1`), never by a name the plan cannot measure.
_LONG_NODE_NAME = "." + "n" * 56


def is_input(value: Any) -> bool:
    return isinstance(value, pulumi.Output) or inspect.isawaitable(value)


class ResolvedInputError(pulumi.RunError):
    """An Input resolved to a value tfk8s refuses, with the message (StackConfigError's) the value gets
    given plain. A RunError, and no ValueError, which the SDK would wrap in its own words: the engine
    shows the message alone, without a Python traceback, and every resource that holds the value fails."""


@dataclass(frozen=True)
class InputPlace:
    """Where an Input was given: its stack value's path (`tfk8s:nodePools[0].nodes[1]`) and the keys
    and indexes that lead there from the stack's values."""

    path: str
    keys: tuple[Any, ...]

    @property
    def env_name(self) -> Optional[str]:
        """The `tfk8s:program.env` name whose value this is, or None."""
        return self.path.rsplit(".", 1)[1] if _ENV_VALUE.fullmatch(self.path) else None

    def put(self, values: Mapping[str, Any], value: Any) -> dict[str, Any]:
        """A copy of `values` (a stack's values) with `value` here."""
        copied = copy.deepcopy(dict(values))
        holder: Any = copied
        for key in self.keys[:-1]:
            holder = holder[key]
        holder[self.keys[-1]] = value
        return copied


# check(index, resolved value, whether the Output is secret) -> the value, or ResolvedInputError.
ResolvedCheck = Callable[[int, Any, bool], Any]


@dataclass(frozen=True)
class InputSlots:
    """The Inputs a TFExperiment was given, each by its placeholder."""

    outputs: tuple[pulumi.Output[Any], ...] = ()
    # `tfk8s:program.env` names whose values are Inputs: they travel in the experiment's Secret.
    env_names: frozenset[str] = field(default_factory=frozenset)
    token: str = "00000000"
    places: tuple[InputPlace, ...] = ()

    def checked(self, check: ResolvedCheck) -> "InputSlots":
        """The same Inputs, each passing through `check` once resolved: every object that holds one
        fails with check's error where its value is refused. A value not known yet (a preview of a
        resource still to be created) is checked once it is."""

        def through(index: int, output: pulumi.Output[Any]) -> pulumi.Output[Any]:
            # Whether it is a secret, with the value: a secret's value is never shown in a message.
            secret: pulumi.Output[bool] = pulumi.Output.from_input(cast(Awaitable[bool], output.is_secret()))
            return pulumi.Output.all(output, secret).apply(lambda both: check(index, both[0], bool(both[1])))

        return replace(self, outputs=tuple(through(index, output) for index, output in enumerate(self.outputs)))

    def resolve(self, value: Any) -> Any:
        """`value` (a manifest, or any part) with each placeholder replaced by its Output."""
        if not self.outputs:
            return value
        if isinstance(value, Mapping):
            resolved = {key: self.resolve(item) for key, item in value.items()}
            if not any(isinstance(key, str) and _MARKER in key for key in resolved):
                return resolved
            # A key can be no Output (a server's name in `perServer`): the mapping becomes one.
            keys = [self.resolve(key) for key in resolved]
            return pulumi.Output.all(*keys, *resolved.values()).apply(
                lambda both: dict(zip(both[: len(keys)], both[len(keys) :]))
            )
        if isinstance(value, (list, tuple)):
            return [self.resolve(item) for item in value]
        if isinstance(value, str) and _MARKER in value:
            return self._resolve_text(value)
        return value

    def _resolve_text(self, text: str) -> Any:
        parts: list[Any] = []
        position = 0
        for found in _PLACEHOLDER.finditer(text):
            if not found.group(0).startswith(self._prefix(int(found.group(1)))):
                continue
            parts += [text[position : found.start()], self.outputs[int(found.group(1))]]
            position = found.end()
        parts.append(text[position:])
        parts = [part for part in parts if part != ""]
        if len(parts) == 1:
            return parts[0]
        return pulumi.Output.concat(*parts)

    def _prefix(self, index: int) -> str:
        return f"{_MARKER}{index}-{self.token}"

    def shown(self, text: str) -> str:
        """`text` (an error message) with each placeholder read as what it stands for."""
        return _PLACEHOLDER.sub("<a pulumi Output>", text)


NO_INPUTS = InputSlots()


def lift(stack: str, values: Mapping[str, Any], token: str) -> tuple[dict[str, Any], InputSlots]:
    """`values` (a stack's `tfk8s:*` values) with each Input replaced by a placeholder, and the
    Inputs; StackConfigError naming each Input where the plan needs a plain value."""
    outputs: list[pulumi.Output[Any]] = []
    places: list[InputPlace] = []
    env_names: set[str] = set()
    errors: list[str] = []

    def walk(path: str, value: Any, keys: tuple[Any, ...]) -> Any:
        if is_input(value):
            if not any(pattern.fullmatch(path) for pattern in INPUT_PATHS):
                errors.append(
                    f"{path}: takes a plain value, not a pulumi Output: the plan is decided and checked "
                    "before anything is registered (Inputs are taken by a pool's node names, cluster.image, "
                    "cluster.gpuImage, program.env values and their Secret references)"
                )
                return None
            placeholder = f"{_MARKER}{len(outputs)}-{token}"
            outputs.append(pulumi.Output.from_input(value))
            places.append(InputPlace(path, keys))
            if _ENV_VALUE.fullmatch(path):
                env_names.add(path.rsplit(".", 1)[1])
            if path.endswith(("image", "Image")):
                return placeholder + _DIGEST
            return placeholder + _LONG_NODE_NAME if path.startswith(_NODE_PREFIX) else placeholder
        if isinstance(value, Mapping):
            return {key: walk(f"{path}.{key}", item, (*keys, key)) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return [walk(f"{path}[{index}]", item, (*keys, index)) for index, item in enumerate(value)]
        return value

    lifted = {key: walk(key, value, (key,)) for key, value in values.items()}
    if errors:
        raise StackConfigError.listing(stack, errors)
    return lifted, InputSlots(tuple(outputs), frozenset(env_names), token, tuple(places))


def redacted(message: str, value: Any) -> str:
    """`message` with each mention of a secret `value` read as [secret]: as a word, and as written
    (repr), so that `5` in `253` stays."""
    forms = {repr(value), str(value)} if isinstance(value, str) and value else {repr(value)}
    for form in sorted(forms, key=len, reverse=True):
        message = re.sub(rf"(?<![\w.]){re.escape(form)}(?![\w])", "[secret]", message)
    return message
