"""A stack that asks for JobSet on a cluster without it: `status` and `make apply` say so plainly (no cluster
needed: the clients stand in for an API server that serves neither JobSets nor their CRD)."""

from __future__ import annotations

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic.exceptions import ResourceNotFoundError

from components.live.status import NoJobSetError, read_jobset
from components.objects.jobset import jobset
from components.objects.loading import load_experiment
from tools.localcluster.experiments import ApplyError, apply_manifest

EXPECTED = (
    "stack 'scene1-case1': the cluster has no JobSet (jobsets.jobset.x-k8s.io is not installed); install "
    'JobSet (docs/lifecycle.md) or set tfk8s:cluster.workload: statefulset'
)


class NotServed:
    """An API client whose server knows neither JobSets nor their CRD (what a 404 means to each)."""

    def __getattr__(self, name):
        def not_found(*args, **kwargs):
            raise ApiException(status=404, reason="Not Found")

        return not_found


def test_status_names_the_missing_jobset_and_the_way_out(monkeypatch):
    monkeypatch.setattr(client, "CustomObjectsApi", lambda api: NotServed())
    monkeypatch.setattr(client, "ApiextensionsV1Api", lambda api: NotServed())
    with pytest.raises(NoJobSetError) as error:
        read_jobset(object(), load_experiment("scene1-case1"))
    assert str(error.value) == EXPECTED


def test_apply_names_the_missing_jobset_and_the_way_out():
    class Resources:
        def get(self, **kwargs):
            raise ResourceNotFoundError(f"No matches found for {kwargs}")

    class Dynamic:
        resources = Resources()

        def server_side_apply(self, resource, **kwargs):
            raise AssertionError("nothing is applied without the kind being served")

    with pytest.raises(ApplyError) as error:
        apply_manifest(Dynamic(), jobset(load_experiment("scene1-case1")), "tfk8s-scene1-case1")
    assert str(error.value) == EXPECTED
