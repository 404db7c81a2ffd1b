"""Which workload runs which tasks (pure, no Pulumi).

Under the JobSet workload model (the default) the plan pins counts, not tasks
(components/plan/planner.py): each role is one group, `chief`, `ps` and
`worker`, one replicatedJob of the experiment's JobSet `tf` (components/plan/object_names.py), whose single
Indexed Job runs the role's tasks; the scheduler gives each server its share
(components/objects/pods.py). A task's index is its group's first index plus its
Job completion index, and its pod's host name is JobSet's
`tf-<group>-0-<completion index>` under the JobSet's subdomain `tf`. So the
JobSet keeps its size and its three pod sets (Kueue takes at most 8) at any
number of servers.

Under the StatefulSet model the plan pins each task to a server. Pinning one
workload per task would be the plainest model, but Kubernetes' controllers pay
for every workload and Service in a namespace on each change of each pod: the
StatefulSet controller lists the namespace's pods on every sync of every
StatefulSet, and the EndpointSlice controller matches every pod against every
Service. Per task, that work grows with the square of the experiment
(benchmarks/cluster_apply.py measured x24 the controller CPU for x10 the
tasks). So the tasks of one role on one server share a StatefulSet pinned to
that server, whose ordinals are the task indexes (`spec.ordinals.start`), and
each role has one headless Service that gives every pod its stable DNS name: host
name `<group>-<task index>`. A StatefulSet still never runs two pods of one task
at once.

Names: a pinned group is `<role>-<server>` (`worker-srv-04`), or
`<role>-s<position in the pool>` when a server's name cannot be part of a pod's
host name. Unpinned tasks form one group per role (`worker`); the chief's group
is `chief`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

from ..spec.models import StackConfig, Workload
from .object_names import JOBSET, ObjectNames
from .planner import Plan, Task, TaskPlacement, TaskType

# A StatefulSet's name ends up in its pods' `controller-revision-hash` label
# (`<name>-<10 characters>`, at most 63): longer names cannot create pods.
MAX_GROUP_NAME = 52
# A JobSet pod is named `tf-<group>-0-<completion index>-<5 characters>` (at most
# 63): room for completion indexes of six digits.
MAX_JOBSET_GROUP_NAME = 63 - len(f"{JOBSET}--0-999999-abcde")
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


@dataclass(frozen=True)
class TaskGroup:
    """Tasks of one role that one workload runs: consecutive indexes, one server (or none)."""

    name: str
    task_type: TaskType
    pool: str
    server: Optional[str]  # None: the scheduler places the pods within the pool
    first_index: int
    count: int

    @property
    def tasks(self) -> list[Task]:
        return [Task(self.task_type, i) for i in range(self.first_index, self.first_index + self.count)]


def max_group_name(workload: Workload, names: ObjectNames) -> int:
    """The longest group name that leaves its workload's and pods' names valid: the names of a
    shared namespace start with the stack's."""
    return (MAX_JOBSET_GROUP_NAME if workload == "jobset" else MAX_GROUP_NAME) - len(names.prefix)


def pod_hostname(group: TaskGroup, index: int, workload: Workload, names: ObjectNames) -> str:
    """Host name of the pod that runs task `index` of `group`."""
    if workload == "jobset":
        # `<jobset>-<replicatedJob>-<Job index>-<completion index>`; each group is one Job.
        return f"{names.jobset}-{group.name}-0-{index - group.first_index}"
    return f"{names.workload(group.name)}-{index}"  # a StatefulSet pod's name, its ordinal the task index


def pod_subdomain(group: TaskGroup, workload: Workload, names: ObjectNames) -> str:
    """The headless Service a task's DNS name lives under: the JobSet's, or the role's."""
    return names.jobset if workload == "jobset" else names.service(group.task_type)


def group_name(task_type: str, server: Optional[str], position: int, by_server_name: bool) -> str:
    """`by_server_name`: every server of the pool fits into a host name (see `names_fit`)."""
    if server is None:
        return task_type
    return f"{task_type}-{server}" if by_server_name else f"{task_type}-s{position}"


def names_fit(task_type: str, servers: Sequence[str], max_name: int = MAX_GROUP_NAME) -> bool:
    """One long or dotted server name switches the whole pool to positions, so names stay uniform."""
    return all(_fits_host_name(task_type, server, max_name) for server in servers)


def _fits_host_name(task_type: str, server: str, max_name: int) -> bool:
    name = f"{task_type}-{server}"
    return len(name) <= max_name and DNS_LABEL.match(name) is not None


def pool_servers(config: StackConfig) -> dict[str, tuple[str, ...]]:
    """The listed servers of each pool (none for a pool given by a selector)."""
    return {pool.name: pool.nodes or () for pool in config.node_pools}


def task_groups(
    plan: Plan, servers_of_pool: Mapping[str, Sequence[str]], max_name: int = MAX_GROUP_NAME
) -> list[TaskGroup]:
    """The plan's tasks cut into workloads, chief first, then PS, then workers, in index order.

    `servers_of_pool`: the listed servers of each pool (pools given by a selector have none).
    `max_name`: the longest group name the workload model allows (`max_group_name`).
    """
    runs: list[list[TaskPlacement]] = []
    for placement in plan.placements:
        previous = runs[-1][-1] if runs else None
        if (
            previous is not None
            and (previous.task.type, previous.server, previous.pool)
            == (placement.task.type, placement.server, placement.pool)
            and placement.task.index == previous.task.index + 1
        ):
            runs[-1].append(placement)
        else:
            runs.append([placement])

    positions = {pool: {server: i for i, server in enumerate(servers)} for pool, servers in servers_of_pool.items()}
    fit: dict[tuple[str, str], bool] = {}
    groups: list[TaskGroup] = []
    for run in runs:
        first = run[0]
        task_type, pool = first.task.type, first.pool
        if (task_type, pool) not in fit:
            fit[task_type, pool] = names_fit(task_type, servers_of_pool.get(pool) or (), max_name)
        # A task on no named server needs no position: its group is named by its task type alone.
        position = positions.get(pool, {}).get(first.server, 0) if first.server is not None else 0
        groups.append(
            TaskGroup(
                name=group_name(task_type, first.server, position, fit[task_type, pool]),
                task_type=task_type,
                pool=pool,
                server=first.server,
                first_index=first.task.index,
                count=len(run),
            )
        )
    names = [group.name for group in groups]
    if len(set(names)) != len(names):
        # The planner puts each role's tasks on a server in one block; a second block would need a second name.
        raise ValueError(f"tasks of one role on one server are not consecutive: {sorted(names)}")
    return groups
