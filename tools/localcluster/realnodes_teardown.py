"""Stopping a cluster's real nodes and putting the host back, from the record they left.

`teardown` works from the record alone (realnodes_record.py), not from a live start, since it
runs in three places: after a start that failed half-way (realnodes.py), at `down`, and before an
`up`, for what a killed earlier run of this or another cluster folder left (lifecycle.py). The
order matters: what metrics-server and the NetworkPolicy agents put in the API server first, then
the kubelets, the pods' processes, every other process started (containerd, CoreDNS, the agents),
containerd's shims (which outlive it by design), the mounts, and last the host state (host.py).
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from . import host, host_claim, image_store, metrics_server, network_policies, paths
from .experiments import Progress, quiet
from .node_files import NodeDir, cgroup_name, cni_dir, nodes_dir
from .processes import stop_processes
from .realnodes_record import RealNodes


def teardown(where: paths.ClusterDir, say: Progress = quiet) -> list[str]:
    """Stop the real nodes and everything they started; put the host back. What could not be undone."""
    real = RealNodes.load(where)
    if real is None:
        return []
    problems: list[str] = []
    # Its API first: an aggregated API whose server is gone would stop namespaces from being deleted.
    metrics_server.unregister(where)
    network_policies.unregister(where)
    kubelets = {name: pid for name, pid in real.processes.items() if name.startswith("kubelet-")}
    stop_processes(kubelets)
    for name in real.nodes:
        _kill_containers(cgroup_name(name))
    runtimes = {name: pid for name, pid in real.processes.items() if name not in kubelets}
    stop_processes(runtimes)
    for name in real.nodes:
        node = NodeDir(nodes_dir(where) / name)
        _kill_shims(node)
        problems.extend(f"mount {point}" for point in host.unmount_all(node.root))
    if real.host_state is not None:
        problems.extend(host.restore(real.host_state))
    if problems:
        real.processes = {}
        real.save(where)
        say("could not undo: " + "; ".join(problems))
    else:
        for name in real.nodes:  # before the claim goes: the next start finds them kept
            image_store.give_back(name, NodeDir(nodes_dir(where) / name).containerd_root)
        RealNodes.path(where).unlink()
        host_claim.release(where.root)
        for name in real.nodes:
            host.remove_tree(nodes_dir(where) / name)
        host.remove_tree(cni_dir(where))
    return problems


def _kill_containers(cgroup: str) -> None:
    """SIGKILL every process in the node's pods (their cgroups are under the node's root)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        pids = host.processes_in_cgroup(cgroup)
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.2)


def _kill_shims(node: NodeDir) -> None:
    """containerd's shims outlive containerd by design: SIGKILL this node's."""
    for pid in node_shims(node):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def node_shims(node: NodeDir) -> list[int]:
    """containerd's shims of the node's pods (they outlive containerd by design): ours name its socket."""
    socket_arg = str(node.containerd_socket).encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if command and command[0].endswith(b"containerd-shim-runc-v2") and socket_arg in command:
            found.append(int(entry.name))
    return found
