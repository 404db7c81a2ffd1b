"""Where the toolchain and the local clusters live: git-ignored folders of the project."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
TOOLS_BIN = PROJECT_ROOT / ".tools" / "bin"
CLUSTER_ROOT = PROJECT_ROOT / ".cluster"

BINARIES = (
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kubectl",
    "kwok",
    "jobset-controller",
    "kueue-controller",
)
# Real nodes: the toolchain's kubelet, CoreDNS, metrics-server and NetworkPolicy agent, and Debian's
# container runtime.
REAL_NODE_BINARIES = ("kubelet", "coredns", "metrics-server", "kube-network-policies")
SYSTEM_BINARIES = {"containerd": "/usr/bin/containerd", "ctr": "/usr/bin/ctr", "runc": "/usr/sbin/runc"}
CNI_PLUGIN_DIR = Path("/usr/lib/cni")


@dataclass(frozen=True)
class ClusterDir:
    """Everything one local cluster writes: state, logs, keys, etcd data, kubeconfig."""

    root: Path

    @property
    def kubeconfig(self) -> Path:
        return self.root / "kubeconfig"

    @property
    def state_file(self) -> Path:
        return self.root / "state.json"

    @property
    def log_dir(self) -> Path:
        return self.root / "logs"

    @property
    def pki_dir(self) -> Path:
        return self.root / "pki"

    @property
    def etcd_dir(self) -> Path:
        return self.root / "etcd"

    @property
    def addons_dir(self) -> Path:
        """JobSet's and Kueue's configuration and webhook certificate."""
        return self.root / "addons"

    @property
    def kubectl_cache(self) -> Path:
        return self.root / "kubectl-cache"

    def owned_paths(self) -> list[Path]:
        """What a fresh start replaces (a test cluster's folder may sit beside them)."""
        return [
            self.kubeconfig,
            self.state_file,
            self.log_dir,
            self.pki_dir,
            self.etcd_dir,
            self.kubectl_cache,
            self.addons_dir,
            self.root / "flexvolume",
        ]


# `make cluster-up`'s cluster; the tests start their own under .cluster/tests/.
DEFAULT_CLUSTER = ClusterDir(CLUSTER_ROOT)
KUBECONFIG = DEFAULT_CLUSTER.kubeconfig


def binary(name: str) -> Path:
    path = TOOLS_BIN / name
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: run `make toolchain` first")
    return path
