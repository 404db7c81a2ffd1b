"""A real-node start that fails half-way puts the host back; so does a teardown after a
NetworkPolicy agent was killed outright, and a start after another cluster's run was killed.

Runs before the session's real cluster starts (conftest.py orders it first):
only one set of real nodes can own the pod bridge at a time.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.realpods.conftest import host_snapshot, require_real_node_prerequisites
from tools.localcluster import host, host_claim, lifecycle, netfilter, network_policies, paths, realnodes
from tools.localcluster.processes import ClusterError
from tools.nodeimage.images import pause_image

FAILED_START = paths.ClusterDir(paths.CLUSTER_ROOT / "failed-start")
AGENTS_STOPPED = paths.ClusterDir(paths.CLUSTER_ROOT / "agents-stopped")
KILLED_RUN = paths.ClusterDir(paths.CLUSTER_ROOT / "killed-run")
AFTER_KILLED_RUN = paths.ClusterDir(paths.CLUSTER_ROOT / "after-killed-run")
KILLED_RUN_START_TIMEOUT_S = 300


def test_a_start_that_fails_after_containerd_leaves_nothing_behind(monkeypatch):
    require_real_node_prerequisites()
    before = host_snapshot()

    def kubelet_fails(*args, **kwargs):
        raise ClusterError("kubelet could not start (made to fail by the test)")

    monkeypatch.setattr(realnodes, "_start_kubelet", kubelet_fails)
    # Only the small sandbox image: the failure comes after the images are loaded anyway.
    monkeypatch.setattr(realnodes, "tensorflow_image", pause_image)
    monkeypatch.setattr(realnodes, "program_image_archives", lambda: [])
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


def test_a_start_after_another_clusters_run_was_killed_puts_the_host_back_first(monkeypatch):
    """A run killed outright (a session's end, SIGKILL) leaves the bridge, the cgroups and the sysctls
    with what to put back in its own folder: the next start from another folder, a benchmark's or
    another checkout's, tears that down instead of refusing the bridge as not its own."""
    require_real_node_prerequisites()
    before = host_snapshot()
    # The killed run: its own process, with only the sandbox image, killed once its node is Ready.
    run = subprocess.Popen(
        [sys.executable, "-c", _START_AND_WAIT.format(root=str(KILLED_RUN.root))],
        cwd=paths.PROJECT_ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert run.stdout is not None
        ready = _read_line(run, timeout_s=KILLED_RUN_START_TIMEOUT_S)
        assert ready == "ready", f"the run to be killed did not start: {ready!r}"
        assert host_claim.claimant() == KILLED_RUN.root.resolve()
    finally:
        run.kill()  # its kubelet, containerd and agents die with it (tied to their parent)
        run.wait()
    assert realnodes.RealNodes.load(KILLED_RUN) is not None, "the killed run left no record to put back from"

    said: list[str] = []
    monkeypatch.setattr(realnodes, "tensorflow_image", pause_image)  # no pod runs: Ready nodes suffice
    monkeypatch.setattr(realnodes, "program_image_archives", lambda: [])
    try:
        lifecycle.up(AFTER_KILLED_RUN, real=["srv-00"], tie_to_parent=True, say=said.append)
        try:
            assert any(f"the killed cluster in {KILLED_RUN.root.resolve()}" in line for line in said), said
            assert realnodes.RealNodes.load(KILLED_RUN) is None
            assert host_claim.claimant() == AFTER_KILLED_RUN.root.resolve()
        finally:
            lifecycle.down(AFTER_KILLED_RUN)
    finally:
        lifecycle.down(KILLED_RUN)  # its control plane's files (its processes died with the run)
    assert host_claim.claimant() is None
    assert host_snapshot() == before


_START_AND_WAIT = textwrap.dedent(
    """
    import time
    from pathlib import Path
    from tools.localcluster import lifecycle, paths, realnodes
    from tools.nodeimage.images import pause_image
    realnodes.tensorflow_image = pause_image
    realnodes.program_image_archives = lambda: []
    lifecycle.up(paths.ClusterDir(Path({root!r})), real=["srv-00"], tie_to_parent=True)
    print("ready", flush=True)
    time.sleep(3600)
    """
)


def _read_line(run: subprocess.Popen, timeout_s: float) -> str:
    """The run's first line of output, or what it was when the run ended or the time ran out."""
    assert run.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(run.stdout, selectors.EVENT_READ)
        if not selector.select(timeout=timeout_s):
            return f"nothing within {timeout_s} s"
        return run.stdout.readline().strip() or f"ended with {run.wait()}"
