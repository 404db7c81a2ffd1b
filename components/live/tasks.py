"""Which pod runs which task, and how each task stands against the plan; the status as a table or
as JSON (pure: pods, nodes and events as the API server returns them, no API calls)."""

from __future__ import annotations

import dataclasses
import json
import shlex
from dataclasses import dataclass, field
from typing import Any, Optional

from ..plan import labels as L
from ..plan.experiment import Experiment
from ..plan.planner import TaskPlacement
from ..spec.task_roles import ROLE_OF, task_name
from .lost_servers import LostServer
from .phase import Phase
from .shares import ServerStatus, crowded_tasks, server_statuses, servers_json, servers_table
from .table import aligned

HEALTHY_PHASES = ("Running", "Succeeded")


@dataclass(frozen=True)
class TaskStatus:
    task: str
    pool: str
    planned: Optional[str]  # None: the scheduler picks within the pool
    node: Optional[str]
    phase: str  # the pod's phase, or "Missing" when there is no pod
    as_planned: bool
    reason: str = ""


def pod_task(pod: Any, first_index: dict[str, int]) -> Optional[str]:
    """A JobSet pod runs its group's first index plus its completion index; a StatefulSet pod's
    ordinal is its task index; the StatefulSet model's chief Job runs task 0 only."""
    labels = pod.metadata.labels or {}
    role = labels.get(L.COMPONENT)
    if role is None:
        return None
    if L.COMPLETION_INDEX in labels and labels.get(L.WORKLOAD) in first_index:
        return task_name(role, first_index[labels[L.WORKLOAD]] + int(labels[L.COMPLETION_INDEX]))
    # A role of one task runs task 0 (the StatefulSet model's chief Job has no pod index).
    index = labels.get(L.POD_INDEX, "0" if role in ROLE_OF and ROLE_OF[role].one_task else None)
    return task_name(role, index) if index is not None else None


def newest_pods_by_task(pods: list[Any], first_index: dict[str, int]) -> dict[str, Any]:
    """A task's current pod: the newest one not being deleted (a Job may keep failed ones)."""
    current: dict[str, Any] = {}
    for pod in sorted(pods, key=lambda p: p.metadata.creation_timestamp):
        task = pod_task(pod, first_index)
        if task is not None and pod.metadata.deletion_timestamp is None:
            current[task] = pod
    return current


def _scheduling_message(pod: Any) -> str:
    for condition in pod.status.conditions or ():
        if condition.type == "PodScheduled" and condition.status == "False":
            return condition.message or condition.reason or "not scheduled"
    return ""


def task_status(
    placement: TaskPlacement,
    pod: Any,
    nodes: Optional[dict[str, Any]],
    strict: bool,
    controller_event: str,
    finished: bool = False,
    pool_servers: frozenset[str] = frozenset(),
) -> TaskStatus:
    """`finished`: the task's Job completed, so a missing pod is expected (it may have been cleaned up).
    `pool_servers`: the servers the task's pool names, where the scheduler places it among them.
    `nodes`: None where the Nodes could not be read (then a missing server is not named)."""
    task, server = placement.task, placement.server
    if pod is None and finished:
        return TaskStatus(task.name, placement.pool, server, None, "Succeeded", True, "finished; its pod is gone")
    node = pod.spec.node_name if pod is not None else None
    phase = pod.status.phase if pod is not None else "Missing"
    on_plan = node is not None and (server is None or node == server)
    reasons = []
    if server is None and node is not None and pool_servers and node not in pool_servers:
        on_plan = False
        reasons.append(f"on {node}, outside pool {placement.pool}")
    if server is not None and nodes is not None and server not in nodes:
        reasons.append(f"server {server} is not in the cluster")
    if node is not None and server is not None and node != server:
        reasons.append(f"moved from {server} to {node}" if not strict else f"on {node}, not on {server}")
    if pod is None:
        reasons.append(controller_event or "no pod yet")
    elif node is None:
        reasons.append(_scheduling_message(pod) or "not scheduled yet")
    return TaskStatus(
        task=task.name,
        pool=placement.pool,
        planned=server,
        node=node,
        phase=phase,
        as_planned=on_plan and phase in HEALTHY_PHASES,
        reason="; ".join(reasons),
    )


def last_failed_create(events: list[Any]) -> dict[str, str]:
    """Workload name -> its controller's latest FailedCreate message (e.g. a Pod Security refusal)."""
    latest: dict[str, str] = {}
    for event in sorted(events, key=lambda e: e.last_timestamp or e.event_time or e.metadata.creation_timestamp):
        if event.reason == "FailedCreate" and event.involved_object is not None:
            latest[event.involved_object.name] = event.message
    return latest


@dataclass(frozen=True)
class ExperimentStatus:
    phase: Phase
    tasks: list[TaskStatus]
    summary: Optional[dict[str, Any]] = None  # the chief's, once it succeeded
    pods: dict[str, Any] = field(default_factory=dict)  # task -> its current pod
    servers: list[ServerStatus] = field(default_factory=list)  # each server against its share (pinning counts)
    # What the user may not read and status went on without, one line each, with the permission.
    not_read: list[str] = field(default_factory=list)
    lost_servers: list[LostServer] = field(default_factory=list)  # NotReady servers the tasks wait on


def against_shares(experiment: Experiment, tasks: list[TaskStatus]) -> tuple[list[TaskStatus], list[ServerStatus]]:
    """Each server's tasks against its share: the tasks of a server over its share are off the plan."""
    live = [(t.task, t.node) for t in tasks if t.phase in ("Pending", "Running")]
    servers = server_statuses(experiment, live)
    crowded = crowded_tasks(experiment, servers)
    tasks = [
        dataclasses.replace(t, as_planned=False, reason="; ".join(filter(None, [t.reason, crowded[t.task]])))
        if t.task in crowded
        else t
        for t in tasks
    ]
    return tasks, servers


def status_table(experiment: Experiment, status: ExperimentStatus, stack_given: Optional[str] = None) -> str:
    statuses = status.tasks
    off_plan = [s for s in statuses if not s.as_planned]
    pending = sum(1 for s in statuses if s.phase == "Pending")
    lines = [
        f"stack {experiment.stack} · namespace {experiment.namespace} · "
        f"{len(statuses) - len(off_plan)}/{len(statuses)} tasks running as planned · {pending} pending",
        f"phase: {status.phase}",
        "",
    ]
    rows = [("", "TASK", "PLANNED", "NODE", "PHASE", "WHY")]
    for task in statuses:
        rows.append(
            (
                "!" if not task.as_planned else "",
                task.task,
                task.planned or f"({task.pool})",
                task.node or "-",
                task.phase,
                task.reason,
            )
        )
    lines += aligned(rows)
    if status.phase.name in ("Succeeded", "Failed"):
        lines += ["", logs_after_the_run(experiment, stack_given)]
    if status.servers:
        lines += ["", *servers_table(status.servers)]
    for server in status.lost_servers:
        lines += ["", *server.lines(experiment.plan.strict)]
    if status.not_read:
        lines += ["", *status.not_read]
    return "\n".join(lines)


def logs_after_the_run(experiment: Experiment, stack_given: Optional[str] = None) -> str:
    """Where a finished experiment's logs are: JobSet deleted the tasks it stopped, their logs with them.
    `stack_given`: the stack as the user gave it, a name or a path (the command then runs as printed)."""
    command = f"python -m components logs {shlex.quote(stack_given or experiment.stack)} TASK"
    if experiment.config.logs is not None:
        return f"logs: every task's, from its pod or the log archive: {command}"
    return (
        f"logs: the finished tasks' pods keep theirs ({command}); the PS and workers the experiment's end "
        "stopped went with their pods (tfk8s:logs keeps them)"
    )


def status_json(experiment: Experiment, status: ExperimentStatus) -> str:
    statuses = status.tasks
    return json.dumps(
        {
            "phase": status.phase.name,
            "phaseDetail": status.phase.detail,
            "summary": status.summary,
            "stack": experiment.stack,
            "namespace": experiment.namespace,
            "asPlanned": all(s.as_planned for s in statuses),
            "tasks": [
                {
                    "task": s.task,
                    "pool": s.pool,
                    "planned": s.planned,
                    "node": s.node,
                    "phase": s.phase,
                    "asPlanned": s.as_planned,
                    "reason": s.reason,
                }
                for s in statuses
            ],
            **({"servers": servers_json(status.servers)} if status.servers else {}),
            **({"lostServers": [server.to_json() for server in status.lost_servers]} if status.lost_servers else {}),
            **({"notRead": status.not_read} if status.not_read else {}),
        },
        indent=2,
    )
