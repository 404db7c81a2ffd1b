"""Fake nodes (kwok) standing in for the servers a stack names.

One node per server in the stack's pools, with a real server's CPU, memory,
local disk and pod capacity. Nodes carry labels of their own before tfk8s
labels them (rack, zone), as a real cluster's do, so that tests can check
tfk8s removes only what it added. A GPU server is one of a cluster with the
NVIDIA GPU Operator: `nvidia.com/gpu` capacity, the `nvidia.com/gpu` NoSchedule
taint, and GPU Feature Discovery's `nvidia.com/gpu.product` and
`nvidia.com/gpu.count` labels, which tfk8s must leave alone.

Nodes are created by server-side apply under their own field manager: a
client-side create followed by tfk8s's server-side label patch would move
ownership of the node's fields and drop the kwok annotation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Optional

from kubernetes import client
from kubernetes.dynamic import DynamicClient

from components.plan import labels as L
from components.spec.models import StackConfig

from .control_plane import KWOK_NODE_ANNOTATION, KWOK_NODE_VALUE
from .experiments import apply_manifest

NODE_FIELD_MANAGER = "tfk8s-local-nodes"
SERVER_CPU = "64"
SERVER_MEMORY = "256Gi"
SERVER_PODS = "250"
# Local disk for pods' scratch space: the chief asks for room for its checkpoints.
SERVER_EPHEMERAL_STORAGE = "1Ti"
RACK_LABEL = "topology.tfk8s.local/rack"
ZONE_LABEL = "topology.kubernetes.io/zone"
SERVERS_PER_RACK = 4
GPU_COUNT_LABEL = "nvidia.com/gpu.count"


@dataclass(frozen=True)
class ServerGpus:
    count: int = 0
    product: Optional[str] = None


def stack_servers(config: StackConfig) -> dict[str, ServerGpus]:
    """Server name -> its GPUs, for every pool of the stack that lists its nodes."""
    servers: dict[str, ServerGpus] = {}
    for pool in config.node_pools:
        for node in pool.nodes or ():
            servers[node] = ServerGpus(pool.gpu.per_node, pool.gpu.product) if pool.gpu else ServerGpus()
    return servers


def own_labels(name: str, index: int) -> dict[str, str]:
    """Labels the server had before tfk8s: its rack and zone."""
    return {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        RACK_LABEL: f"rack-{index // SERVERS_PER_RACK}",
        ZONE_LABEL: "local-a",
    }


def fake_node(name: str, index: int, gpus: ServerGpus) -> dict[str, Any]:
    capacity = {
        "cpu": SERVER_CPU,
        "memory": SERVER_MEMORY,
        "pods": SERVER_PODS,
        "ephemeral-storage": SERVER_EPHEMERAL_STORAGE,
    }
    labels = own_labels(name, index)
    spec: dict[str, Any] = {}
    if gpus.count:
        capacity[L.GPU_RESOURCE] = str(gpus.count)
        spec["taints"] = [{"key": L.GPU_TAINT, "value": "present", "effect": "NoSchedule"}]
        # A server has GPUs only from its pool's gpu settings, which always name the product.
        assert gpus.product is not None
        # What GPU Feature Discovery writes; on a real cluster it keeps them up to date.
        labels.update({L.GPU_PRODUCT: gpus.product, GPU_COUNT_LABEL: str(gpus.count)})
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {KWOK_NODE_ANNOTATION: KWOK_NODE_VALUE},
            "labels": labels,
        },
        "spec": spec,
        "status": {
            "capacity": capacity,
            "allocatable": dict(capacity),
            "nodeInfo": {"architecture": "amd64", "operatingSystem": "linux", "kubeletVersion": "fake"},
        },
    }


def fake_nodes(configs: Iterable[StackConfig]) -> list[dict[str, Any]]:
    """The nodes for every server of the given stacks, each once."""
    servers: dict[str, ServerGpus] = {}
    for config in configs:
        for name, gpus in stack_servers(config).items():
            servers[name] = max(gpus, servers.get(name, ServerGpus()), key=lambda g: g.count)
    return [fake_node(name, index, gpus) for index, (name, gpus) in enumerate(servers.items())]


def create_fake_nodes(
    api: client.ApiClient, configs: Iterable[StackConfig], skip: frozenset[str] | set[str] = frozenset()
) -> list[str]:
    """Create (or restore) the fake servers of the given stacks, but those in `skip`; their names."""
    dynamic = DynamicClient(api)
    nodes = [node for node in fake_nodes(configs) if node["metadata"]["name"] not in skip]
    for node in nodes:
        apply_manifest(dynamic, node, NODE_FIELD_MANAGER)
    return [node["metadata"]["name"] for node in nodes]


def label_real_nodes(api: client.ApiClient, names: Iterable[str]) -> None:
    """Give real nodes (registered by their kubelets) the rack and zone a real server has."""
    dynamic = DynamicClient(api)
    for index, name in enumerate(names):
        labels = {key: value for key, value in own_labels(name, index).items() if key in (RACK_LABEL, ZONE_LABEL)}
        apply_manifest(
            dynamic,
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}},
            NODE_FIELD_MANAGER,
        )
