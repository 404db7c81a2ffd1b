"""A real node's pods come before the host's own busy processes.

Both real nodes run on this one host. On a real server a pod asking one CPU gets one CPU; here, a
benchmark or the program's tests running beside the real pods would, without the nodes' CPU
weight (`host.NODE_CPU_SHARES`), each weigh as much as a whole node, and the diagnose tests read a
starved PS as "none" (a `make test` run with `make bench-trainer` beside it did). The check: a pod
asking one CPU spins and reports, window by window, what share of a core it got, while twice as
many busy processes as the host has cores run outside the nodes.
"""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import time

import pytest

from tests.realpods.conftest import HOST_CORES, POD_WAIT_S, REAL_SERVERS, RealCluster
from tests.realpods.test_network_policy import pod, pod_ready, wait_for
from tools.localcluster.podlogs import timestamped_log

SPINNER = "spinning-pod"
NAMESPACE = "default"
WINDOW_S = 2.0
WINDOWS = 4
# The pod's share of a core, window by window: elapsed CPU time over elapsed wall time.
SPIN = f"""
import time
while True:
    wall, cpu = time.time(), time.process_time()
    while time.time() - wall < {WINDOW_S}:
        pass
    print(f"share {{wall:.3f}} {{(time.process_time() - cpu) / (time.time() - wall):.3f}}", flush=True)
"""
# Unweighted, busy host processes as many as twice the cores leave a node's cgroup about
# 1/(2·cores+1) of the host: a fifth of the 2 cores here, 0.4 of a core. Weighted, all of a core.
BUSY_HOST_PROCESSES = 2 * HOST_CORES
LEAST_SHARE = 0.7


def _shares_after(cluster: RealCluster, started: float) -> list[float]:
    """The pod's share of a core in each window that began after `started` (seconds since the epoch)."""
    shares = []
    for _, line in timestamped_log(cluster.core, NAMESPACE, SPINNER):
        words = line.split()
        if len(words) == 3 and words[0] == "share" and float(words[1]) > started:
            shares.append(float(words[2]))
    return shares


def test_a_pod_asking_one_cpu_gets_it_while_the_host_is_busy_beside_the_nodes(real_cluster: RealCluster):
    core = real_cluster.core
    spinner = pod(SPINNER, NAMESPACE, REAL_SERVERS[0], {}, SPIN)
    spinner["spec"]["containers"][0]["resources"] = {
        "requests": {"cpu": "1", "memory": "32Mi"},
        "limits": {"memory": "128Mi"},
    }
    core.create_namespaced_pod(NAMESPACE, spinner)
    busy: list[subprocess.Popen] = []
    try:
        wait_for(lambda: pod_ready(core.read_namespaced_pod(SPINNER, NAMESPACE)), "the spinning pod ready", POD_WAIT_S)
        real_cluster.within_the_host()
        busy = [
            subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
            for _ in range(BUSY_HOST_PROCESSES)
        ]
        started = time.time()
        # Windows are counted once the pod logged them, however slow the host: no fixed wait.
        wait_for(
            lambda: len(_shares_after(real_cluster, started)) >= WINDOWS,
            f"{WINDOWS} windows of the pod's share",
            POD_WAIT_S,
        )
        shares = _shares_after(real_cluster, started)
        assert all(process.poll() is None for process in busy), "a busy host process ended early"
    finally:
        for process in busy:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        core.delete_namespaced_pod(SPINNER, NAMESPACE, grace_period_seconds=0)
    share = statistics.median(shares)
    if share < LEAST_SHARE:
        pytest.fail(
            f"a pod asking 1 CPU on {REAL_SERVERS[0]} got {share:.2f} of a core (windows: {shares}) while"
            f" {BUSY_HOST_PROCESSES} busy processes ran on the host outside the nodes"
        )
