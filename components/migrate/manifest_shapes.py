"""The shapes of the TFJob fields tfk8s reads (a list where a list belongs, text where text does), checked
before they are carried: a hand-edited manifest with `env:` as a mapping is refused naming the field,
where reading it would end in a traceback. Fields tfk8s does not read are not checked: they are
listed as not carried, whatever they hold."""

from __future__ import annotations

from typing import Any, Union

from ..spec.strict_yaml import described

# A field's shape: "text", "boolean", "mapping", "list of text", a nested schema (a mapping whose fields are
# checked in turn) or a one-item list holding the schema of each item of a list of mappings.
Shape = Union[str, dict, list]

ENV_VAR: dict[str, Shape] = {
    "name": "text",
    "value": "text",  # the API server refuses `value: 8080`, as it does a number in args
    "valueFrom": {"secretKeyRef": {"name": "text", "key": "text"}},
}
CONTAINER: dict[str, Shape] = {
    "name": "text",
    "image": "text",
    "command": "list of text",
    "args": "list of text",
    "workingDir": "text",
    "env": [ENV_VAR],
    "envFrom": [{}],
    "volumeMounts": [{"name": "text", "mountPath": "text", "readOnly": "boolean"}],
    "ports": [{}],
    "resources": {"requests": "mapping", "limits": "mapping"},
}
POD: dict[str, Shape] = {
    "containers": [{}],
    "volumes": [{"name": "text", "persistentVolumeClaim": {"claimName": "text", "readOnly": "boolean"}}],
    "tolerations": [{}],
    "nodeSelector": "mapping",
    "priorityClassName": "text",
    "imagePullSecrets": [{"name": "text"}],
}
RUN_POLICY: dict[str, Shape] = {"schedulingPolicy": {"queue": "text", "priorityClass": "text"}}


class ShapeError(ValueError):
    """A field holds the wrong kind of value; the message names it and what it must be."""


def check_shape(value: Any, schema: dict[str, Shape], where: str) -> None:
    """ShapeError naming the first field of `value` (a mapping, at `where`) that `schema` says is
    of another kind."""
    for key, shape in schema.items():
        if key in value and value[key] is not None:
            _check(value[key], shape, f"{where}.{key}")


def _check(value: Any, shape: Shape, where: str) -> None:
    if shape == "boolean":
        if not isinstance(value, bool):
            raise ShapeError(f"{where} is {described(value)}; it must be true or false, unquoted")
    elif shape == "text":
        if not isinstance(value, str):
            quote = ": quote it" if isinstance(value, (bool, int, float)) else ""
            raise ShapeError(f"{where} is {described(value)}; it must be text{quote}")
    elif shape == "list of text":
        if not isinstance(value, list):
            raise ShapeError(f"{where} is {described(value)}; it must be a list of text")
        for index, item in enumerate(value):
            if not isinstance(item, str):
                raise ShapeError(f"{where}[{index}] is {described(item)}; Kubernetes takes text only: quote it")
    elif shape == "mapping" or isinstance(shape, dict):
        if not isinstance(value, dict):
            raise ShapeError(f"{where} is {described(value)}; it must be a mapping")
        if isinstance(shape, dict):
            check_shape(value, shape, where)
    elif isinstance(shape, list):
        if not isinstance(value, list):
            raise ShapeError(f"{where} is {described(value)}; it must be a list")
        for index, item in enumerate(value):
            _check(item, shape[0], f"{where}[{index}]")
