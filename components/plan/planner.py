"""Placement planner: which task runs on which server.

Pure and deterministic: the same stack always gives the same plan, and the
plan feeds the Kubernetes objects, the `placement` stack output and the table
of `python -m components plan <stack>`.

Rules (seed scene 1 and scene 2):
- PS and workers each fill their pool's servers in contiguous blocks as equal
  as possible: sizes differ by at most one, the larger blocks first. With no
  more PS than servers that is PS i on server i (seed scene 1: one PS per
  server). Contiguous blocks let one workload run a role's tasks on a server
  (components/plan/workloads.py).
- The chief (coordinator) is never pinned; it stays in the PS pool.
- The evaluator, outside the training cluster, is never pinned either: the
  scheduler places it in its pool (components/spec/models.py `evaluator_pool`).
- `spread` pins nothing; the scheduler spreads pods over the pool.

How exactly the cluster follows the blocks is the plan's `pinning` (`none` for
`spread`):
- `task` (StatefulSet model): each task on its planned server, index by index.
- `count` (JobSet model): each server holds exactly its block's number of each
  role's tasks, and the scheduler picks which indexes (components/objects/pods.py
  spreads one Job per role over the pool); with uneven blocks (7 workers on 3
  servers: 3, 2, 2) it also picks which servers take one more. The plan then
  pins no task to a server: `shares` holds the counts per server.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import cached_property
from typing import Iterable, Literal, Optional, Sequence

from ..spec.models import StackConfig
from ..spec.placement_rules import placement_problems
from ..spec.roles import RoleName
from ..spec.task_counts import task_counts
from ..spec.task_roles import CHIEF, EVALUATOR, PLACED_ROLES, PS, ROLES, WORKER, TaskRole, parse_task_name, task_name

TaskType = RoleName
Pinning = Literal["none", "task", "count"]


@dataclass(frozen=True, order=True)
class Task:
    type: TaskType
    index: int

    @property
    def name(self) -> str:
        """Task name, also its Service's name: ps-0, worker-17, chief-0."""
        return task_name(self.type, self.index)


@dataclass(frozen=True)
class TaskPlacement:
    task: Task
    pool: str
    server: Optional[str]  # None: not pinned, the scheduler decides within the pool


@dataclass(frozen=True)
class ServerShare:
    """How many PS and workers the plan gives one server."""

    server: str
    pool: str
    ps: int
    workers: int

    def count(self, task_type: str) -> int:
        return {"ps": self.ps, "worker": self.workers}.get(task_type, 0)


@dataclass(frozen=True)
class Plan:
    strategy: str
    strict: bool
    placements: tuple[TaskPlacement, ...]
    pinning: Pinning = "task"
    shares: tuple[ServerShare, ...] = ()  # every server of a pinned placement, in pool order

    def tasks(self, task_type: Optional[TaskType] = None) -> list[Task]:
        return [p.task for p in self.placements if task_type in (None, p.task.type)]

    def count(self, task_type: TaskType) -> int:
        return sum(1 for p in self.placements if p.task.type == task_type)

    def deciding_role(self) -> TaskRole:
        """The role whose end is the experiment's: the first in the table that may decide it and that
        the plan runs (the chief; the workers where there is none, TF1 between-graph)."""
        return next(role for role in ROLES if role.may_decide_outcome and self.count(role.name))

    def by_server(self) -> dict[str, list[str]]:
        """Tasks pinned to a server, per server in pool order: the `placement` output."""
        table: dict[str, list[str]] = {}
        for placement in self.placements:
            if placement.server is not None:
                table.setdefault(placement.server, []).append(placement.task.name)
        return table

    def unpinned(self) -> dict[str, list[str]]:
        """Tasks the scheduler places, per pool (within the servers' shares when pinning counts)."""
        table: dict[str, list[str]] = {}
        for placement in self.placements:
            if placement.server is None:
                table.setdefault(placement.pool, []).append(placement.task.name)
        return table

    def per_server(self) -> dict[str, dict[str, int]]:
        """PS and workers per server, servers in pool order: the `perServer` output."""
        return {share.server: {"ps": share.ps, "worker": share.workers} for share in self.shares}

    def summary(self) -> dict[str, object]:
        """Who runs where, as `plan --json` prints it and the stack outputs carry it."""
        return {
            "pinning": self.pinning,
            "perServer": self.per_server(),
            "placement": self.by_server(),
            "unpinned": self.unpinned(),
        }

    def share_bounds(self, task_type: str, pool: str) -> tuple[int, int]:
        """The fewest and most tasks of a role one server of `pool` holds (equal unless blocks are uneven)."""
        return self._bounds.get((task_type, pool), (0, 0))

    @cached_property
    def _bounds(self) -> dict[tuple[str, str], tuple[int, int]]:
        bounds: dict[tuple[str, str], tuple[int, int]] = {}
        for share in self.shares:
            for role in PLACED_ROLES:
                count = share.count(role)
                low, high = bounds.get((role, share.pool), (count, count))
                bounds[role, share.pool] = (min(low, count), max(high, count))
        return bounds

    def share_text(self, task_type: str, pool: str) -> str:
        """A server's share of a role as a count, or `2-3` where the scheduler picks who holds one more."""
        low, high = self.share_bounds(task_type, pool)
        return str(low) if low == high else f"{low}-{high}"

    def shares_even(self) -> bool:
        """Every server of each pool holds as many PS, and as many workers, as the others."""
        return all(low == high for low, high in self._bounds.values())

    def servers_of(self, pool: str) -> list[str]:
        return [share.server for share in self.shares if share.pool == pool]


@dataclass(frozen=True)
class PoolServers:
    """What the planner needs of a node pool: its name and, if known, its servers."""

    name: str
    servers: Optional[tuple[str, ...]]  # None for pools given by a label selector


def balanced_blocks(count: int, bins: int) -> list[int]:
    """Sizes of `count` items cut into `bins` contiguous blocks, larger first."""
    if bins < 1:
        raise ValueError("need at least one bin")
    base, extra = divmod(count, bins)
    return [base + 1 if i < extra else base for i in range(bins)]


def block_assignment(count: int, servers: Sequence[str]) -> list[str]:
    """Server of each of `count` items, in balanced contiguous blocks."""
    assignment: list[str] = []
    for server, size in zip(servers, balanced_blocks(count, len(servers))):
        assignment.extend([server] * size)
    return assignment


def plan_placement(
    strategy: str,
    ps_pool: PoolServers,
    worker_pool: PoolServers,
    ps_count: int,
    worker_count: int,
    strict: bool = True,
    pinning: Pinning = "task",
    chief: bool = True,
    evaluator_pool: Optional[str] = None,
) -> Plan:
    """Place one chief (unless there is none: TF1 between-graph), `ps_count` PS and `worker_count` workers,
    and an evaluator in `evaluator_pool` when given.

    The stack's cross checks have already reported any placement rule the pools
    break (components/spec/placement_rules.py); the planner asks the same rules
    before it relies on them.
    """
    if ps_count < 0 or worker_count < 1:
        raise ValueError("a cluster needs at least one worker, and no fewer than 0 PS")
    problems = placement_problems(strategy, ps_pool.name, ps_pool.servers, worker_pool.name, worker_pool.servers)
    if problems:
        raise ValueError("; ".join(str(problem) for problem in problems))
    if strategy == "spread":
        ps_servers: Sequence[Optional[str]] = [None] * ps_count
        worker_servers: Sequence[Optional[str]] = [None] * worker_count
    else:
        assert ps_pool.servers is not None and worker_pool.servers is not None  # pinned: the rules hold
        ps_servers = block_assignment(ps_count, ps_pool.servers)
        worker_servers = block_assignment(worker_count, worker_pool.servers)

    shares = _shares(ps_pool, worker_pool, ps_servers, worker_servers)
    if pinning == "count":
        ps_servers, worker_servers = [None] * ps_count, [None] * worker_count
    # The chief, never pinned, stays in the PS pool (ClusterSpec.chief_pool).
    placements = [TaskPlacement(Task(CHIEF.name, 0), ps_pool.name, None)] if chief else []
    placements += [TaskPlacement(Task(PS.name, i), ps_pool.name, server) for i, server in enumerate(ps_servers)]
    placements += [
        TaskPlacement(Task(WORKER.name, i), worker_pool.name, server) for i, server in enumerate(worker_servers)
    ]
    if evaluator_pool is not None:
        placements.append(TaskPlacement(Task(EVALUATOR.name, 0), evaluator_pool, None))
    return Plan(strategy, strict, tuple(placements), pinning if shares else "none", shares)


def _shares(
    ps_pool: PoolServers,
    worker_pool: PoolServers,
    ps_servers: Sequence[Optional[str]],
    worker_servers: Sequence[Optional[str]],
) -> tuple[ServerShare, ...]:
    """Each server of the pools with its counts of PS and workers; none when nothing is pinned."""
    if ps_pool.servers is None or worker_pool.servers is None or None in ps_servers:
        return ()
    pools = [ps_pool] if ps_pool.name == worker_pool.name else [ps_pool, worker_pool]
    ps_on, workers_on = Counter(ps_servers), Counter(worker_servers)
    return tuple(
        ServerShare(server, pool.name, ps_on[server], workers_on[server])
        for pool in pools
        for server in pool.servers or ()
    )


def compress_names(names: Iterable[str]) -> str:
    """'worker-0, worker-1, worker-2, ps-3' -> 'worker-0..2, ps-3' for tables."""
    parts: list[str] = []
    run_type, run_start, run_end = None, None, None

    def flush() -> None:
        if run_type is None:
            return
        if run_start == run_end:
            parts.append(task_name(run_type, run_start))
        else:
            parts.append(task_name(run_type, f"{run_start}..{run_end}"))

    for name in names:
        task_type, index = parse_task_name(name)
        if task_type == run_type and run_end is not None and index == run_end + 1:
            run_end = index
            continue
        flush()
        run_type, run_start, run_end = task_type, index, index
    flush()
    return ", ".join(parts)


def plan_stack(config: StackConfig) -> Plan:
    """The plan of a validated stack."""
    cluster = config.cluster
    counts = task_counts(config)
    pools = {pool.name: PoolServers(pool.name, pool.nodes) for pool in config.node_pools}
    return plan_placement(
        cluster.placement,
        pools[cluster.ps_pool],
        pools[cluster.workers.pool],
        counts[PS.name],
        counts[WORKER.name],
        strict=cluster.strict,
        # A JobSet runs one Job per role, whose pods the scheduler spreads by count;
        # a StatefulSet per role per server pins each task.
        pinning="count" if cluster.workload == "jobset" else "task",
        # A TF1 between-graph program has no chief task: its worker 0 is the chief.
        chief=counts[CHIEF.name] > 0,
        evaluator_pool=cluster.evaluator_pool if counts[EVALUATOR.name] else None,
    )
