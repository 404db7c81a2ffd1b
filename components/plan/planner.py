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
from typing import Iterable, Literal, Mapping, Optional, Sequence

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
    and an evaluator in `evaluator_pool` when given; the chief in the PS' pool.

    The stack's cross checks have already reported any placement rule the pools
    break (components/spec/placement_rules.py); the planner asks the same rules
    before it relies on them.
    """
    _check_pools(strategy, ps_pool, worker_pool, ps_count, worker_count)
    pools = {CHIEF.name: ps_pool, PS.name: ps_pool, WORKER.name: worker_pool}
    counts = {CHIEF.name: int(chief), PS.name: ps_count, WORKER.name: worker_count, EVALUATOR.name: 0}
    if evaluator_pool is not None:
        pools[EVALUATOR.name], counts[EVALUATOR.name] = PoolServers(evaluator_pool, None), 1
    return place_roles(strategy, pools, counts, strict, pinning)


def _check_pools(
    strategy: str, ps_pool: PoolServers, worker_pool: PoolServers, ps_count: int, worker_count: int
) -> None:
    if ps_count < 0 or worker_count < 1:
        raise ValueError("a cluster needs at least one worker, and no fewer than 0 PS")
    problems = placement_problems(strategy, ps_pool.name, ps_pool.servers, worker_pool.name, worker_pool.servers)
    if problems:
        raise ValueError("; ".join(str(problem) for problem in problems))


def place_roles(
    strategy: str,
    pools: Mapping[RoleName, PoolServers],
    counts: Mapping[RoleName, int],
    strict: bool = True,
    pinning: Pinning = "task",
) -> Plan:
    """Each role's tasks in its pool, roles in the table's order: a role the plan places
    (`placed_by_plan`, the PS and the workers) in balanced contiguous blocks over its pool's servers,
    unless the placement is `spread`; the others (the chief, the evaluator) are never pinned, the
    scheduler puts them within their pool. With `pinning: count` every task is left to the
    scheduler, within the servers' shares."""
    servers_of: dict[RoleName, Sequence[Optional[str]]] = {}
    for role in ROLES:
        count = counts.get(role.name, 0)
        servers = pools[role.name].servers if count else None
        if role.placed_by_plan and strategy != "spread" and servers is not None:
            servers_of[role.name] = block_assignment(count, servers)
        else:
            servers_of[role.name] = [None] * count
    shares = _shares(pools, servers_of)
    placements = tuple(
        TaskPlacement(Task(role.name, index), pools[role.name].name, None if pinning == "count" else server)
        for role in ROLES
        for index, server in enumerate(servers_of[role.name])
    )
    return Plan(strategy, strict, placements, pinning if shares else "none", shares)


def _shares(
    pools: Mapping[RoleName, PoolServers], servers_of: Mapping[RoleName, Sequence[Optional[str]]]
) -> tuple[ServerShare, ...]:
    """Each server of the placed roles' pools, in pool order, with its count of each placed role's
    tasks; none when the plan pins none of them."""
    placed = [pools[role] for role in PLACED_ROLES if role in pools]
    if any(pool.servers is None for pool in placed) or any(None in servers_of[role] for role in PLACED_ROLES):
        return ()
    on_server = {role: Counter(servers_of[role]) for role in PLACED_ROLES}
    in_order = list({pool.name: pool for pool in placed}.values())
    # A share is the PS and workers a server holds, the shape `perServer` and `plan` show (public): a
    # placed role besides them would need a column of its own there first.
    return tuple(
        ServerShare(server, pool.name, on_server[PS.name][server], on_server[WORKER.name][server])
        for pool in in_order
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
    """The plan of a validated stack: each role in the pool its settings name (the chief in the PS')."""
    cluster = config.cluster
    counts = task_counts(config)
    servers = {pool.name: PoolServers(pool.name, pool.nodes) for pool in config.node_pools}
    pools = {
        role.name: servers.get(cluster.pool_of(role.name)) or PoolServers(cluster.pool_of(role.name), None)
        for role in ROLES
        if counts[role.name]
    }
    _check_pools(
        cluster.placement, servers[cluster.ps_pool], servers[cluster.workers.pool], counts[PS.name], counts[WORKER.name]
    )
    # A JobSet runs one Job per role, whose pods the scheduler spreads by count; a StatefulSet per
    # role per server pins each task.
    pinning: Pinning = "count" if cluster.workload == "jobset" else "task"
    return place_roles(cluster.placement, pools, counts, cluster.strict, pinning)
