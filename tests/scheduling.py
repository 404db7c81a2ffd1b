"""What the Kubernetes scheduler's node-affinity check would admit.

Enough of the NodeSelectorTerm semantics (In, NotIn, Exists, DoesNotExist on
labels; matchFields on metadata.name) to ask of a pod: on which of these nodes
may it run?
"""

from __future__ import annotations

from typing import Any, Mapping


def _requirement_met(requirement: Mapping[str, Any], values: Mapping[str, str]) -> bool:
    key, operator = requirement["key"], requirement["operator"]
    allowed = requirement.get("values") or []
    if operator == "In":
        return key in values and values[key] in allowed
    if operator == "NotIn":
        return key not in values or values[key] not in allowed
    if operator == "Exists":
        return key in values
    if operator == "DoesNotExist":
        return key not in values
    raise ValueError(f"operator {operator} not modelled")


def term_admits(term: Mapping[str, Any], node_name: str, labels: Mapping[str, str]) -> bool:
    """A NodeSelectorTerm: all its expressions and fields must hold."""
    fields = {"metadata.name": node_name}
    return all(_requirement_met(r, labels) for r in term.get("matchExpressions", [])) and all(
        _requirement_met(r, fields) for r in term.get("matchFields", [])
    )


def required_admits(pod_spec: Mapping[str, Any], node_name: str, labels: Mapping[str, str]) -> bool:
    """Does the pod's required node affinity (and nodeSelector) admit this node?"""
    for key, value in (pod_spec.get("nodeSelector") or {}).items():
        if labels.get(key) != value:
            return False
    required = (
        pod_spec.get("affinity", {})
        .get("nodeAffinity", {})
        .get("requiredDuringSchedulingIgnoredDuringExecution")
    )
    if not required:
        return True
    return any(term_admits(term, node_name, labels) for term in required["nodeSelectorTerms"])


def admitted_nodes(pod_spec: Mapping[str, Any], nodes: Mapping[str, Mapping[str, str]]) -> set[str]:
    return {name for name, labels in nodes.items() if required_admits(pod_spec, name, labels)}
