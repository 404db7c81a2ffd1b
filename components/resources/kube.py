"""Registers a manifest dict as the matching pulumi_kubernetes resource.

tfk8s builds every object as a plain dict (pure code, validated against the
Kubernetes OpenAPI schema in tests), so it registers them with the Kubernetes
provider under the provider's own resource tokens and the SDK's default
options (provider version pin, plugin source) rather than through the typed
Python wrappers. The wrappers add nothing to a finished manifest but cost
time: serializing an object walks their type hints, and importing them loads
every API class of a group, once per task object of the experiment.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

import pulumi

from .private_apis import kubernetes_resource_defaults

# (apiVersion, kind) -> the provider's resource token. A Node manifest is
# applied as a server-side-apply patch: tfk8s labels nodes, it never owns them.
RESOURCE_TOKENS = {
    ("v1", "Namespace"): "kubernetes:core/v1:Namespace",
    ("v1", "ConfigMap"): "kubernetes:core/v1:ConfigMap",
    ("v1", "Secret"): "kubernetes:core/v1:Secret",
    ("v1", "Service"): "kubernetes:core/v1:Service",
    ("v1", "PersistentVolumeClaim"): "kubernetes:core/v1:PersistentVolumeClaim",
    ("v1", "Node"): "kubernetes:core/v1:NodePatch",
    ("apps/v1", "StatefulSet"): "kubernetes:apps/v1:StatefulSet",
    ("apps/v1", "Deployment"): "kubernetes:apps/v1:Deployment",
    ("batch/v1", "Job"): "kubernetes:batch/v1:Job",
    ("networking.k8s.io/v1", "NetworkPolicy"): "kubernetes:networking.k8s.io/v1:NetworkPolicy",
    # Custom resources: the provider's token is `kubernetes:<apiVersion>:<kind>`.
    ("jobset.x-k8s.io/v1alpha2", "JobSet"): "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet",
    ("kueue.x-k8s.io/v1beta1", "LocalQueue"): "kubernetes:kueue.x-k8s.io/v1beta1:LocalQueue",
}


def resource_token(manifest: Mapping[str, Any]) -> str:
    key = (manifest["apiVersion"], manifest["kind"])
    try:
        return RESOURCE_TOKENS[key]
    except KeyError:
        raise ValueError(f"tfk8s does not create {key[0]} {key[1]}") from None


def create(
    name: str, manifest: Mapping[str, Any], opts: Optional[pulumi.ResourceOptions] = None
) -> pulumi.CustomResource:
    """Register `manifest` with the Kubernetes provider as resource `name`."""
    options = pulumi.ResourceOptions.merge(kubernetes_resource_defaults(), opts)
    return pulumi.CustomResource(resource_token(manifest), name, dict(manifest), options)
