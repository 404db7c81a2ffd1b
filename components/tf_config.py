"""TF_CONFIG: the cluster every task joins, and which task it is.

Every task gets the identical `cluster` (chief, worker, ps lists of pod DNS
names, ordered by index) plus its own `task`. A task's address is its pod's
host name under its role's headless Service: `<group>-<index>.<role>.<ns>.svc`
(components/workloads.py), stable across restarts and new pod IPs.

The cluster is written once, in the ConfigMap every task's environment comes
from (variable TFK8S_CLUSTER), and TF_CONFIG refers to it:
`{"cluster":$(TFK8S_CLUSTER),"task":{"type":"worker","index":$(TFK8S_TASK_INDEX)}}`,
which the kubelet expands when it starts the container. The index is the
pod's StatefulSet ordinal (its `apps.kubernetes.io/pod-index` label, through
the downward API), so one pod template serves all tasks of a group. Written
into every pod instead, the cluster list would make an experiment's objects
grow with the square of its size: a 2,000-worker experiment's pods would be
100 KB each, 220 MB that the API server, etcd, the controllers and the
scheduler all move (benchmarks/cluster_apply.py measured the difference).
"""

from __future__ import annotations

import json
from typing import Mapping, Sequence

from .planner import TASK_TYPES
from .workloads import TaskGroup
from trainer.cluster import TASK_INDEX_ENV  # the variable the trainer checks, set per pod

TF_PORT = 2222
# The environment variable (from the shared ConfigMap) that holds the cluster JSON.
CLUSTER_ENV = "TFK8S_CLUSTER"
# Linux's MAX_ARG_STRLEN: the most bytes of one `NAME=value` environment string, its NUL included.
MAX_ENV_STRING = 131_072


def task_address(group: TaskGroup, index: int, namespace: str) -> str:
    """Stable DNS name of a task's pod under its role's headless Service."""
    return f"{group.hostname(index)}.{group.task_type}.{namespace}.svc:{TF_PORT}"


def cluster_spec(groups: Sequence[TaskGroup], namespace: str) -> dict[str, list[str]]:
    spec: dict[str, list[str]] = {}
    for task_type in TASK_TYPES:
        addresses = sorted(
            (task.index, task_address(group, task.index, namespace))
            for group in groups
            if group.task_type == task_type
            for task in group.tasks
        )
        indexes = [index for index, _ in addresses]
        if indexes != list(range(len(indexes))):
            raise ValueError(f"{task_type} indexes must be 0..n-1, got {indexes}")
        if addresses:
            spec[task_type] = [address for _, address in addresses]
    return spec


def tf_config_bytes(cluster: Mapping[str, Sequence[str]]) -> int:
    """Bytes of the largest expanded `TF_CONFIG=...` environment string of a task of `cluster`."""
    largest_task = {"type": "worker", "index": max(len(a) for a in cluster.values())}
    text = json.dumps({"cluster": cluster, "task": largest_task}, separators=(",", ":"))
    return len(f"TF_CONFIG={text}".encode()) + 1


class TFConfigRenderer:
    """TF_CONFIG of a role's pods, referring to the one shared cluster encoding and the pod's index."""

    def __init__(self, cluster: Mapping[str, Sequence[str]]) -> None:
        self._cluster = cluster
        self._cluster_json = json.dumps(cluster, separators=(",", ":"))

    @property
    def cluster(self) -> Mapping[str, Sequence[str]]:
        return self._cluster

    @property
    def cluster_json(self) -> str:
        """The value of CLUSTER_ENV in the shared ConfigMap."""
        return self._cluster_json

    def render(self, task_type: str) -> str:
        if not self._cluster.get(task_type):
            raise ValueError(f"the cluster has no {task_type} tasks")
        task_type_json = json.dumps(task_type)
        return f'{{"cluster":$({CLUSTER_ENV}),"task":{{"type":{task_type_json},"index":$({TASK_INDEX_ENV})}}}}'
