"""Turns a manifest dict into the matching pulumi_kubernetes resource."""

from __future__ import annotations

from typing import Any, Mapping, Optional

import pulumi
import pulumi_kubernetes as k8s


def _resource_class(api_version: str, kind: str) -> Any:
    # Looked up on use: pulumi_kubernetes imports its API modules lazily, and
    # importing all of them costs seconds.
    classes = {
        ("v1", "Namespace"): lambda: k8s.core.v1.Namespace,
        ("v1", "ConfigMap"): lambda: k8s.core.v1.ConfigMap,
        ("v1", "Service"): lambda: k8s.core.v1.Service,
        ("v1", "Node"): lambda: k8s.core.v1.NodePatch,
        ("apps/v1", "StatefulSet"): lambda: k8s.apps.v1.StatefulSet,
        ("batch/v1", "Job"): lambda: k8s.batch.v1.Job,
        ("networking.k8s.io/v1", "NetworkPolicy"): lambda: k8s.networking.v1.NetworkPolicy,
    }
    try:
        return classes[(api_version, kind)]()
    except KeyError:
        raise ValueError(f"tfk8s does not create {api_version} {kind}") from None


def create(
    name: str, manifest: Mapping[str, Any], opts: Optional[pulumi.ResourceOptions] = None
) -> pulumi.CustomResource:
    """Register `manifest` (a Node manifest becomes a server-side-apply NodePatch)."""
    cls = _resource_class(manifest["apiVersion"], manifest["kind"])
    fields = {key: value for key, value in manifest.items() if key not in ("apiVersion", "kind")}
    return cls(name, opts=opts, **fields)
