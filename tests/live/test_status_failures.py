"""What `status` says of an experiment a `failOn` exit ended, and of one restarted after an
eviction, read through the real client from a fake API server (tests/live/fake_api.py)."""

from __future__ import annotations

import json
from typing import Iterator

import pytest

from components.cli.main import main
from components.objects.loading import load_experiment
from tests.live.fake_api import FakeCluster, listed, serve, task_pods

STACK = "scene1-case1-hot-none"


@pytest.fixture
def cluster(tmp_path) -> Iterator[FakeCluster]:
    yield from serve(tmp_path)


def status_json(cluster: FakeCluster, capsys) -> dict:
    cluster.routes["/api/v1/nodes"] = listed("Node", [{"metadata": {"name": "srv-00"}}])
    main(["status", STACK, "--kubeconfig", cluster.kubeconfig, "--json"])  # not 0: the experiment is not running
    return json.loads(capsys.readouterr().out)


def test_a_fail_on_exit_is_named_with_its_task_and_code(cluster, capsys):
    experiment = load_experiment(STACK)
    pods = task_pods(experiment, {p.task.name: "srv-00" for p in experiment.plan.placements})
    worker = pods["worker-1"]
    worker["status"] = {"phase": "Failed", "containerStatuses": [{
        "name": "tensorflow", "ready": False, "restartCount": 0, "image": "i", "imageID": "", "state": {
            "terminated": {"exitCode": 2, "finishedAt": "2026-11-24T02:01:00Z", "message": "unknown flag --embedding_dimm"},
        }}]}
    jobset = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": experiment.names.jobset},
        "spec": {}, "status": {"terminalState": "Failed", "conditions": [{
            "type": "Failed", "status": "True", "reason": "FailJobSetFailurePolicyAction",
            "message": "applying FailJobSet failure policy action (first failed job: tf-worker-0)"}]},
    }
    cluster.experiment_routes(experiment, pods, jobset)
    message = (f"Container tensorflow for pod {experiment.namespace}/{worker['metadata']['name']} failed with exit "
               "code 2 matching FailJob rule at index 1")
    cluster.routes[f"/apis/batch/v1/namespaces/{experiment.namespace}/jobs"] = listed("Job", [{
        "metadata": {"name": "tf-worker-0", "labels": {"tfk8s.io/workload": "worker"}},
        "status": {"failed": 1, "conditions": [
            {"type": "Failed", "status": "True", "reason": "PodFailurePolicy", "message": message}]},
    }])
    said = status_json(cluster, capsys)
    assert said["phase"] == "Failed"
    assert "worker-1's exit code 2 is in workers.failOn: no retry" in said["phaseDetail"], said["phaseDetail"]
    assert "unknown flag --embedding_dimm" in said["phaseDetail"]


def test_restarts_after_an_eviction_are_shown_apart_from_the_counted_ones(cluster, capsys):
    experiment = load_experiment(STACK)
    pods = task_pods(experiment, {p.task.name: "srv-00" for p in experiment.plan.placements})
    pods["ps-0"]["status"] = {"phase": "Pending"}
    jobset = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": experiment.names.jobset},
              "spec": {}, "status": {"restarts": 1}}  # JobSet leaves a count of 0 out
    cluster.experiment_routes(experiment, pods, jobset)
    said = status_json(cluster, capsys)
    assert (said["phase"], said["phaseDetail"]) == (
        "Restarting", f"0 of {experiment.config.cluster.restarts}, and 1 after a disruption, not counted")
