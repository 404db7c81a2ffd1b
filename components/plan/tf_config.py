"""TF_CONFIG: the cluster every task joins, and which task it is.

Every task gets the identical `cluster` (chief, worker, ps lists of pod DNS
names, ordered by index) plus its own `task`. A task's address is its pod's
host name under a headless Service (components/plan/workloads.py): stable across
restarts and new pod IPs.

The cluster is written once, in the ConfigMap every task's environment comes
from (variable TFK8S_CLUSTER), never into each pod: there, the cluster list
would make an experiment's objects grow with the square of its size (a
2,000-worker experiment's pods would be 100 KB each, 220 MB that the API
server, etcd, the controllers and the scheduler all move;
benchmarks/cluster_apply.py measured the difference).

- StatefulSet pods: TF_CONFIG refers to it,
  `{"cluster":$(TFK8S_CLUSTER),"task":{"type":"worker","index":$(TFK8S_TASK_INDEX)}}`,
  which the kubelet expands when it starts the container; the index is the
  pod's ordinal (its `apps.kubernetes.io/pod-index` label, through the downward
  API), so one pod template serves all tasks of a group.
- JobSet pods: a task's index is its group's first index plus its Job
  completion index, a sum the kubelet cannot expand. The pod carries its role
  (TFK8S_TASK_TYPE) and its group's first index (TFK8S_FIRST_INDEX); the Job
  controller adds JOB_COMPLETION_INDEX; the trainer composes TF_CONFIG from
  them (trainer/cluster.py) and exports it to TensorFlow.

Linux passes at most 128 KiB in one environment variable. A JobSet cluster past
that (some 2,600 tasks) reaches each task as a file instead: its own ConfigMap,
mounted, named by TFK8S_CLUSTER_FILE (a ConfigMap holds 1 MiB, some 20,000 tasks).
"""

from __future__ import annotations

import json
from typing import Mapping, Sequence

from ..spec.models import Workload
from ..spec.task_roles import TRAINING_CLUSTER, role_of
from ..spec.trainer_contract import (  # the variables the trainer reads
    CLUSTER_ENV,
    TASK_INDEX_ENV,
    TF_PORT,  # noqa: F401 (where components/ looks it up)
)
from .object_names import ObjectNames
from .workloads import TaskGroup, pod_hostname, pod_subdomain


def task_address(group: TaskGroup, index: int, namespace: str, workload: Workload, names: ObjectNames) -> str:
    """Stable DNS name of a task's pod under its headless Service."""
    host, subdomain = pod_hostname(group, index, workload, names), pod_subdomain(group, workload, names)
    return f"{host}.{subdomain}.{namespace}.svc:{TF_PORT}"


def cluster_spec(
    groups: Sequence[TaskGroup], namespace: str, workload: Workload, names: ObjectNames
) -> dict[str, list[str]]:
    spec: dict[str, list[str]] = {}
    for task_type in TRAINING_CLUSTER:
        addresses = sorted(
            (task.index, task_address(group, task.index, namespace, workload, names))
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

    def largest_env_string(self, workload: Workload, program: bool = False) -> tuple[str, int]:
        """The largest environment string a task is started with: its name and bytes.

        A StatefulSet task, and every task of a team's program, gets the expanded TF_CONFIG; a
        JobSet task of the trainer the cluster alone (the trainer composes TF_CONFIG in its own
        process, past exec's limit). The cluster is written out once, here as in the ConfigMap.
        """
        if workload == "jobset" and not program:
            return CLUSTER_ENV, len(f"{CLUSTER_ENV}={self._cluster_json}".encode()) + 1
        largest_task = json.dumps(
            {"type": "worker", "index": max(len(a) for a in self._cluster.values())}, separators=(",", ":")
        )
        text = self._tf_config(self._cluster_json, largest_task, program)
        return "TF_CONFIG", len(f"TF_CONFIG={text}".encode()) + 1

    def render(self, task_type: str, index_variable: str = TASK_INDEX_ENV, program: bool = False) -> str:
        """A pod's TF_CONFIG, for the kubelet to expand: the shared cluster, the role, the index
        variable. A program's also says `environment: cloud`, as TFJob's does (TensorFlow's
        estimators read it). The evaluator's cluster is the training cluster, without itself."""
        if role_of(task_type).in_training_cluster and not self._cluster.get(task_type):
            raise ValueError(f"the cluster has no {task_type} tasks")
        task = f'{{"type":{json.dumps(task_type)},"index":$({index_variable})}}'
        return self._tf_config(f"$({CLUSTER_ENV})", task, program)

    @staticmethod
    def _tf_config(cluster: str, task: str, program: bool) -> str:
        environment = ',"environment":"cloud"' if program else ""
        return f'{{"cluster":{cluster},"task":{task}{environment}}}'
