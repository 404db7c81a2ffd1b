"""One local control plane for the whole session: real admission, scheduling and controllers.

It needs the toolchain (`make toolchain`); without it every test here fails
with that instruction rather than being skipped, so CI cannot pass without
having checked the objects. The processes die with the test process, even
when it is killed, and are stopped by process group at the end.
"""

from __future__ import annotations

import gc
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from components.objects.loading import load_experiment
from components.objects.render import render
from tests.harness import reset_pulumi
from tests.stack_variants import write_variant
from tools.localcluster import control_plane, paths
from tools.localcluster.client import api_client
from tools.localcluster.experiments import apply_manifests, delete_manifests, rendered_objects
from tools.localcluster.experiment_pods import wait_for_pods
from tools.localcluster.nodes import create_fake_nodes

# `make test-cluster` runs the files on two pytest-xdist workers (most of this stage waits on
# controllers): each worker has a control plane of its own.
_WORKER = os.environ.get("PYTEST_XDIST_WORKER")
TEST_CLUSTER = paths.ClusterDir(paths.CLUSTER_ROOT / (f"tests-{_WORKER}" if _WORKER else "tests"))
# Every stack the tests run; the cluster gets a fake node per server of each.
SEED_STACKS = ("scene1-case2", "scene1-case3", "scene2-case2", "gpu-p40", "scene1-case2-durable")
POD_WAIT_S = 120.0
# The tests that leave their experiment for the session's end to take away (LocalCluster.abandon):
# deleting 2,200 kwok pods took longer than placing them.
LAST_TESTS = "test_ten_times_"
# `make test` runs this stage beside other CPU work: starved, kwok may renew its nodes' heartbeats
# late (seen beside the real pods), and at Kubernetes' default grace (50 s) the node controller would
# taint live servers unreachable mid-test. No test here waits for a heartbeat to lapse: a server is
# lost by deleting its node.
NODE_GRACE = "30m"


def pytest_collection_modifyitems(items):
    """The tests that abandon their experiment run last, and their file too, which a worker takes
    whole (a stable sort keeps every other test's order)."""
    last_files = {item.path for item in items if item.name.startswith(LAST_TESTS)}
    items.sort(key=lambda item: (item.path in last_files, item.name.startswith(LAST_TESTS)))


@pytest.fixture(autouse=True)
def _reset_pulumi_runtime():
    yield
    reset_pulumi()
    gc.enable()


def _loose(values: dict[str, Any]) -> None:
    """scene1-case2 on its own servers, with servers preferred instead of required."""
    values["tfk8s:cluster"]["strict"] = False
    for pool in values["tfk8s:nodePools"]:
        pool["nodes"] = [node.replace("srv-", "loose-srv-") for node in pool["nodes"]]


@dataclass
class LocalCluster:
    kubeconfig: Path
    stacks_dir: Path

    @property
    def api(self):
        return api_client(self.kubeconfig)

    def render(self, stack: str, out: Path) -> list[dict]:
        experiment = load_experiment(stack)
        render(experiment, out, force=True)  # the test's folder may hold its other files
        return rendered_objects(experiment, out)

    def apply(self, stack: str, out: Path, wait: bool = True) -> list[dict]:
        """Render and apply `stack` as `make apply` does; the applied manifests."""
        experiment = load_experiment(stack)
        manifests = self.render(stack, out)
        api = self.api
        apply_manifests(api, experiment.stack, manifests)
        if wait:
            wait_for_pods(api, experiment, POD_WAIT_S)
        return manifests

    def delete(self, stack: str, out: Path) -> None:
        experiment = load_experiment(stack)
        delete_manifests(self.api, experiment.stack, self.render(stack, out))

    def abandon(self, stack: str) -> None:
        """Start deleting the experiment's namespace and return: for the session's last tests, whose
        servers no other test uses and whose pods go with the control plane."""
        namespace = load_experiment(stack).namespace
        client.CoreV1Api(self.api).delete_namespace(namespace, body={"propagationPolicy": "Background"})


@pytest.fixture(scope="session")
def local_cluster(tmp_path_factory) -> LocalCluster:
    missing = [name for name in paths.BINARIES if not (paths.TOOLS_BIN / name).is_file()]
    if missing:
        pytest.fail(f"the local control plane needs {', '.join(missing)}: run `make toolchain`")
    stacks_dir = tmp_path_factory.mktemp("stacks")
    loose = write_variant(stacks_dir, "scene1-case2", "scene1-loose", _loose)
    control_plane.up(TEST_CLUSTER, tie_to_parent=True, node_grace=NODE_GRACE)
    try:
        configs = [load_experiment(stack).config for stack in (*SEED_STACKS, loose)]
        create_fake_nodes(api_client(TEST_CLUSTER.kubeconfig), configs)
        yield LocalCluster(TEST_CLUSTER.kubeconfig, stacks_dir)
    finally:
        control_plane.down(TEST_CLUSTER)


@pytest.fixture(scope="session")
def loose_stack(local_cluster) -> str:
    return str(local_cluster.stacks_dir / "Pulumi.scene1-loose.yaml")
