"""Task groups: the plan's tasks as one workload per role per server."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings

from components.plan.object_names import ObjectNames
from components.plan.planner import PoolServers, plan_placement
from components.plan.tf_config import cluster_spec
from components.plan.workloads import DNS_LABEL, MAX_GROUP_NAME, MAX_JOBSET_GROUP_NAME, pod_hostname, task_groups
from tests.plan.test_planner import plan_for, servers, specs

OWN = ObjectNames()  # a namespace of the experiment's own
SHARED = ObjectNames("ranking-a-")  # stack ranking-a in a team's namespace


def groups_of(plan, *pools, max_name=MAX_GROUP_NAME):
    return task_groups(plan, {pool.name: pool.servers or () for pool in pools}, max_name)


def test_one_workload_per_role_per_server_named_after_it():
    pool = PoolServers("servers", servers("srv", 3))
    plan = plan_placement("colocated", pool, pool, ps_count=4, worker_count=8)
    described = [(g.name, g.server, g.first_index, g.count) for g in groups_of(plan, pool)]
    assert described == [
        ("chief", None, 0, 1),
        ("ps-srv-00", "srv-00", 0, 2),
        ("ps-srv-01", "srv-01", 2, 1),
        ("ps-srv-02", "srv-02", 3, 1),
        ("worker-srv-00", "srv-00", 0, 3),
        ("worker-srv-01", "srv-01", 3, 3),
        ("worker-srv-02", "srv-02", 6, 2),
    ]
    worker_group = groups_of(plan, pool)[-2]
    # StatefulSet pods are named by task index; a JobSet's by the index within the group's Job.
    assert [pod_hostname(worker_group, t.index, "statefulset", OWN) for t in worker_group.tasks] == [
        "worker-srv-01-3", "worker-srv-01-4", "worker-srv-01-5"
    ]
    assert [pod_hostname(worker_group, t.index, "jobset", OWN) for t in worker_group.tasks] == [
        "tf-worker-srv-01-0-0", "tf-worker-srv-01-0-1", "tf-worker-srv-01-0-2"
    ]


def test_unpinned_tasks_form_one_workload_per_role():
    pool = PoolServers("managed", None)
    plan = plan_placement("spread", pool, pool, ps_count=2, worker_count=5)
    assert [(g.name, g.first_index, g.count) for g in groups_of(plan, pool)] == [
        ("chief", 0, 1), ("ps", 0, 2), ("worker", 0, 5)
    ]
    assert cluster_spec(groups_of(plan, pool), "ns", "statefulset", OWN)["worker"][4] == "worker-4.worker.ns.svc:2222"
    assert cluster_spec(groups_of(plan, pool), "ns", "jobset", OWN)["worker"][4] == "tf-worker-0-4.tf.ns.svc:2222"


def test_in_a_shared_namespace_every_address_starts_with_the_stack():
    pool = PoolServers("managed", None)
    plan = plan_placement("spread", pool, pool, ps_count=2, worker_count=5)
    assert cluster_spec(groups_of(plan, pool), "team", "statefulset", SHARED)["worker"][4] == (
        "ranking-a-worker-4.ranking-a-worker.team.svc:2222")
    assert cluster_spec(groups_of(plan, pool), "team", "jobset", SHARED)["ps"][1] == (
        "ranking-a-tf-ps-0-1.ranking-a-tf.team.svc:2222")


def test_server_names_that_cannot_be_host_names_give_positions_for_the_whole_pool():
    nodes = ("gpu-a", "ip-10-0-1-23.ec2.internal", "gpu-c")
    pool = PoolServers("gpus", nodes)
    plan = plan_placement("colocated", pool, pool, ps_count=3, worker_count=3)
    assert [g.name for g in groups_of(plan, pool)][1:] == [
        "ps-s0", "ps-s1", "ps-s2", "worker-s0", "worker-s1", "worker-s2"
    ]
    long_pool = PoolServers("long", ("n" * 50, "short"))
    plan = plan_placement("colocated", long_pool, long_pool, ps_count=1, worker_count=2)
    assert [g.name for g in groups_of(plan, long_pool)][1:] == ["ps-s0", "worker-s0", "worker-s1"]
    # A JobSet pod's name has room for less: `tf-<group>-0-<index>-<5 characters>`.
    middling_pool = PoolServers("middling", ("n" * 40, "short"))
    plan = plan_placement("colocated", middling_pool, middling_pool, ps_count=1, worker_count=2)
    assert [g.name for g in groups_of(plan, middling_pool)][1:] == ["ps-" + "n" * 40, "worker-" + "n" * 40, "worker-short"]
    jobset_names = [g.name for g in groups_of(plan, middling_pool, max_name=MAX_JOBSET_GROUP_NAME)][1:]
    assert jobset_names == ["ps-" + "n" * 40, "worker-s0", "worker-s1"]  # per role: "ps-" is shorter


@settings(max_examples=300, deadline=None)
@given(specs)
def test_every_task_runs_in_exactly_one_group_on_its_planned_server(spec):
    plan, ps_pool, worker_pool = plan_for(spec)
    groups = groups_of(plan, ps_pool, worker_pool, max_name=MAX_JOBSET_GROUP_NAME)
    where = {p.task: (p.pool, p.server) for p in plan.placements}
    grouped = Counter(task for group in groups for task in group.tasks)
    assert set(grouped) == set(where) and set(grouped.values()) == {1}
    for group in groups:
        assert {where[task] for task in group.tasks} == {(group.pool, group.server)}
        assert DNS_LABEL.match(group.name) and len(group.name) <= MAX_JOBSET_GROUP_NAME
        longest_pod = f"{pod_hostname(group, group.first_index + group.count - 1, 'jobset', OWN)}-abcde"
        assert len(longest_pod) <= 63, "JobSet names a pod <host name>-<5 characters>"
    assert len({g.name for g in groups}) == len(groups)
    # One workload per role per server (per role per pool when unpinned).
    assert len({(g.task_type, g.pool, g.server) for g in groups}) == len(groups)
    cluster = cluster_spec(groups, "ns", "jobset", OWN)
    assert [len(cluster[t]) for t in ("chief", "ps", "worker")] == [1, spec["ps_count"], spec["worker_count"]]
    assert len({a for addresses in cluster.values() for a in addresses}) == 1 + spec["ps_count"] + spec["worker_count"]
