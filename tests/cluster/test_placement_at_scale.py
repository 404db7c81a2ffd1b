"""Exact placement from the real scheduler, at ten times the seed's largest experiments.

Under the JobSet model the plan pins counts: one Job per role, whose pods the
scheduler spreads so that each server holds exactly its share (components/objects/pods.py).
Read back from the API server: every server's PS and workers, for scene1-case4 and
scene2-case4 ten times larger (200 servers, 2,200 tasks; 400 for the isolated one),
and a strict experiment with a cordoned server, which leaves exactly that server's
share pending rather than doubling up elsewhere.
"""

from __future__ import annotations

import time
from collections import Counter

from kubernetes import client
from kubernetes.dynamic import DynamicClient

from components.objects.loading import load_experiment
from tests.stack_variants import write_scaled
from tools.localcluster.experiment_pods import TASK_ROLES, pod_rows, task_pods
from tools.localcluster.nodes import create_fake_nodes

FACTOR = 10
SCHEDULED_WAIT_S = 300.0
TAINT_WAIT_S = 60.0
UNSCHEDULABLE = "node.kubernetes.io/unschedulable"


def placed(dynamic: DynamicClient, experiment) -> dict[str, Counter]:
    """Node -> count of the experiment's PS and workers on it, as the API server has them.

    Read as table rows, one role at a time: decoding 2,200 whole pods every poll was most of this
    test process's CPU (65 s of the file's 260; 38 s as rows)."""
    table: dict[str, Counter] = {}
    for role in TASK_ROLES:
        for row in pod_rows(dynamic, experiment, (role,)):
            if row.node:
                table.setdefault(row.node, Counter())[role] += 1
    return table


def planned(experiment) -> dict[str, Counter]:
    return {
        server: Counter({role: count for role, count in counts.items() if count})
        for server, counts in experiment.plan.per_server().items()
        if any(counts.values())
    }


def land_exactly_as_planned(cluster, stack_file, tmp_path):
    experiment = load_experiment(stack_file)
    create_fake_nodes(cluster.api, [experiment.config])
    cluster.apply(stack_file, tmp_path, wait=False)
    dynamic = DynamicClient(cluster.api)
    try:
        want = planned(experiment)
        deadline = time.monotonic() + SCHEDULED_WAIT_S
        while (got := placed(dynamic, experiment)) != want:
            bound = sum(sum(counts.values()) for counts in got.values())
            assert time.monotonic() < deadline, f"{bound} of {sum(sum(c.values()) for c in want.values())} bound"
            assert all(got[node][role] <= want.get(node, Counter())[role] for node in got for role in got[node]), (
                f"a server holds more than its share: {[(n, got[n], want.get(n)) for n in got if got[n] != want.get(n)]}")
            time.sleep(2.0)
    finally:
        # The session's last tests (conftest.LAST_TESTS), on servers of their own: their 2,200 pods
        # go with the control plane, not one by one.
        cluster.abandon(stack_file)
    return want


def test_ten_times_scene1_case4_colocated_strict_lands_exactly_as_planned(local_cluster, tmp_path):
    want = land_exactly_as_planned(local_cluster, write_scaled(tmp_path, "scene1-case4", FACTOR), tmp_path / "out")
    assert len(want) == 200 and all(counts == Counter({"ps": 1, "worker": 10}) for counts in want.values())


def test_ten_times_scene2_case4_isolated_lands_exactly_as_planned(local_cluster, tmp_path):
    want = land_exactly_as_planned(local_cluster, write_scaled(tmp_path, "scene2-case4", FACTOR), tmp_path / "out")
    assert len(want) == 400
    assert Counter(tuple(sorted(counts.items())) for counts in want.values()) == {
        (("ps", 1),): 200, (("worker", 10),): 200,
    }


def test_a_cordoned_server_leaves_exactly_its_share_pending(local_cluster, tmp_path):
    """Strict: srv-02 cordoned, its PS and 10 workers wait, and no other server takes one; uncordoned,
    they land on it."""
    core = client.CoreV1Api(local_cluster.api)
    dynamic = DynamicClient(local_cluster.api)
    experiment = load_experiment("scene1-case2")
    core.patch_node("srv-02", {"spec": {"unschedulable": True}})
    try:
        deadline = time.monotonic() + TAINT_WAIT_S
        # The node lifecycle controller taints a cordoned node; the spread counts only untainted servers.
        while not any(t.key == UNSCHEDULABLE for t in core.read_node("srv-02").spec.taints or ()):
            assert time.monotonic() < deadline, "srv-02 never got its unschedulable taint"
            time.sleep(0.5)
        local_cluster.apply("scene1-case2", tmp_path, wait=False)
        others = {f"srv-0{i}": Counter({"ps": 1, "worker": 10}) for i in (0, 1, 3, 4)}
        deadline = time.monotonic() + SCHEDULED_WAIT_S
        while (got := placed(dynamic, experiment)) != others:
            assert time.monotonic() < deadline, got
            assert "srv-02" not in got and all(got[n] - others[n] == Counter() for n in got), got
            time.sleep(1.0)
        pods = task_pods(core, experiment)
        pending = Counter(p.metadata.labels["app.kubernetes.io/component"] for p in pods if not p.spec.node_name)
        assert pending == Counter({"ps": 1, "worker": 10})

        core.patch_node("srv-02", {"spec": {"unschedulable": False}})
        deadline = time.monotonic() + SCHEDULED_WAIT_S
        while placed(dynamic, experiment) != {**others, "srv-02": Counter({"ps": 1, "worker": 10})}:
            assert time.monotonic() < deadline, placed(dynamic, experiment)
            time.sleep(1.0)
    finally:
        core.patch_node("srv-02", {"spec": {"unschedulable": False}})
        local_cluster.delete("scene1-case2", tmp_path)
