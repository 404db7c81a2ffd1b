"""Each server against its share of the plan, as the cluster placed the tasks (pure).

Under the JobSet model the plan pins counts, not task indexes: each server holds
its share of each role, and the scheduler picks which indexes
(components/plan/planner.py). So `status` checks the counts per server, and shows
which task indexes each server holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Optional

from ..plan.experiment import Experiment
from ..plan.planner import compress_names
from ..spec.task_roles import PLACED_ROLES, parse_task_name, task_name
from .table import aligned


@dataclass(frozen=True)
class ServerStatus:
    server: str
    pool: str
    share: dict[str, str]  # role -> its planned count on the server ("2-3" where the scheduler picks)
    tasks: list[str]  # the tasks whose pods are on it now, in index order

    def count(self, role: str) -> int:
        return sum(1 for task in self.tasks if task.startswith(f"{role}-"))


def server_statuses(experiment: Experiment, placed: Iterable[tuple[str, Optional[str]]]) -> list[ServerStatus]:
    """Every server the plan gives tasks, with the tasks on it now (pinning counts only).

    `placed`: each live task (pending or running) with the node its pod is on, if any.
    """
    plan = experiment.plan
    if plan.pinning != "count":
        return []
    on_node: dict[str, list[tuple[str, int]]] = {}
    for task, node in placed:
        if node is not None:
            on_node.setdefault(node, []).append(parse_task_name(task))
    return [
        ServerStatus(
            share.server,
            share.pool,
            {role: plan.share_text(role, share.pool) for role in PLACED_ROLES},
            [task_name(role, index) for role, index in sorted(on_node.get(share.server, []))],
        )
        for share in plan.shares
    ]


def crowded_tasks(experiment: Experiment, servers: list[ServerStatus]) -> dict[str, str]:
    """Task -> why it is off the plan, for the tasks of a server that holds more of a role than its share."""
    crowded: dict[str, str] = {}
    for server in servers:
        for role in PLACED_ROLES:
            _, high = experiment.plan.share_bounds(role, server.pool)
            if server.count(role) > high:
                reason = f"{server.server} holds {server.count(role)} {role} tasks, its share is {server.share[role]}"
                crowded.update({task: reason for task in server.tasks if parse_task_name(task)[0] == role})
    return crowded


def servers_table(servers: list[ServerStatus]) -> list[str]:
    """Lines of the per-server table: each role's count against its share, and the tasks placed there."""
    if not servers:
        return []
    rows = [("SERVER", "PS", "WORKERS", "TASKS (as the scheduler placed them)")]
    for server in servers:
        rows.append(
            (
                server.server,
                f"{server.count('ps')}/{server.share['ps']}",
                f"{server.count('worker')}/{server.share['worker']}",
                compress_names(server.tasks),
            )
        )
    return aligned(rows)


def servers_json(servers: list[ServerStatus]) -> dict[str, dict]:
    return {
        server.server: {
            "share": server.share,
            "tasks": server.tasks,
            "ps": server.count("ps"),
            "worker": server.count("worker"),
        }
        for server in servers
    }
