"""tfk8s registers manifests under exactly the tokens the typed Kubernetes SDK uses."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s
import pytest
from pulumi.runtime.stack import wait_for_rpcs
from pulumi.runtime.sync_await import _sync_await

from components.resources import kube
from tests.harness import RecordingMonitor

TYPED = {
    ("v1", "Namespace"): lambda: k8s.core.v1.Namespace("x"),
    ("v1", "ConfigMap"): lambda: k8s.core.v1.ConfigMap("x"),
    ("v1", "Secret"): lambda: k8s.core.v1.Secret("x"),
    ("v1", "Service"): lambda: k8s.core.v1.Service("x"),
    ("v1", "PersistentVolumeClaim"): lambda: k8s.core.v1.PersistentVolumeClaim("x"),
    ("v1", "Node"): lambda: k8s.core.v1.NodePatch("x"),
    ("apps/v1", "StatefulSet"): lambda: k8s.apps.v1.StatefulSet("x", spec={}),
    ("apps/v1", "Deployment"): lambda: k8s.apps.v1.Deployment("x", spec={}),
    ("batch/v1", "Job"): lambda: k8s.batch.v1.Job("x"),
    ("networking.k8s.io/v1", "NetworkPolicy"): lambda: k8s.networking.v1.NetworkPolicy("x"),
    # Custom resources go through the SDK's CustomResource, under the same token scheme.
    ("jobset.x-k8s.io/v1alpha2", "JobSet"): lambda: k8s.apiextensions.CustomResource(
        "x", api_version="jobset.x-k8s.io/v1alpha2", kind="JobSet"
    ),
    ("kueue.x-k8s.io/v1beta1", "LocalQueue"): lambda: k8s.apiextensions.CustomResource(
        "x", api_version="kueue.x-k8s.io/v1beta1", kind="LocalQueue"
    ),
}


def registered_type_and_version(make) -> tuple[str, str]:
    monitor = RecordingMonitor()
    pulumi.runtime.set_mocks(monitor.mocks, project="tfk8s", stack="t", monitor=monitor)
    make()
    _sync_await(wait_for_rpcs())
    (request, _urn), = monitor.registrations
    return request.type, request.version


@pytest.mark.parametrize("api_version, kind", list(TYPED))
def test_token_and_provider_version_match_the_typed_sdk(api_version, kind):
    typed = registered_type_and_version(TYPED[(api_version, kind)])
    manifest = {"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}}
    ours = registered_type_and_version(lambda: kube.create("x", manifest))
    assert ours == typed
    assert ours[1], "the provider version is pinned like the typed SDK pins it"


def test_every_kind_tfk8s_creates_is_checked_against_the_typed_sdk():
    assert set(TYPED) == set(kube.RESOURCE_TOKENS)


def test_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="tfk8s does not create apps/v1 DaemonSet"):
        kube.resource_token({"apiVersion": "apps/v1", "kind": "DaemonSet"})
