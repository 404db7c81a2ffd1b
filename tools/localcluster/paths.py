"""Where the toolchain and the local cluster live: git-ignored folders of the project."""

from __future__ import annotations

from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
TOOLS_BIN = PROJECT_ROOT / ".tools" / "bin"
CLUSTER_DIR = PROJECT_ROOT / ".cluster"
KUBECONFIG = CLUSTER_DIR / "kubeconfig"
STATE_FILE = CLUSTER_DIR / "state.json"
LOG_DIR = CLUSTER_DIR / "logs"
PKI_DIR = CLUSTER_DIR / "pki"
KUBECTL_CACHE = CLUSTER_DIR / "kubectl-cache"

BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl", "kwok")


def binary(name: str) -> Path:
    path = TOOLS_BIN / name
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: run `make toolchain` first")
    return path
