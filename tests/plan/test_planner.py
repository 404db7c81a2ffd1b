"""The placement planner: exact seed layouts and properties over random specs."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from components.plan.planner import PoolServers, Task, balanced_blocks, compress_names, plan_placement


def servers(prefix: str, count: int) -> tuple[str, ...]:
    return tuple(f"{prefix}-{i:02d}" for i in range(count))


def test_colocated_ps_and_workers_in_blocks_larger_first():
    pool = PoolServers("servers", servers("srv", 3))
    plan = plan_placement("colocated", pool, pool, ps_count=4, worker_count=8)
    assert plan.by_server() == {
        "srv-00": ["ps-0", "ps-1", "worker-0", "worker-1", "worker-2"],
        "srv-01": ["ps-2", "worker-3", "worker-4", "worker-5"],
        "srv-02": ["ps-3", "worker-6", "worker-7"],
    }
    assert plan.unpinned() == {"servers": ["chief-0"]}


def test_isolated_uses_each_pool_for_its_role():
    ps_pool = PoolServers("ps", servers("ps", 2))
    worker_pool = PoolServers("wk", servers("wk", 2))
    plan = plan_placement("isolated", ps_pool, worker_pool, ps_count=2, worker_count=20)
    assert plan.by_server() == {
        "ps-00": ["ps-0"],
        "ps-01": ["ps-1"],
        "wk-00": [f"worker-{i}" for i in range(10)],
        "wk-01": [f"worker-{i}" for i in range(10, 20)],
    }


def test_pinning_counts_gives_each_server_its_share_and_leaves_the_indexes_to_the_scheduler():
    """The JobSet model: the same blocks as counts per server, no task pinned to one."""
    pool = PoolServers("servers", servers("srv", 3))
    plan = plan_placement("colocated", pool, pool, ps_count=4, worker_count=8, pinning="count")
    assert plan.by_server() == {}
    assert plan.per_server() == {
        "srv-00": {"ps": 2, "worker": 3}, "srv-01": {"ps": 1, "worker": 3}, "srv-02": {"ps": 1, "worker": 2},
    }
    assert plan.unpinned() == {"servers": ["chief-0", *(f"ps-{i}" for i in range(4)), *(f"worker-{i}" for i in range(8))]}
    assert (plan.share_text("ps", "servers"), plan.share_text("worker", "servers")) == ("1-2", "2-3")
    assert not plan.shares_even()
    even = plan_placement("isolated", PoolServers("ps", servers("ps", 2)), PoolServers("wk", servers("wk", 2)),
                          ps_count=2, worker_count=20, pinning="count")
    assert even.shares_even() and even.share_text("worker", "wk") == "10" and even.share_text("worker", "ps") == "0"
    assert even.summary()["pinning"] == "count"


def test_spread_pins_nothing():
    pool = PoolServers("managed", None)
    plan = plan_placement("spread", pool, pool, ps_count=2, worker_count=3)
    assert plan.by_server() == {}
    assert plan.unpinned() == {"managed": ["chief-0", "ps-0", "ps-1", "worker-0", "worker-1", "worker-2"]}
    assert (plan.pinning, plan.per_server()) == ("none", {})


@pytest.mark.parametrize("ps_count", [0, 2])
def test_spread_over_listed_servers_pins_nothing_and_has_no_shares(ps_count):
    """Spread leaves every task to the scheduler, with PS or without (workers only): no server's share is
    planned, so `plan` prints none (a plan of all-zero shares with pinning kept, before 2026-12-07,
    for spread without PS)."""
    pool = PoolServers("servers", servers("srv", 2))
    plan = plan_placement("spread", pool, pool, ps_count=ps_count, worker_count=3)
    assert (plan.by_server(), plan.shares, plan.pinning) == ({}, (), "none")


@pytest.mark.parametrize(
    "strategy, ps_pool, worker_pool, message",
    [
        pytest.param("isolated", PoolServers("a", ("n1", "n2")), PoolServers("b", ("n2",)),
                     "node 'n2' is in both the PS pool 'a' and the worker pool 'b'", id="isolated, pools share a server"),
        pytest.param("isolated", PoolServers("a", ("n1",)), PoolServers("a", ("n1",)),
                     "separate PS and worker pools", id="isolated, one pool"),
        pytest.param("colocated", PoolServers("a", ("n1",)), PoolServers("b", ("n2",)),
                     "colocated placement puts PS and workers on the same servers", id="colocated, two pools"),
        pytest.param("colocated", PoolServers("a", None), PoolServers("a", None),
                     "pool 'a' is given by a selector, so its servers are unknown", id="colocated, selector pool"),
        pytest.param("packed", PoolServers("a", ("n1",)), PoolServers("a", ("n1",)),
                     "unknown placement 'packed'", id="unknown placement"),
    ],
)
def test_planner_refuses_what_it_cannot_honour(strategy, ps_pool, worker_pool, message):
    with pytest.raises(ValueError, match=message):
        plan_placement(strategy, ps_pool, worker_pool, ps_count=1, worker_count=1)


def test_compress_names_for_the_table():
    assert compress_names(["ps-0", "worker-0", "worker-1", "worker-2", "worker-4"]) == "ps-0, worker-0..2, worker-4"


# -- properties over random specs ----------------------------------------------

specs = st.fixed_dictionaries(
    {
        "strategy": st.sampled_from(["colocated", "isolated", "spread"]),
        "ps_servers": st.integers(1, 30),
        "worker_servers": st.integers(1, 30),
        "ps_count": st.integers(1, 60),
        "worker_count": st.integers(1, 600),
        "strict": st.booleans(),
    }
)


def plan_for(spec):
    ps_pool = PoolServers("ps-pool", servers("ps", spec["ps_servers"]))
    if spec["strategy"] == "colocated":
        worker_pool = ps_pool
    else:
        worker_pool = PoolServers("worker-pool", servers("wk", spec["worker_servers"]))
    plan = plan_placement(
        spec["strategy"], ps_pool, worker_pool, spec["ps_count"], spec["worker_count"], spec["strict"]
    )
    return plan, ps_pool, worker_pool


@settings(max_examples=300, deadline=None)
@given(specs)
def test_every_task_is_placed_exactly_once(spec):
    plan, _, _ = plan_for(spec)
    tasks = [p.task for p in plan.placements]
    assert len(tasks) == len(set(tasks))
    assert set(tasks) == (
        {Task("chief", 0)}
        | {Task("ps", i) for i in range(spec["ps_count"])}
        | {Task("worker", i) for i in range(spec["worker_count"])}
    )
    assert plan.placements == plan_for(spec)[0].placements, "deterministic"


@settings(max_examples=300, deadline=None)
@given(specs)
def test_blocks_are_balanced_contiguous_and_larger_first(spec):
    plan, ps_pool, worker_pool = plan_for(spec)
    if spec["strategy"] == "spread":
        assert all(p.server is None for p in plan.placements)
        return
    for task_type, pool in (("ps", ps_pool), ("worker", worker_pool)):
        placed = [p for p in plan.placements if p.task.type == task_type]
        order = {server: i for i, server in enumerate(pool.servers)}
        positions = [order[p.server] for p in sorted(placed, key=lambda p: p.task.index)]
        assert positions == sorted(positions), "contiguous blocks in server order"
        sizes = [Counter(p.server for p in placed).get(s, 0) for s in pool.servers]
        assert max(sizes) - min(sizes) <= 1
        assert sizes == sorted(sizes, reverse=True), "larger blocks first"
    for p in plan.placements:
        if p.task.type == "ps" and spec["ps_count"] <= len(ps_pool.servers):
            assert p.server == ps_pool.servers[p.task.index], "one PS per server, PS i on server i"
        if p.task.type == "chief":
            assert p.server is None and p.pool == ps_pool.name


@settings(max_examples=300, deadline=None)
@given(specs.filter(lambda s: s["strategy"] == "isolated"))
def test_isolated_pools_are_never_mixed(spec):
    plan, ps_pool, worker_pool = plan_for(spec)
    for p in plan.placements:
        if p.task.type == "ps":
            assert p.server in ps_pool.servers
        elif p.task.type == "worker":
            assert p.server in worker_pool.servers


@given(st.integers(0, 10_000), st.integers(1, 500))
def test_balanced_blocks_sum_and_spread(count, bins):
    sizes = balanced_blocks(count, bins)
    assert sum(sizes) == count and len(sizes) == bins
    assert max(sizes) - min(sizes) <= 1
