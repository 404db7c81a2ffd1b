"""Kueue admits a whole experiment or none of it: two that do not both fit on one server, and
two exactly placed scene1-case2 experiments (5 servers) that do not both fit on theirs.

Each experiment (1 PS, 10 workers of 4 CPUs, the chief) asks for 43 of the 64
CPUs of srv-00. Without a queue the scheduler places what fits of the second
next to the first, and neither has all its tasks: the state Kueue prevents.
With a ClusterQueue whose quota is srv-00's, the second waits with no pod at
all, and starts whole once the first is deleted.
"""

from __future__ import annotations

import json
import time

import pytest
from kubernetes import client
from kubernetes.dynamic import DynamicClient

from components.cli.main import main as components_main
from components.objects.loading import load_experiment
from components.plan import labels as L
from tests.stack_variants import write_variant
from tools.localcluster.addons import cluster_queue_objects
from tools.localcluster.experiments import apply_manifest

SERVER = "srv-00"
QUEUE = "one-server"
WAIT_S = 120.0  # a bound, not a wait: beside the program stage (CI) the controllers run slower


def one_server_experiment(values: dict, queue: str | None) -> None:
    """Spread over the pool of srv-00 alone (a selector pool: tfk8s labels no node, so two
    experiments can share it), 43 CPUs in all."""
    values["tfk8s:nodePools"] = [{"name": "one", "selector": {"kubernetes.io/hostname": SERVER}}]
    cluster = values["tfk8s:cluster"]
    cluster.pop("ratio", None)
    cluster.update(placement="spread", ps={"replicas": 1, "pool": "one"},
                   workers={"replicas": 10, "pool": "one", "cpu": "4"})
    if queue:
        cluster["queue"] = queue


@pytest.fixture
def experiments(local_cluster):
    """Stack files of two such experiments with the queue and two without."""
    made = {}
    for name, queue in (("gang-a", QUEUE), ("gang-b", QUEUE), ("loose-a", None), ("loose-b", None)):
        made[name] = write_variant(local_cluster.stacks_dir, "spread-managed", name,
                                   lambda values, queue=queue: one_server_experiment(values, queue))
    return made


def pods(cluster, stack: str) -> list:
    experiment = load_experiment(stack)
    return client.CoreV1Api(cluster.api).list_namespaced_pod(
        experiment.namespace, label_selector=L.selector_text(experiment.stack)
    ).items


def running(cluster, stack: str) -> int:
    return sum(1 for pod in pods(cluster, stack) if pod.status.phase == "Running")


def phase(cluster, stack: str, capsys) -> str:
    components_main(["status", stack, "--kubeconfig", str(cluster.kubeconfig), "--json"])
    return json.loads(capsys.readouterr().out)["phase"]


def wait_for(check, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.5)


def test_without_a_queue_two_experiments_each_run_half(local_cluster, experiments, tmp_path):
    first, second = experiments["loose-a"], experiments["loose-b"]
    local_cluster.apply(first, tmp_path / "a")
    try:
        local_cluster.apply(second, tmp_path / "b", wait=False)
        # What fits of the second is placed next to the first: some of its workers run, the rest wait.
        wait_for(lambda: len(pods(local_cluster, second)) == 12, "the second experiment's pods created")
        wait_for(lambda: running(local_cluster, second) >= 3, "the second experiment's pods that fit running")
        time.sleep(2)
        assert running(local_cluster, first) == 12
        second_running = running(local_cluster, second)
        assert 0 < second_running < 12, "half scheduled: some of its tasks run, others never can"
    finally:
        local_cluster.delete(second, tmp_path / "b")
        local_cluster.delete(first, tmp_path / "a")


def test_with_a_queue_the_second_experiment_waits_whole_then_starts(local_cluster, experiments, tmp_path, capsys):
    node = client.CoreV1Api(local_cluster.api).read_node(SERVER)
    for manifest in cluster_queue_objects([node.status.allocatable]):
        if manifest["kind"] == "ClusterQueue":
            manifest["metadata"]["name"] = QUEUE
        apply_manifest(DynamicClient(local_cluster.api), manifest, "tfk8s-test")
    first, second = experiments["gang-a"], experiments["gang-b"]
    local_cluster.apply(first, tmp_path / "a")
    try:
        assert running(local_cluster, first) >= 11
        local_cluster.apply(second, tmp_path / "b", wait=False)
        wait_for(lambda: phase(local_cluster, second, capsys) == "Queued", "the second experiment queued")
        time.sleep(3)
        assert pods(local_cluster, second) == [], "a queued experiment has no pod at all"
        assert phase(local_cluster, second, capsys) == "Queued"

        local_cluster.delete(first, tmp_path / "a")
        wait_for(lambda: running(local_cluster, second) == 12, "the second experiment admitted whole and running")
        assert phase(local_cluster, second, capsys) == "Running"
    finally:
        local_cluster.delete(second, tmp_path / "b")
        local_cluster.delete(first, tmp_path / "a")


FIVE_SERVERS = [f"srv-0{i}" for i in range(5)]
FIVE_SERVER_QUEUE = "five-servers"


def exact_experiment(values: dict) -> None:
    """scene1-case2 (1 PS and 10 workers per server, exactly placed) with 4-CPU workers: 200 of the
    five servers' 320 CPUs; queued."""
    values["tfk8s:cluster"]["workers"]["cpu"] = "4"
    values["tfk8s:cluster"]["queue"] = FIVE_SERVER_QUEUE


def test_two_queued_scene1_experiments_the_second_waits_whole_then_lands_exactly(local_cluster, tmp_path, capsys):
    core = client.CoreV1Api(local_cluster.api)
    allocatable = [core.read_node(name).status.allocatable for name in FIVE_SERVERS]
    for manifest in cluster_queue_objects(allocatable):
        if manifest["kind"] == "ClusterQueue":
            manifest["metadata"]["name"] = FIVE_SERVER_QUEUE
        apply_manifest(DynamicClient(local_cluster.api), manifest, "tfk8s-test")
    first, second = (write_variant(tmp_path, "scene1-case2", name, exact_experiment) for name in ("queued-a", "queued-b"))
    local_cluster.apply(first, tmp_path / "a")
    try:
        assert running(local_cluster, first) == 56  # admitted whole: 11 pod sets before would never be
        local_cluster.apply(second, tmp_path / "b", wait=False)
        wait_for(lambda: phase(local_cluster, second, capsys) == "Queued", "the second experiment queued")
        components_main(["status", second, "--kubeconfig", str(local_cluster.kubeconfig), "--json"])
        detail = json.loads(capsys.readouterr().out)["phaseDetail"]
        assert detail.startswith("waiting for Kueue to admit it: ") and "insufficient" in detail, detail
        assert pods(local_cluster, second) == [], "a queued experiment has no pod at all"

        local_cluster.delete(first, tmp_path / "a")
        wait_for(lambda: running(local_cluster, second) == 56, "the second experiment admitted whole and running")
        placed: dict = {}
        for pod in pods(local_cluster, second):
            if pod.metadata.labels[L.COMPONENT] != "chief":
                placed.setdefault(pod.spec.node_name, []).append(pod.metadata.labels[L.COMPONENT])
        assert {node: sorted(roles).count("worker") for node, roles in placed.items()} == dict.fromkeys(FIVE_SERVERS, 10)
        assert {node: roles.count("ps") for node, roles in placed.items()} == dict.fromkeys(FIVE_SERVERS, 1)
    finally:
        local_cluster.delete(second, tmp_path / "b")
        local_cluster.delete(first, tmp_path / "a")
