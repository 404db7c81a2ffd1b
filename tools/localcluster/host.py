"""What real nodes change on the host, recorded first so that teardown puts it back.

- a bridge for the pods (`tfk8s0`, a private /24 with no route off the
  machine: no gateway in the pods, no masquerade), with the gateway address
  for cluster DNS and one address per node for its kubelet;
- a cgroup per node (`/tfk8s-<node>`) in every hierarchy: each kubelet removes
  pod cgroups it does not know under its root, so two kubelets must not share one;
  its CPU weight puts the node's pods before the host's own busy processes (NODE_CPU_SHARES);
- the sysctls a kubelet sets at start, and the iptables chains it adds;
- for NetworkPolicy (network_policies.py): net.bridge.bridge-nf-call-iptables set to 1, so that
  packets between pods on the bridge pass the inet hooks, and the agents' nftables tables (an
  agent removes its own as it stops; one killed outright leaves it);
- folders kubelet and containerd use whatever they are configured with
  (container log links, the device-plugin socket folder, shim sockets).

Root only. Each step is idempotent, so a teardown after a half-finished start
(or a second teardown) is safe.
"""

from __future__ import annotations

import ipaddress
import os
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable, Optional

from . import netfilter

BRIDGE = "tfk8s0"
SUBNET = ipaddress.ip_network("10.77.0.0/20")
# Cluster DNS listens here; pods reach it on-link.
GATEWAY = str(SUBNET[1])
FIRST_NODE_HOST = 10  # node i's kubelet listens on .10+i
# Some 3,800 pod addresses: host-local hands them out in turn, so a real-pod test session never
# gives a new pod the address of one deleted moments before, which a NetworkPolicy agent whose
# cache still holds the old pod would judge by the old pod's policies.
POD_RANGE = (str(SUBNET[256]), str(SUBNET[-2]))
MAX_REAL_NODES = 64 - FIRST_NODE_HOST
# A real server's pods have its CPUs to themselves. Here every busy process of the host outside
# the nodes (a benchmark, the program's tests) weighs 1024 under CFS, as much as a whole node's
# cgroup at the default weight, so four of them left a node's pods about a fifth of a core and
# the diagnose tests read a starved PS as "none". This weight is 32 such processes' worth: the
# pods come first unless the host runs more than that, and a host process still gets what the
# pods leave.
NODE_CPU_SHARES = 32 * 1024
# The sysctls kubelet changes at start (its "kernel tunables").
KUBELET_SYSCTLS = ("kernel/panic_on_oops", "vm/overcommit_memory", "kernel/panic")
# Bridged packets pass the IPv4 netfilter hooks only with this on (br_netfilter): without it a pod
# reaches any pod on the bridge whatever the NetworkPolicy agents decide.
BRIDGE_NETFILTER_SYSCTL = "net/bridge/bridge-nf-call-iptables"
CHANGED_SYSCTLS = (*KUBELET_SYSCTLS, BRIDGE_NETFILTER_SYSCTL)
IPTABLES_TABLES = ("filter", "nat", "mangle")
# Fixed paths kubelet and containerd write to, whatever their root folders: the
# legacy container log links, the device-plugin socket folder, the shims' sockets.
FIXED_HOST_FOLDERS = ("/var/log/containers", "/var/lib/kubelet", "/run/containerd")


class HostError(RuntimeError):
    pass


def node_address(index: int) -> str:
    if not 0 <= index < MAX_REAL_NODES:
        raise HostError(f"at most {MAX_REAL_NODES} real nodes")
    return str(SUBNET[FIRST_NODE_HOST + index])


@dataclass
class HostState:
    """The host as it was before the first real node; saved with the cluster's state."""

    sysctls: dict[str, str] = field(default_factory=dict)
    iptables_chains: dict[str, list[str]] = field(default_factory=dict)
    bridge_created: bool = False
    cgroups: list[str] = field(default_factory=list)
    # Folder -> its entries before, or None where it did not exist.
    fixed_folders: dict[str, Optional[list[str]]] = field(default_factory=dict)
    # The inet tables the NetworkPolicy agents were started to make (named before they start).
    nft_tables: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "HostState":
        return cls(**data)


def _run(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), check=check, capture_output=True, text=True)


def require_root() -> None:
    if os.geteuid() != 0:
        raise HostError("real nodes need root (a kubelet, containerd, a bridge and cgroups)")


def record() -> HostState:
    return HostState(
        sysctls={name: Path("/proc/sys", name).read_text().strip() for name in CHANGED_SYSCTLS if _has_sysctl(name)},
        iptables_chains={table: _chains(table) for table in IPTABLES_TABLES},
        fixed_folders={folder: _entries(Path(folder)) for folder in FIXED_HOST_FOLDERS},
    )


def _has_sysctl(name: str) -> bool:
    return Path("/proc/sys", name).exists()


def enable_bridge_netfilter() -> None:
    """Show bridged IPv4 packets to netfilter (record() has kept the value to put back)."""
    if not _has_sysctl(BRIDGE_NETFILTER_SYSCTL):
        raise HostError(
            "the kernel has no br_netfilter (no /proc/sys/net/bridge): pods on one bridge would "
            "bypass NetworkPolicy; load it (modprobe br_netfilter) or use a kernel built with it"
        )
    Path("/proc/sys", BRIDGE_NETFILTER_SYSCTL).write_text("1")


def _entries(folder: Path) -> Optional[list[str]]:
    return sorted(entry.name for entry in folder.iterdir()) if folder.is_dir() else None


def _chains(table: str) -> list[str]:
    result = _run("iptables", "-t", table, "-S", check=False)
    return sorted(line.split()[1] for line in result.stdout.splitlines() if line.startswith("-N "))


def create_bridge(state: HostState, node_addresses: Iterable[str]) -> None:
    if _run("ip", "link", "show", BRIDGE, check=False).returncode != 0:
        _run("ip", "link", "add", BRIDGE, "type", "bridge")
        state.bridge_created = True
    elif not state.bridge_created:
        raise HostError(f"a bridge named {BRIDGE} exists and is not ours; remove it or stop what made it")
    present = _run("ip", "-o", "addr", "show", "dev", BRIDGE).stdout
    for address in (GATEWAY, *node_addresses):
        if f" {address}/" not in present:
            _run("ip", "addr", "add", f"{address}/{SUBNET.prefixlen}", "dev", BRIDGE)
    _run("ip", "link", "set", BRIDGE, "up")


def cgroup_hierarchies() -> list[Path]:
    """Every mounted cgroup hierarchy (v1 controllers, name=systemd, the unified v2 one)."""
    hierarchies = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        separator = fields.index("-")
        if fields[separator + 1] in ("cgroup", "cgroup2"):
            hierarchies.append(Path(fields[4]))
    return hierarchies


def create_cgroup(state: HostState, name: str) -> None:
    """`/<name>` in every hierarchy, weighted NODE_CPU_SHARES where CPU is shared out.

    cpuset needs its CPUs and memory nodes filled in. The weight goes with the cgroup at
    teardown: nothing of the host's own is changed.
    """
    for hierarchy in cgroup_hierarchies():
        path = hierarchy / name
        path.mkdir(exist_ok=True)
        if (hierarchy / "cpuset.cpus").exists():
            for setting in ("cpuset.cpus", "cpuset.mems"):
                (path / setting).write_text((hierarchy / setting).read_text())
        if (path / "cpu.shares").exists():  # cgroup v1
            (path / "cpu.shares").write_text(str(NODE_CPU_SHARES))
        elif (path / "cpu.weight").exists():  # cgroup v2: default 100 where v1's is 1024
            (path / "cpu.weight").write_text(str(NODE_CPU_SHARES * 100 // 1024))
    if name not in state.cgroups:
        state.cgroups.append(name)


def processes_in_cgroup(name: str) -> set[int]:
    pids: set[int] = set()
    for hierarchy in cgroup_hierarchies():
        root = hierarchy / name
        if root.is_dir():
            for procs in root.rglob("cgroup.procs"):
                try:
                    pids.update(int(pid) for pid in procs.read_text().split())
                except OSError:
                    pass
    return pids


def remove_cgroup(name: str) -> list[str]:
    """Remove `/<name>` and what kubelet and runc made below it, deepest first; what could not go."""
    left: list[str] = []
    for hierarchy in cgroup_hierarchies():
        root = hierarchy / name
        if not root.is_dir():
            continue
        for path in sorted((p for p in root.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
            _rmdir(path, left)
        _rmdir(root, left)
    return left


def _rmdir(path: Path, left: list[str]) -> None:
    try:
        path.rmdir()
    except FileNotFoundError:
        pass
    except OSError as error:
        left.append(f"{path}: {error.strerror}")


def mounts_under(folder: Path) -> list[Path]:
    """Mount points at or below `folder`, deepest first."""
    found = []
    prefix = str(folder.resolve())
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].replace("\\040", " ")
        if point == prefix or point.startswith(prefix + "/"):
            found.append(Path(point))
    return sorted(set(found), key=lambda p: len(p.parts), reverse=True)


def unmount_all(folder: Path) -> list[str]:
    left = []
    for point in mounts_under(folder):
        if _run("umount", str(point), check=False).returncode != 0:
            if _run("umount", "-l", str(point), check=False).returncode != 0:
                left.append(str(point))
    return left


def restore(state: HostState) -> list[str]:
    """Put the host back as `state` recorded it; what could not be put back."""
    problems: list[str] = []
    for name in list(state.cgroups):
        left = remove_cgroup(name)
        problems.extend(left)
        if not left:
            state.cgroups.remove(name)
    for table, before in state.iptables_chains.items():
        problems.extend(_remove_new_chains(table, set(before)))
    for name in list(state.nft_tables):
        try:
            netfilter.delete_table(netfilter.Table(netfilter.FAMILY_INET, name))
            state.nft_tables.remove(name)
        except OSError as error:
            problems.append(f"nftables table inet {name}: {error.strerror}")
    for folder, entries_before in state.fixed_folders.items():
        _restore_folder(Path(folder), entries_before)
    if state.bridge_created:
        if _run("ip", "link", "show", BRIDGE, check=False).returncode == 0:
            _run("ip", "link", "delete", BRIDGE, check=False)
        state.bridge_created = False
    for name, value in state.sysctls.items():
        current = Path("/proc/sys", name)
        if current.read_text().strip() != value:
            current.write_text(value)
    return problems


def _restore_folder(folder: Path, before: Optional[list[str]]) -> None:
    """Remove what appeared in `folder` (the whole folder if it was not there)."""
    if not folder.exists() and not folder.is_symlink():
        return
    if before is None:
        remove_tree(folder)
        return
    for entry in folder.iterdir():
        if entry.name not in before:
            remove_tree(entry)


def remove_tree(path: Path) -> None:
    """rm -rf, never crossing into a file system mounted below (a mount left behind stays visible)."""
    if path.exists() or path.is_symlink():
        _run("rm", "-rf", "--one-file-system", str(path), check=False)


def _remove_new_chains(table: str, before: set[str]) -> list[str]:
    """Delete the KUBE-* chains kubelet added to `table`, with the rules that jump to them."""
    added = [chain for chain in _chains(table) if chain not in before and chain.startswith("KUBE-")]
    if not added:
        return []
    rules = _run("iptables", "-t", table, "-S").stdout.splitlines()
    for rule in rules:
        words = rule.split()
        if words[0] == "-A" and "-j" in words and words[words.index("-j") + 1] in added and words[1] not in added:
            _run("iptables", "-t", table, "-D", *words[1:], check=False)
    for chain in added:
        _run("iptables", "-t", table, "-F", chain, check=False)
    problems = []
    for chain in added:
        if _run("iptables", "-t", table, "-X", chain, check=False).returncode != 0:
            problems.append(f"iptables -t {table} chain {chain}")
    return problems
