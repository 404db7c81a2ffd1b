"""A real node's server failing, for the fault drills (tests/realpods/test_faults.py).

`dead_server` makes one real node's machine go silent, as one that loses its power or its network
does: every process of its pods frozen (the node's freezer cgroup), its kubelet, containerd with
its shims, and its NetworkPolicy agent stopped (SIGSTOP, by PID), and every packet to or from its
node and pod addresses dropped on the pod bridge (in a chain of ours). Its Node stays in the API,
NotReady once its heartbeats lapse, and its pods stay as they were: nothing is left to confirm
their end. Leaving the block brings the server back, processes where they stopped: what it then
does with pods that were replaced meanwhile is what a returning machine does.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from pathlib import Path
from typing import Iterable, Iterator

from . import paths
from .host import cgroup_hierarchies
from .node_files import NodeDir, cgroup_name, nodes_dir
from .realnodes_record import RealNodes
from .realnodes_teardown import node_shims

DROP_CHAIN = "TFK8S-FAULTS"
FROZEN, THAWED = "FROZEN", "THAWED"


def _real_node(where: paths.ClusterDir, name: str) -> RealNodes:
    real = RealNodes.load(where)
    if real is None or name not in real.nodes:
        raise ValueError(f"{name} is not a real node of the cluster in {where.root}")
    return real


def node_daemons(real: RealNodes, name: str) -> list[int]:
    """The node's own daemons: its kubelet, containerd and NetworkPolicy agent (process groups)."""
    return [pid for process, pid in real.processes.items() if process.endswith(f"-{name}")]


def _freezer(name: str) -> Path:
    hierarchy = next((h for h in cgroup_hierarchies() if (h / "freezer.state").exists() or h.name == "freezer"), None)
    if hierarchy is None:
        raise RuntimeError("no cgroup freezer on this host: a server's pods cannot be frozen")
    return hierarchy / cgroup_name(name) / "freezer.state"


def _signal_all(groups: Iterable[int], pids: Iterable[int], sent: signal.Signals) -> None:
    for send, targets in ((os.killpg, groups), (os.kill, pids)):
        for target in targets:
            try:
                send(target, sent)
            except ProcessLookupError:
                pass


def _iptables(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["iptables", "-w", *args], check=check, capture_output=True, text=True)


@contextlib.contextmanager
def dropped(addresses: Iterable[str], peers: Iterable[str] = ()) -> Iterator[None]:
    """Drop every forwarded packet from or to `addresses` (with `peers` given: only between them
    and `peers`) in our own chain, jumped to first from FORWARD and INPUT; removed on leaving."""
    addresses, peers = list(addresses), list(peers)
    _iptables("-N", DROP_CHAIN)
    try:
        for hook in ("FORWARD", "INPUT", "OUTPUT"):
            _iptables("-I", hook, "1", "-j", DROP_CHAIN)
        for address in addresses:
            if not peers:
                _iptables("-A", DROP_CHAIN, "-s", address, "-j", "DROP")
                _iptables("-A", DROP_CHAIN, "-d", address, "-j", "DROP")
            for peer in peers:
                _iptables("-A", DROP_CHAIN, "-s", address, "-d", peer, "-j", "DROP")
                _iptables("-A", DROP_CHAIN, "-s", peer, "-d", address, "-j", "DROP")
        yield
    finally:
        for hook in ("FORWARD", "INPUT", "OUTPUT"):
            while _iptables("-D", hook, "-j", DROP_CHAIN, check=False).returncode == 0:
                pass
        _iptables("-F", DROP_CHAIN, check=False)
        _iptables("-X", DROP_CHAIN, check=False)


@contextlib.contextmanager
def dead_server(where: paths.ClusterDir, name: str, pod_addresses: Iterable[str]) -> Iterator[None]:
    """Server `name` silent for the block: its pods frozen, its daemons stopped, its node address
    and `pod_addresses` (its pods') unreachable. Brought back, as it was, on leaving."""
    real = _real_node(where, name)
    freezer = _freezer(name)
    daemons, shims = node_daemons(real, name), node_shims(NodeDir(nodes_dir(where) / name))
    with dropped([real.nodes[name], *pod_addresses]):
        freezer.write_text(FROZEN)
        _signal_all(daemons, shims, signal.SIGSTOP)
        try:
            yield
        finally:
            _signal_all(daemons, shims, signal.SIGCONT)
            freezer.write_text(THAWED)
