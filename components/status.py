"""`python -m components status <stack>`: the plan against what the cluster did.

For every task: the server the plan gave it, the node its pod is on, the pod's
phase, and for a pod that is not where the plan put it or not running, why
(the scheduler's own message, a missing server, or the controller's event).
"""

from __future__ import annotations

import json
import logging
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from . import labels as L
from .experiment import Experiment
from .planner import TaskPlacement

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


def _pod_task(pod: Any) -> Optional[str]:
    """A StatefulSet pod's ordinal is its task index; the chief's Job runs task 0 only."""
    labels = pod.metadata.labels or {}
    role = labels.get(L.COMPONENT)
    index = labels.get(L.POD_INDEX, "0" if role == "chief" else None)
    if role is None or index is None:
        return None
    return f"{role}-{index}"


def _newest_pods_by_task(pods: list[Any]) -> dict[str, Any]:
    """A task's current pod: the newest one not being deleted (a Job may keep failed ones)."""
    current: dict[str, Any] = {}
    for pod in sorted(pods, key=lambda p: p.metadata.creation_timestamp):
        task = _pod_task(pod)
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
    nodes: dict[str, Any],
    strict: bool,
    controller_event: str,
    finished: bool = False,
) -> TaskStatus:
    """`finished`: the task's Job completed, so a missing pod is expected (it may have been cleaned up)."""
    task, server = placement.task, placement.server
    if pod is None and finished:
        return TaskStatus(task.name, placement.pool, server, None, "Succeeded", True, "finished; its pod is gone")
    node = pod.spec.node_name if pod is not None else None
    phase = pod.status.phase if pod is not None else "Missing"
    on_plan = node is not None and (server is None or node == server)
    reasons = []
    if server is not None and server not in nodes:
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


def _last_failed_create(events: list[Any]) -> dict[str, str]:
    """Workload name -> its controller's latest FailedCreate message (e.g. a Pod Security refusal)."""
    latest: dict[str, str] = {}
    for event in sorted(events, key=lambda e: e.last_timestamp or e.event_time or e.metadata.creation_timestamp):
        if event.reason == "FailedCreate" and event.involved_object is not None:
            latest[event.involved_object.name] = event.message
    return latest


def read_status(api: Any, experiment: Experiment) -> list[TaskStatus]:
    from kubernetes import client

    core = client.CoreV1Api(api)
    selector = L.selector_text(experiment.stack)
    pods = _newest_pods_by_task(core.list_namespaced_pod(experiment.namespace, label_selector=selector).items)
    nodes = {node.metadata.name: node for node in core.list_node().items}
    failed_creates = _last_failed_create(core.list_namespaced_event(experiment.namespace).items)
    jobs = client.BatchV1Api(api).list_namespaced_job(experiment.namespace, label_selector=selector).items
    finished = {job.metadata.name for job in jobs if (job.status.succeeded or 0) >= 1}
    # Events and Jobs name the workload, which runs a group of tasks.
    workload = {task.name: group.name for group in experiment.groups for task in group.tasks}
    return [
        task_status(
            placement,
            pods.get(placement.task.name),
            nodes,
            experiment.plan.strict,
            failed_creates.get(workload[placement.task.name], ""),
            finished=workload[placement.task.name] in finished,
        )
        for placement in experiment.plan.placements
    ]


def status_table(experiment: Experiment, statuses: list[TaskStatus]) -> str:
    off_plan = [s for s in statuses if not s.as_planned]
    pending = sum(1 for s in statuses if s.phase == "Pending")
    lines = [
        f"stack {experiment.stack} · namespace {experiment.namespace} · "
        f"{len(statuses) - len(off_plan)}/{len(statuses)} tasks running as planned · {pending} pending",
        "",
    ]
    rows = [("", "TASK", "PLANNED", "NODE", "PHASE", "WHY")]
    for status in statuses:
        rows.append(
            (
                "!" if not status.as_planned else "",
                status.task,
                status.planned or f"({status.pool})",
                status.node or "-",
                status.phase,
                status.reason,
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths)] + [row[-1]]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def status_json(experiment: Experiment, statuses: list[TaskStatus]) -> str:
    return json.dumps(
        {
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
        },
        indent=2,
    )


def _kubeconfig_looked_for(kubeconfig: Optional[str]) -> tuple[Path, str]:
    """The kubeconfig file the client reads, and why that one."""
    if kubeconfig:
        return Path(kubeconfig), "given with --kubeconfig"
    if os.environ.get("KUBECONFIG"):
        return Path(os.environ["KUBECONFIG"].split(os.pathsep)[0]).expanduser(), "from $KUBECONFIG"
    return Path("~/.kube/config").expanduser(), "the default; set --kubeconfig or $KUBECONFIG for another"


def cluster_status(
    experiment: Experiment, kubeconfig: Optional[str], context: Optional[str], as_json: bool
) -> int:
    """Print the status; 0 when every task runs as planned, 1 when not, 2 when the cluster cannot be read."""
    from kubernetes import config
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError, MaxRetryError

    where = f"stack '{experiment.stack}'"
    kubeconfig_path, source = _kubeconfig_looked_for(kubeconfig)
    if not kubeconfig_path.is_file():
        print(
            f"{where}: no kubeconfig at {kubeconfig_path} ({source}); for the local cluster run "
            f"`make cluster-up STACK={experiment.stack}` and then `make status STACK={experiment.stack}` "
            "(which passes --kubeconfig .cluster/kubeconfig)",
            file=sys.stderr,
        )
        return 2
    # One clear line for an API server that does not answer, not urllib3's retries and warnings.
    logging.getLogger("urllib3").setLevel(logging.ERROR)
    try:
        api = config.new_client_from_config(config_file=str(kubeconfig_path), context=context)
        api.configuration.retries = False
        statuses = read_status(api, experiment)
    except MaxRetryError as error:
        reason = getattr(error.reason, "args", [error.reason])[-1]
        print(f"{where}: the API server at {api.configuration.host} does not answer ({reason})", file=sys.stderr)
        return 2
    except (config.ConfigException, ApiException, HTTPError, OSError) as error:
        print(f"{where}: cannot read the cluster from {kubeconfig_path}: {error}", file=sys.stderr)
        return 2
    print(status_json(experiment, statuses) if as_json else status_table(experiment, statuses))
    return 0 if all(s.as_planned for s in statuses) else 1
