"""`status` with rights in the experiment's namespace only: what it may not read beyond them (Nodes, the
JobSet CRD, Kueue's Workloads) is not an error; it goes on without it and says in one line what it
could not read and which permission would show it (against a fake API server, as a user runs it)."""

from __future__ import annotations

import json
from typing import Iterator

import pytest

from components.cli.main import main
from components.objects.loading import load_experiment
from tests.live.fake_api import FakeCluster, discovery, forbidden, listed, not_found, serve, task_pods
from tests.stack_variants import write_variant

STACK = "scene1-case1-hot-none"
USER_PERMISSION = "for system:serviceaccount:ml:alice"


@pytest.fixture
def cluster(tmp_path) -> Iterator[FakeCluster]:
    yield from serve(tmp_path)


def status(cluster: FakeCluster, capsys, stack: str = STACK, *flags: str) -> tuple[int, str, str]:
    code = main(["status", stack, "--kubeconfig", cluster.kubeconfig, *flags])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_nodes_forbidden_status_goes_on_and_says_which_permission_would_show_them(cluster, capsys):
    experiment = load_experiment(STACK)
    cluster.experiment_routes(experiment, task_pods(experiment, {p.task.name: "srv-00" for p in experiment.plan.placements}))
    cluster.routes["/api/v1/nodes"] = listed("Node", [{"metadata": {"name": "srv-00"}}])
    code, allowed_json, _ = status(cluster, capsys, STACK, "--json")
    assert code == 0

    cluster.routes["/api/v1/nodes"] = forbidden("list", "nodes")
    code, text, err = status(cluster, capsys)
    assert code == 0 and err == ""
    assert "6/6 tasks running as planned" in text and "phase: Running" in text
    not_read = [line for line in text.splitlines() if line.startswith("not read:")]
    assert not_read == [
        f"not read: Nodes (it needs `list` on `nodes` cluster-wide {USER_PERMISSION}); with it, status names a planned "
        "server that is not in the cluster"
    ]

    code, forbidden_json, _ = status(cluster, capsys, STACK, "--json")
    assert code == 0
    allowed, refused = json.loads(allowed_json), json.loads(forbidden_json)
    assert "notRead" not in allowed
    assert refused.pop("notRead") == not_read
    assert refused == allowed, "every field as it is when Nodes may be read"


def test_a_jobset_crd_the_user_may_not_read_is_looked_up_in_discovery(cluster, capsys):
    experiment = load_experiment(STACK)
    cluster.experiment_routes(experiment, {})
    cluster.routes[f"/apis/jobset.x-k8s.io/v1alpha2/namespaces/{experiment.namespace}/jobsets/tf"] = not_found()
    cluster.routes["/apis/apiextensions.k8s.io/v1/customresourcedefinitions/jobsets.jobset.x-k8s.io"] = forbidden(
        "get", "customresourcedefinitions", "apiextensions.k8s.io", name="jobsets.jobset.x-k8s.io")
    cluster.routes["/api/v1/nodes"] = forbidden("list", "nodes")

    cluster.routes["/apis"] = discovery("jobset.x-k8s.io")
    code, text, err = status(cluster, capsys)
    assert code == 1 and err == ""  # no task runs yet
    assert "phase: Pending (no JobSet yet)" in text

    cluster.routes["/apis"] = discovery("batch")
    code, text, err = status(cluster, capsys)
    assert code == 2 and text == ""
    assert err.startswith(f"stack '{STACK}': the cluster has no JobSet (jobsets.jobset.x-k8s.io is not installed)")


def test_kueues_workloads_forbidden_a_queued_experiment_says_what_it_could_not_read(cluster, capsys, tmp_path):
    stack = write_variant(tmp_path, STACK, "queued", lambda values: values["tfk8s:cluster"].update(queue="team-a"))
    experiment = load_experiment(stack)
    cluster.experiment_routes(experiment, {}, jobset={
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "tf"}, "spec": {"suspend": True}, "status": {}})
    cluster.routes["/api/v1/nodes"] = listed("Node", [{"metadata": {"name": "srv-00"}}])
    cluster.routes[f"/apis/kueue.x-k8s.io/v1beta1/namespaces/{experiment.namespace}/workloads"] = forbidden(
        "list", "workloads", "kueue.x-k8s.io", experiment.namespace)

    code, text, err = status(cluster, capsys, stack)
    assert code == 1 and err == ""
    assert "phase: Queued (waiting for Kueue to make its Workload)" in text
    assert text.splitlines()[-1] == (
        f"not read: Kueue's Workloads (it needs `list` on `workloads.kueue.x-k8s.io` in namespace {experiment.namespace} "
        f"{USER_PERMISSION}); with it, status says why Kueue has not admitted it yet"
    )
