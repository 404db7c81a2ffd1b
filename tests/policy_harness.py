"""Calls the policy pack's policies the way the engine does, on objects tests build.

Props are wrapped as the engine delivers them: numbers as floats, in the
policy SDK's own read-only proxies. `policy/__main__.py` (which serves forever) is never imported.
"""

from __future__ import annotations

import copy
import sys
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Optional

from tests.harness import PROJECT_ROOT, ProgramRun

sys.path.insert(0, str(PROJECT_ROOT / "policy"))

import tfk8s_policies  # noqa: E402
from pulumi_policy import (  # noqa: E402
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
)
from pulumi_policy.proxy import unknown_checking_proxy  # noqa: E402  (what the SDK wraps props with)

POLICIES = {policy.name: policy for policy in tfk8s_policies.POLICIES}
MANDATORY = tfk8s_policies.MANDATORY_POLICIES


def _decoded(value: Any) -> Any:
    """Numbers as the engine's protobuf Struct decodes them: floats."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, Mapping):
        return {key: _decoded(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_decoded(item) for item in value]
    return value


def engine_value(props: Mapping[str, Any]) -> Any:
    """Properties exactly as the policy SDK hands them to a policy under the engine: decoded, then
    wrapped in its read-only proxies (a list is a Sequence there, not a list)."""
    return unknown_checking_proxy(_decoded(props))


@dataclass
class Object:
    """One registered Kubernetes object, editable before it is handed to policies."""

    type: str
    name: str
    urn: str
    props: dict[str, Any]

    @property
    def kind(self) -> str:
        return self.type.rsplit(":", 1)[-1]


def objects_of(run: ProgramRun) -> list[Object]:
    return [
        Object(r.type, r.name, r.urn, copy.deepcopy(r.manifest))
        for r in run.resources
        if r.custom
    ]


def _options() -> PolicyResourceOptions:
    return PolicyResourceOptions(False, [], None, [], PolicyCustomTimeouts(0, 0, 0), [], None)


def resource_args(obj: Object, config: Optional[Mapping[str, Any]] = None) -> ResourceValidationArgs:
    return ResourceValidationArgs(obj.type, engine_value(obj.props), obj.urn, obj.name, _options(), None, config)


def stack_args(
    objects: Iterable[Object],
    config: Optional[Mapping[str, Any]] = None,
    stack_tags: Optional[Mapping[str, str]] = None,
) -> StackValidationArgs:
    resources = [
        PolicyResource(o.type, engine_value(o.props), o.urn, o.name, _options(), None, None, [], {})
        for o in objects
    ]
    return StackValidationArgs(resources, config, stack_tags)


def violations(
    policy_name: str,
    objects: list[Object],
    config: Optional[Mapping[str, Any]] = None,
    stack_tags: Optional[Mapping[str, str]] = None,
) -> list[str]:
    policy = POLICIES[policy_name]
    found: list[str] = []

    def report(message: str, urn: Optional[str] = None) -> None:
        found.append(message)

    if isinstance(policy, ResourceValidationPolicy):
        for obj in objects:
            policy.validate(resource_args(obj, config), report)
    else:
        policy.validate(stack_args(objects, config, stack_tags), report)
    return found


def tripped(objects: list[Object], names: Iterable[str] = MANDATORY) -> dict[str, list[str]]:
    """Policy name -> its violations, for those that found any."""
    result = {}
    for name in names:
        found = violations(name, objects)
        if found:
            result[name] = found
    return result
