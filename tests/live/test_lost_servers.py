"""`status` when a server stops answering (its power or network lost): its Node NotReady, its pods left
as they were, nothing replacing them. status names the server, the tasks that wait on it and why, and
the command that releases them (the out-of-service taint), then, once it is applied, what is left to do
(against a fake API server, as a user runs it; tests/realpods/test_faults.py kills a real server)."""

from __future__ import annotations

import copy
import json
from typing import Iterator

import pytest

from components.cli.main import main
from components.objects.loading import load_experiment
from tests.live.fake_api import STARTED, FakeCluster, listed, serve, task_pods

STACK = "scene2-case1"  # ps-0 on ps-srv-00, worker-0..9 on wk-srv-00
LOST = "wk-srv-00"
RELEASE = "kubectl taint node wk-srv-00 node.kubernetes.io/out-of-service=nodeshutdown:NoExecute"
BACK = "kubectl taint node wk-srv-00 node.kubernetes.io/out-of-service-"


@pytest.fixture
def cluster(tmp_path) -> Iterator[FakeCluster]:
    yield from serve(tmp_path)


def node(name: str, ready: bool, out_of_service: bool = False) -> dict:
    condition = (
        {"type": "Ready", "status": "True", "reason": "KubeletReady", "lastTransitionTime": STARTED.isoformat()}
        if ready
        else {
            "type": "Ready",
            "status": "Unknown",
            "reason": "NodeStatusUnknown",
            "message": "Kubelet stopped posting node status.",
            "lastTransitionTime": "2026-11-24T02:10:16Z",
        }
    )
    taints = (
        [{"key": "node.kubernetes.io/out-of-service", "value": "nodeshutdown", "effect": "NoExecute"}]
        if out_of_service
        else []
    )
    return {"metadata": {"name": name}, "spec": {"taints": taints}, "status": {"conditions": [condition]}}


def nodes(cluster: FakeCluster, lost_ready: bool, out_of_service: bool = False) -> None:
    cluster.routes["/api/v1/nodes"] = listed("Node", [node("ps-srv-00", True), node(LOST, lost_ready, out_of_service)])


def running_pods() -> dict[str, dict]:
    experiment = load_experiment(STACK)
    return task_pods(
        experiment,
        {
            p.task.name: p.server or ("ps-srv-00" if p.pool == "ps-servers" else LOST)
            for p in experiment.plan.placements
        },
    )


def status(cluster: FakeCluster, capsys, *flags: str) -> tuple[int, str]:
    code = main(["status", STACK, "--kubeconfig", cluster.kubeconfig, *flags])
    captured = capsys.readouterr()
    assert captured.err == ""
    return code, captured.out


def test_a_server_that_stopped_answering_is_named_with_its_tasks_and_the_command_that_releases_them(cluster, capsys):
    cluster.experiment_routes(load_experiment(STACK), running_pods())
    nodes(cluster, lost_ready=True)
    code, healthy = status(cluster, capsys)
    assert code == 0 and "wk-srv-00 NotReady" not in healthy and "out-of-service" not in healthy

    nodes(cluster, lost_ready=False)
    code, text = status(cluster, capsys)
    assert code == 1
    assert "phase: Pending (waiting on wk-srv-00, NotReady)" in text
    assert "2/12 tasks running as planned" in text
    rows = {
        line.lstrip("! ").split()[0]: line
        for line in text.splitlines()
        if line.lstrip("! ").startswith(("ps-", "worker-"))
    }
    assert (
        "Unknown" in rows["worker-3"]
        and "its pod is still listed on wk-srv-00, NotReady since 02:10:16 UTC" in rows["worker-3"]
    )
    assert "Running" in rows["ps-0"] and not rows["ps-0"].startswith("!")
    assert (
        "server wk-srv-00 NotReady since 02:10:16 UTC (NodeStatusUnknown: Kubelet stopped posting node status.): "
        f"{', '.join(f'worker-{i}' for i in range(10))} wait on it." in text
    )
    assert f"release its pods: {RELEASE}" in text and f"once it is back and healthy: {BACK}" in text
    assert "with strict placement the replacements wait for wk-srv-00" in text

    code, as_json = status(cluster, capsys, "--json")
    report = json.loads(as_json)
    assert report["lostServers"] == [
        {
            "server": LOST,
            "since": "02:10:16 UTC",
            "why": "NodeStatusUnknown: Kubelet stopped posting node status.",
            "tasks": [f"worker-{i}" for i in range(10)],
            "outOfService": False,
            "release": RELEASE,
        }
    ]
    assert {t["task"]: t["phase"] for t in report["tasks"]}["worker-0"] == "Unknown"


def test_pods_left_terminating_on_the_lost_server_are_shown_as_such_not_as_missing(cluster, capsys):
    pods = running_pods()
    for task, pod in pods.items():
        if task.startswith("worker-"):
            pod["metadata"]["deletionTimestamp"] = "2026-11-24T02:15:16Z"  # the unreachable toleration ran out
    cluster.experiment_routes(load_experiment(STACK), pods)
    nodes(cluster, lost_ready=False)
    code, text = status(cluster, capsys)
    assert code == 1
    row = next(line for line in text.splitlines() if " worker-0 " in line)
    assert "Terminating" in row and "wk-srv-00" in row and "Missing" not in row
    assert "its pod is terminating on wk-srv-00, NotReady since 02:10:16 UTC" in row
    assert f"release its pods: {RELEASE}" in text


def test_once_out_of_service_the_pending_replacements_wait_for_the_server_and_the_taint_is_to_be_removed(
    cluster, capsys
):
    pods = running_pods()
    for task, pod in list(pods.items()):
        if task.startswith("worker-"):
            replacement = copy.deepcopy(pod)
            replacement["metadata"]["name"] += "-new"
            replacement["spec"].pop("nodeName")
            replacement["status"] = {
                "phase": "Pending",
                "conditions": [
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "reason": "Unschedulable",
                        "message": "0/2 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/out-of-service: nodeshutdown}.",
                    }
                ],
            }
            pods[task] = replacement
    cluster.experiment_routes(load_experiment(STACK), pods)
    nodes(cluster, lost_ready=False, out_of_service=True)
    code, text = status(cluster, capsys)
    assert code == 1
    row = next(line for line in text.splitlines() if " worker-0 " in line)
    assert "Pending" in row and "waits for wk-srv-00, out of service; 0/2 nodes are available" in row
    assert "It is marked out of service: its pods are ended and replaced." in text
    assert f"once wk-srv-00 is back and healthy: {BACK}" in text and RELEASE not in text
    report = json.loads(status(cluster, capsys, "--json")[1])
    assert report["lostServers"][0]["outOfService"] is True and report["lostServers"][0]["release"] is None
