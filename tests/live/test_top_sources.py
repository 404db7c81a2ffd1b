"""Where `top` reads CPU and memory: the metrics API (metrics-server) with namespace rights, the kubelet
summary through the node proxy only where that API is absent, and why neither when both are refused
(against a fake API server, through the real client, as a user runs `top`)."""

from __future__ import annotations

import json
from typing import Iterator

import pytest

from components.cli.main import main
from components.objects.loading import load_experiment
from components.plan.experiment import Experiment
from trainer.log_lines import progress_line
from tests.live.fake_api import (
    FakeCluster,
    discovery,
    forbidden,
    listed,
    not_found,
    serve,
    task_pods,
    unavailable,
)

STACK = "scene1-case1-hot-none"  # 3 PS, 2 workers and the chief on srv-00
CHIEF_LOG = progress_line(104, 0.5120, 9506.1) + "\n"
# ps-0 holds the unpartitioned table: it does most of the PS work.
CPU = {"chief-0": 0.2, "ps-0": 0.9, "ps-1": 0.1, "ps-2": 0.1, "worker-0": 0.4}  # worker-1: not sampled yet
MEMORY_MIB = {"chief-0": 300, "ps-0": 900, "ps-1": 250, "ps-2": 250, "worker-0": 400}
METRICS_PATH = "/apis/metrics.k8s.io/v1beta1/namespaces/tf-scene1-case1-hot-none/pods"
SUMMARY_PATH = "/api/v1/nodes/srv-00/proxy/stats/summary"


@pytest.fixture
def cluster(tmp_path) -> Iterator[FakeCluster]:
    yield from serve(tmp_path)


@pytest.fixture
def experiment() -> Experiment:
    return load_experiment(STACK)


def running(cluster: FakeCluster, experiment: Experiment) -> dict[str, dict]:
    pods = task_pods(experiment, {task.name: "srv-00" for group in experiment.groups for task in group.tasks})
    cluster.experiment_routes(experiment, pods, chief_log=CHIEF_LOG)
    cluster.routes["/api/v1/nodes"] = listed("Node", [{"metadata": {"name": "srv-00"}}])
    return pods


def pod_metrics(pods: dict[str, dict]) -> tuple[int, dict]:
    """The metrics API's PodMetricsList, as metrics-server writes it (nanocores, Ki)."""
    return listed("PodMetrics", [
        {"metadata": {"name": pods[task]["metadata"]["name"], "namespace": pods[task]["metadata"]["namespace"]},
         "timestamp": "2026-11-24T02:33:19Z", "window": "10.5s",
         "containers": [{"name": "tensorflow", "usage": {"cpu": f"{int(CPU[task] * 1e9)}n", "memory": f"{MEMORY_MIB[task] * 1024}Ki"}}]}
        for task in CPU
    ])


def summary(pods: dict[str, dict]) -> tuple[int, dict]:
    """srv-00's kubelet Summary API document."""
    return 200, {"node": {"nodeName": "srv-00"}, "pods": [
        {"podRef": {"name": pods[task]["metadata"]["name"], "namespace": pods[task]["metadata"]["namespace"]},
         "cpu": {"usageNanoCores": int(CPU[task] * 1e9)}, "memory": {"workingSetBytes": MEMORY_MIB[task] * 2**20}}
        for task in CPU
    ]}


def top(cluster: FakeCluster, capsys, *flags: str) -> str:
    assert main(["top", STACK, "--kubeconfig", cluster.kubeconfig, *flags]) == 0, capsys.readouterr().err
    return capsys.readouterr().out


def cpu_by_task(view: dict) -> dict:
    return {task["task"]: task["cpu_cores"] for task in view["tasks"]}


def test_with_the_metrics_api_top_needs_no_node_proxy_and_names_the_hot_ps(cluster, experiment, capsys):
    pods = running(cluster, experiment)
    cluster.routes[METRICS_PATH] = pod_metrics(pods)
    cluster.routes["/api/v1/nodes"] = forbidden("list", "nodes")  # namespace rights only
    cluster.routes[SUMMARY_PATH] = forbidden("get", "nodes/proxy", name="srv-00")

    view = json.loads(top(cluster, capsys, "--json"))
    assert view["metrics_source"] == "metrics.k8s.io" and view["metrics_unreadable"] is None
    assert cpu_by_task(view) == {"chief-0": 0.2, "ps-0": 0.9, "ps-1": 0.1, "ps-2": 0.1, "worker-0": 0.4, "worker-1": None}
    ps_0 = next(task for task in view["tasks"] if task["task"] == "ps-0")
    assert ps_0["memory_bytes"] == 900 * 2**20 and ps_0["node"] == "srv-00"
    assert view["ps_imbalance"] == 2.455  # 0.9 over the mean of 0.9, 0.1 and 0.1
    assert view["progress"] == {"step": 104, "steps": 600, "loss": 0.512, "examples_per_sec": 9506.1}

    text = top(cluster, capsys)
    assert "CPU and memory from the metrics API (metrics.k8s.io, metrics-server)" in text
    assert "ps-0 does most of the PS work" in text
    assert cluster.asked_for("/proxy/") == [], "the kubelet is not asked where the metrics API answers"


@pytest.mark.parametrize("absent, said", [
    pytest.param(not_found(), "instead of the metrics API: the cluster serves no metrics.k8s.io (404 Not Found",
                 id="no APIService: 404"),
    pytest.param(unavailable(), "instead of the metrics API: metrics.k8s.io is registered, but its server does not answer "
                 "(503 Service Unavailable", id="metrics-server down: 503"),
    pytest.param(forbidden("list", "pods", "metrics.k8s.io", "tf-scene1-case1-hot-none"),
                 "instead of the metrics API: the cluster serves no metrics.k8s.io (no metrics-server)",
                 id="a 403 where discovery has no metrics.k8s.io"),
])
def test_without_the_metrics_api_top_reads_the_kubelet_summary_where_the_user_may(absent, said, cluster, experiment, capsys):
    pods = running(cluster, experiment)
    cluster.routes[METRICS_PATH] = absent
    cluster.routes["/apis"] = discovery("jobset.x-k8s.io", "kueue.x-k8s.io")
    cluster.routes[SUMMARY_PATH] = summary(pods)

    view = json.loads(top(cluster, capsys, "--json"))
    assert view["metrics_source"] == "kubelet summary" and view["metrics_unreadable"] is None
    assert cpu_by_task(view) == {"chief-0": 0.2, "ps-0": 0.9, "ps-1": 0.1, "ps-2": 0.1, "worker-0": 0.4, "worker-1": None}
    assert view["ps_imbalance"] == 2.455

    text = top(cluster, capsys)
    source = next(line for line in text.splitlines() if line.startswith("CPU and memory"))
    assert source.startswith("CPU and memory from the kubelet summary (each node's kubelet through the API server's node proxy)")
    assert said in source
    assert "ps-0 does most of the PS work" in text


def test_without_the_metrics_api_or_the_node_proxy_top_names_the_permission_and_still_shows_tasks_and_progress(
    cluster, experiment, capsys
):
    running(cluster, experiment)
    cluster.routes[METRICS_PATH] = not_found()
    cluster.routes[SUMMARY_PATH] = forbidden("get", "nodes/proxy", name="srv-00")

    view = json.loads(top(cluster, capsys, "--json"))
    assert view["metrics_source"] is None
    assert "missing permission: `get` on `nodes/proxy` cluster-wide for system:serviceaccount:ml:alice" in view["metrics_unreadable"]
    assert sorted(task["task"] for task in view["tasks"]) == ["chief-0", "ps-0", "ps-1", "ps-2", "worker-0", "worker-1"]
    assert set(cpu_by_task(view).values()) == {None} and view["ps_imbalance"] is None
    assert view["progress"]["step"] == 104

    text = top(cluster, capsys)
    assert "CPU and memory not readable: the cluster serves no metrics.k8s.io (404 Not Found" in text
    assert "refused: 403 Forbidden" in text and "`get` on `nodes/proxy`" in text
    assert "progress: step 104 of 600" in text
    assert "PS imbalance (busiest PS's CPU over the mean): not known\n" in text + "\n"
    assert len(cluster.asked_for(SUMMARY_PATH)) == 2, "one refusal per run: no node after the first is asked"


def test_a_metrics_api_the_user_may_not_read_names_its_permission_and_asks_no_kubelet(cluster, experiment, capsys):
    running(cluster, experiment)
    cluster.routes[METRICS_PATH] = forbidden("list", "pods", "metrics.k8s.io", "tf-scene1-case1-hot-none")
    cluster.routes["/apis"] = discovery("jobset.x-k8s.io", "metrics.k8s.io")

    view = json.loads(top(cluster, capsys, "--json"))
    assert view["metrics_source"] is None
    assert view["metrics_unreadable"].startswith("the metrics API (metrics.k8s.io) refused: 403 Forbidden")
    assert ("missing permission: `list` on `pods.metrics.k8s.io` in namespace tf-scene1-case1-hot-none for "
            "system:serviceaccount:ml:alice") in view["metrics_unreadable"]
    assert view["progress"]["step"] == 104
    assert cluster.asked_for("/proxy/") == []


def test_through_the_metrics_api_a_kwok_node_is_named_as_reporting_none(cluster, experiment, capsys):
    pods = running(cluster, experiment)
    for task in ("worker-0", "worker-1"):
        pods[task]["spec"]["nodeName"] = "srv-01"
    cluster.experiment_routes(experiment, pods, chief_log=CHIEF_LOG)
    metrics = pod_metrics(pods)
    metrics[1]["items"] = [item for item in metrics[1]["items"] if item["metadata"]["name"] != pods["worker-0"]["metadata"]["name"]]
    cluster.routes[METRICS_PATH] = metrics
    cluster.routes["/api/v1/nodes/srv-01"] = (200, {"metadata": {"name": "srv-01", "annotations": {"kwok.x-k8s.io/node": "fake"}}})

    text = top(cluster, capsys)
    assert "srv-01 reports no metrics: a kwok node (no kubelet, so metrics-server reads nothing there)" in text
    rows = {line.split()[0]: line.split()[1:] for line in text.splitlines() if line.startswith(("worker-", "ps-0"))}
    assert rows["worker-0"] == rows["worker-1"] == ["srv-01", "no", "metrics", "no", "metrics"]
    assert rows["ps-0"] == ["srv-00", "0.90", "900", "MiB"]
    assert cluster.asked_for("/api/v1/nodes/srv-00") == [], "a node with figures is not looked up"


def test_a_403_the_api_server_relays_from_the_way_to_a_kwok_node_is_that_nodes_not_the_users(
    cluster, experiment, capsys
):
    """An HTTP proxy between the API server and a node that denies the node's address answers 403 too;
    it is no missing right of the user's: the node is named (a kwok node) and no permission asked for."""
    running(cluster, experiment)
    cluster.routes[METRICS_PATH] = not_found()
    cluster.routes[SUMMARY_PATH] = (403, "resolve_deny: denied destination")
    cluster.routes["/api/v1/nodes/srv-00"] = (200, {"metadata": {"name": "srv-00", "annotations": {"kwok.x-k8s.io/node": "fake"}}})

    text = top(cluster, capsys)
    assert "srv-00 reports no metrics: a kwok node (no kubelet, so no Summary API)" in text
    assert "missing permission" not in text
