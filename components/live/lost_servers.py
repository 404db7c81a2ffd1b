"""Servers that stopped answering, and the tasks that wait on them (pure: Nodes and pods as the API
server returns them).

A machine that loses its power or its network leaves its Node in the cluster, NotReady once its
kubelet's heartbeats lapse (the node controller's grace, 40 to 50 s), and its pods as they were:
Running in the API, or Terminating once their toleration of `node.kubernetes.io/unreachable` runs
out, for good, since the kubelet that would confirm their end is gone. tfk8s's Jobs replace a
task only once its pod has ended (`podReplacementPolicy: Failed`, so that two pods of one task
never run at once), so nothing replaces these. Kubernetes leaves the call to the operator, who
alone can know the machine is down and not merely cut off: the `node.kubernetes.io/out-of-service`
taint (GA since 1.28) tells it so, and the pod garbage collector then ends the node's pods.
`status` names the server, the tasks that wait on it and that command.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any, Literal, Optional

from ..spec.task_roles import parse_task_name

OUT_OF_SERVICE = "node.kubernetes.io/out-of-service"
OUT_OF_SERVICE_VALUE = "nodeshutdown"
# Where a task's pod stands towards a lost server: listed as running on it, terminating on it, or
# waiting to be placed (on it, under strict placement).
PodStand = Literal["running", "terminating", "pending"]


@dataclass(frozen=True)
class LostServer:
    """A server whose Node is not Ready, with the experiment's tasks that wait on it."""

    name: str
    since: Optional[str]  # when it stopped being Ready (its Ready condition's transition), UTC
    why: str  # the node controller's reason and message
    tasks: tuple[str, ...]  # the tasks whose pod is on it, running or terminating
    out_of_service: bool  # the operator has said the machine is down (the taint)

    def task_reason(self, pod: PodStand) -> str:
        """Why a task that waits on this server is stuck, for its row of the status table."""
        if pod == "pending":
            state = "out of service" if self.out_of_service else f"NotReady{self._since()}"
            return f"waits for {self.name}, {state}"
        where = f"its pod is {'terminating' if pod == 'terminating' else 'still listed'} on {self.name}"
        if self.out_of_service:
            return f"{where}, out of service: the pod is being ended, then replaced"
        return f"{where}, NotReady{self._since()}: nothing confirms the pod ended, so nothing replaces it"

    def _since(self) -> str:
        return f" since {self.since}" if self.since else ""

    def release_command(self) -> str:
        return f"kubectl taint node {shlex.quote(self.name)} {OUT_OF_SERVICE}={OUT_OF_SERVICE_VALUE}:NoExecute"

    def back_command(self) -> str:
        return f"kubectl taint node {shlex.quote(self.name)} {OUT_OF_SERVICE}-"

    def lines(self, strict_here: bool) -> list[str]:
        """What the user reads under the table: what happened, and what they may do."""
        tasks = ", ".join(self.tasks) or "no task of this experiment"
        head = f"server {self.name} NotReady{self._since()} ({self.why}): {tasks} wait on it."
        if self.out_of_service:
            lines = [
                f"{head} It is marked out of service: its pods are ended and replaced.",
                f"  once {self.name} is back and healthy: {self.back_command()}",
            ]
        else:
            lines = [
                head,
                "  nothing replaces a task until its pod is confirmed ended, which the server itself would do.",
                f"  if {self.name} is down for good (powered off, not coming back soon), release its pods: "
                f"{self.release_command()}",
                f"  and once it is back and healthy: {self.back_command()}",
            ]
        if strict_here:
            lines.append(
                f"  with strict placement the replacements wait for {self.name}; `strict: false` lets them run on"
                " the pool's other servers"
            )
        return lines

    def to_json(self) -> dict[str, Any]:
        return {
            "server": self.name,
            "since": self.since,
            "why": self.why,
            "tasks": list(self.tasks),
            "outOfService": self.out_of_service,
            "release": None if self.out_of_service else self.release_command(),
        }


def _ready_condition(node: Any) -> Any:
    return next((c for c in (node.status.conditions or ()) if c.type == "Ready"), None) if node.status else None


def _out_of_service(node: Any) -> bool:
    return any(taint.key == OUT_OF_SERVICE for taint in (node.spec.taints or ())) if node.spec else False


def lost_servers(nodes: Optional[dict[str, Any]], task_servers: dict[str, tuple[str, ...]]) -> list[LostServer]:
    """The servers among `task_servers`' (task -> the node its pod is on, or for a pod not placed yet
    the servers it may go to) whose Node is not Ready, each with the tasks that wait on it."""
    lost = []
    for name in sorted({server for servers in task_servers.values() for server in servers}):
        node = (nodes or {}).get(name)
        ready = _ready_condition(node) if node is not None else None
        if ready is None or ready.status == "True":
            continue
        since = ready.last_transition_time.strftime("%H:%M:%S UTC") if ready.last_transition_time else None
        why = ": ".join(filter(None, [ready.reason, ready.message])) or "not Ready"
        tasks = tuple(sorted((task for task, servers in task_servers.items() if name in servers), key=parse_task_name))
        lost.append(LostServer(name, since, why, tasks, _out_of_service(node)))
    return lost
