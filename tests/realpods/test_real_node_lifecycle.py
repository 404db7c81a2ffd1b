"""A real-node start that fails half-way puts the host back; so does a teardown after a
NetworkPolicy agent was killed outright.

Runs before the session's real cluster starts (conftest.py orders it first):
only one set of real nodes can own the pod bridge at a time.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from tests.realpods.conftest import host_snapshot, require_real_node_prerequisites
from tools.localcluster import host, lifecycle, netfilter, network_policies, paths, realnodes
from tools.localcluster.processes import ClusterError
from tools.nodeimage.images import pause_image

FAILED_START = paths.ClusterDir(paths.CLUSTER_ROOT / "failed-start")
AGENTS_STOPPED = paths.ClusterDir(paths.CLUSTER_ROOT / "agents-stopped")


def test_a_start_that_fails_after_containerd_leaves_nothing_behind(monkeypatch):
    require_real_node_prerequisites()
    before = host_snapshot()

    def kubelet_fails(*args, **kwargs):
        raise ClusterError("kubelet could not start (made to fail by the test)")

    monkeypatch.setattr(realnodes, "_start_kubelet", kubelet_fails)
    # Only the small sandbox image: the failure comes after the images are loaded anyway.
    monkeypatch.setattr(realnodes, "tensorflow_image", pause_image)
    with pytest.raises(ClusterError, match="made to fail by the test"):
        lifecycle.up(FAILED_START, real=["srv-00"], tie_to_parent=True)
    assert host_snapshot() == before


def test_an_agent_stopped_removes_its_table_one_killed_leaves_it_to_teardown_and_the_sysctl_goes_back(
    monkeypatch,
):
    require_real_node_prerequisites()
    bridge_netfilter = Path("/proc/sys", host.BRIDGE_NETFILTER_SYSCTL)
    original = bridge_netfilter.read_text().strip()
    # Off before the start, so that putting it back is seen (this machine keeps it on).
    bridge_netfilter.write_text("0")
    try:
        before = host_snapshot()
        # No pod runs here: the sandbox image alone is enough for Ready nodes.
        monkeypatch.setattr(realnodes, "tensorflow_image", pause_image)
        monkeypatch.setattr(realnodes, "program_image_archives", lambda: [])
        lifecycle.up(AGENTS_STOPPED, real=["srv-00", "srv-01"], tie_to_parent=True)
        try:
            assert bridge_netfilter.read_text().strip() == "1"
            stopped, killed = network_policies.table("srv-00"), network_policies.table("srv-01")
            assert {stopped, killed} <= set(netfilter.tables())
            assert {network_policies.queue(0), network_policies.queue(1)} <= netfilter.bound_queues()
            real = realnodes.RealNodes.load(AGENTS_STOPPED)
            assert real is not None
            agents = [real.processes[network_policies.process_name(node)] for node in ("srv-00", "srv-01")]

            os.kill(agents[0], signal.SIGTERM)  # as teardown stops it
            _, status = os.waitpid(agents[0], 0)
            assert os.waitstatus_to_exitcode(status) == 0
            assert stopped not in netfilter.tables(), "the agent did not remove its table as it stopped"
            os.kill(agents[1], signal.SIGKILL)  # as a killed test run's agents die (they die with it)
            os.waitpid(agents[1], 0)
            assert killed in netfilter.tables()
            assert not {network_policies.queue(0), network_policies.queue(1)} & netfilter.bound_queues()
        finally:
            lifecycle.down(AGENTS_STOPPED)
        assert bridge_netfilter.read_text().strip() == "0"
        assert host_snapshot() == before
    finally:
        bridge_netfilter.write_text(original)
