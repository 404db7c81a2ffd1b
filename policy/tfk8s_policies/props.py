"""Reading the engine's resource properties: read-only mappings, numbers as floats, camelCase
Kubernetes fields, any of them possibly missing (never a crash here).

The policy SDK hands lists over in its own read-only proxy, a Sequence that is no
`list`: a check for `list` would read every list as absent and pass what it should stop."""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping, Optional, Sequence

from .facts import QUANTITY_SUFFIX, WORKLOAD_KINDS


def kind_of(resource_type: str) -> str:
    """'kubernetes:apps/v1:StatefulSet' -> 'StatefulSet'."""
    return resource_type.rsplit(":", 1)[-1]


def api_version_of(resource_type: str) -> str:
    parts = resource_type.split(":")
    if len(parts) != 3 or parts[0] != "kubernetes":
        return ""
    return parts[1][len("core/") :] if parts[1].startswith("core/") else parts[1]


def is_list(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes))


def get(value: Any, *path: Any, default: Any = None) -> Any:
    for key in path:
        if isinstance(key, int):
            if not is_list(value) or key >= len(value):
                return default
            value = value[key]
        else:
            if not isinstance(value, Mapping) or key not in value:
                return default
            value = value[key]
    return value


def as_list(value: Any) -> list:
    return list(value) if is_list(value) else []


def pod_spec(kind: str, props: Mapping[str, Any]) -> Optional[Mapping[str, Any]]:
    if kind == "Pod":
        return get(props, "spec")
    if kind == "CronJob":
        return get(props, "spec", "jobTemplate", "spec", "template", "spec")
    if kind in WORKLOAD_KINDS:
        return get(props, "spec", "template", "spec")
    return None


def pod_labels(kind: str, props: Mapping[str, Any]) -> Mapping[str, str]:
    if kind == "Pod":
        return get(props, "metadata", "labels", default={}) or {}
    if kind == "CronJob":
        return get(props, "spec", "jobTemplate", "spec", "template", "metadata", "labels", default={}) or {}
    return get(props, "spec", "template", "metadata", "labels", default={}) or {}


def number(value: Any) -> Optional[float]:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def quantity_bytes(value: Any) -> Optional[float]:
    """A Kubernetes quantity ('4Gi', '512Mi', '1e9', 2.0) as a number."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, str):
        return None
    match = re.fullmatch(r"([0-9.]+(?:[eE][0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E|m)?", value.strip())
    if not match:
        return None
    return float(match.group(1)) * QUANTITY_SUFFIX[match.group(2) or ""]


def labels_match(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """A LabelSelector (matchLabels and matchExpressions) against labels."""
    for key, value in (get(selector, "matchLabels", default={}) or {}).items():
        if labels.get(key) != value:
            return False
    for expression in as_list(get(selector, "matchExpressions")):
        key, operator = get(expression, "key"), get(expression, "operator")
        values = as_list(get(expression, "values"))
        present = key in labels
        if operator == "In" and not (present and labels[key] in values):
            return False
        if operator == "NotIn" and present and labels[key] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
    return True


def namespace_of(props: Mapping[str, Any]) -> Optional[str]:
    return get(props, "metadata", "namespace")


def name_of(props: Mapping[str, Any]) -> Optional[str]:
    return get(props, "metadata", "name")


def of_kind(resources: Iterable[Any], kind: str) -> list[Any]:
    return [r for r in resources if kind_of(r.resource_type) == kind and r.resource_type.startswith("kubernetes:")]
