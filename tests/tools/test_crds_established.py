"""A local cluster's start waits until the addons' CRDs are served: a CRD the API server has just
accepted, whose conditions are not written yet, is waited for, not an error (`kubectl wait` took it
for one, and a control-plane start failed on it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator, Optional

import pytest

from tests.live.fake_api import FakeCluster, listed, serve
from tools.localcluster.client import crds_established

CRDS_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


@pytest.fixture
def cluster(tmp_path) -> Iterator[FakeCluster]:
    yield from serve(tmp_path)


def crd(name: str, conditions: Optional[list[dict[str, str]]]) -> dict[str, Any]:
    plural, group = name.split(".", 1)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": name},
        "spec": {
            "group": group,
            "names": {"kind": plural.capitalize(), "plural": plural},
            "scope": "Namespaced",
            "versions": [{"name": "v1", "served": True, "storage": True}],
        },
        # As the API server returns a CRD right after it accepted it: no conditions yet.
        "status": {"acceptedNames": {"kind": "", "plural": ""}, "conditions": conditions, "storedVersions": ["v1"]},
    }


ESTABLISHED = [{"type": "NamesAccepted", "status": "True"}, {"type": "Established", "status": "True"}]


def test_a_crd_without_conditions_yet_is_waited_for_and_all_established_is_ready(cluster):
    kubeconfig = Path(cluster.kubeconfig)
    names = ["jobsets.jobset.x-k8s.io", "workloads.kueue.x-k8s.io"]
    cluster.routes[CRDS_PATH] = listed("CustomResourceDefinition", [crd(names[0], ESTABLISHED), crd(names[1], None)])
    assert not crds_established(kubeconfig, names)
    cluster.routes[CRDS_PATH] = listed(
        "CustomResourceDefinition",
        [crd(names[0], ESTABLISHED), crd(names[1], [{"type": "Established", "status": "False"}])],
    )
    assert not crds_established(kubeconfig, names)
    cluster.routes[CRDS_PATH] = listed("CustomResourceDefinition", [crd(names[0], ESTABLISHED), crd(names[1], ESTABLISHED)])
    assert crds_established(kubeconfig, names)
    assert not crds_established(kubeconfig, [*names, "tfjobs.kubeflow.org"]), "a CRD not listed yet is not served"
