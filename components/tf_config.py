"""TF_CONFIG: the cluster every task joins, and which task it is.

Every task gets the identical `cluster` (chief, worker, ps lists of Service DNS
names, ordered by index) plus its own `task`. The cluster is written once, in
the ConfigMap every task's environment comes from (variable TFK8S_CLUSTER),
and each task's TF_CONFIG refers to it: `{"cluster":$(TFK8S_CLUSTER),...}`,
which the kubelet expands when it starts the container. Written into every
pod instead, the list would make an experiment's objects grow with the square
of its size: a 2,000-worker experiment's pods would be 100 KB each, 220 MB
that the API server, etcd, the controllers and the scheduler all move
(benchmarks/cluster_apply.py measured the difference).
"""

from __future__ import annotations

import json
from typing import Mapping, Sequence

from .planner import TASK_TYPES, Task

TF_PORT = 2222
# The environment variable (from the shared ConfigMap) that holds the cluster JSON.
CLUSTER_ENV = "TFK8S_CLUSTER"


def task_address(task: Task, namespace: str) -> str:
    """Stable DNS name of a task's headless Service, reachable after a restart."""
    return f"{task.name}.{namespace}.svc:{TF_PORT}"


def cluster_spec(tasks: Sequence[Task], namespace: str) -> dict[str, list[str]]:
    spec: dict[str, list[str]] = {}
    for task_type in TASK_TYPES:
        of_type = sorted(t.index for t in tasks if t.type == task_type)
        if of_type != list(range(len(of_type))):
            raise ValueError(f"{task_type} indexes must be 0..n-1, got {of_type}")
        if of_type:
            spec[task_type] = [task_address(Task(task_type, i), namespace) for i in of_type]
    return spec


class TFConfigRenderer:
    """Each task's TF_CONFIG, referring to the one shared cluster encoding."""

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

    def render(self, task: Task) -> str:
        if task.index >= len(self._cluster.get(task.type, ())):
            raise ValueError(f"task {task.name} is not in the cluster")
        task_json = json.dumps({"type": task.type, "index": task.index}, separators=(",", ":"))
        return f'{{"cluster":$({CLUSTER_ENV}),"task":{task_json}}}'
