"""Loopback ports (trainer/ports.py): the local cluster's servers and trainer.local's tasks pick from
halves of their own, so that two processes starting at once never pick one port."""

from __future__ import annotations

from trainer import ports


def test_the_cluster_and_the_tasks_pick_from_separate_halves_below_the_ephemeral_range():
    first_ephemeral = int(ports.EPHEMERAL_RANGE.read_text().split()[0]) if ports.EPHEMERAL_RANGE.exists() else 32_768
    middle = (ports.LOWEST_LISTEN_PORT + first_ephemeral) // 2
    cluster = [ports.free_port(ports.CLUSTER) for _ in range(50)]
    tasks = ports.free_ports(50)
    assert all(ports.LOWEST_LISTEN_PORT <= port < middle for port in cluster), cluster
    assert all(middle <= port < first_ephemeral for port in tasks), tasks
    assert len(set(cluster + tasks)) == 100, "never one port twice"
