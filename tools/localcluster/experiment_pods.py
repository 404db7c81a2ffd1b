"""An experiment's task pods, watched: their rows as `kubectl get pods -o wide` shows them, and the
wait until every PS and worker runs (`make apply`, the tests and the benchmarks after an apply)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any, Optional

from kubernetes import client
from kubernetes.dynamic import DynamicClient

from components.plan import labels as L
from components.plan.experiment import Experiment

from .experiments import ADMISSION_GRACE_S, ApplyError, ExperimentNotRunning, Progress, jobset_state, quiet

# The roles whose pods an apply waits for (the chief is a Job that finishes).
TASK_ROLES = ("ps", "worker")


def pod_poll_interval(pods: int) -> float:
    """Seconds between pod listings while waiting: each listing costs the API server
    work per pod, and a bigger experiment takes longer, so polling as often for
    2,000 pods as for 200 would make the wait itself quadratic."""
    return min(2.0, max(0.25, pods / 2000))


def task_pods(core: client.CoreV1Api, experiment: Experiment) -> list[Any]:
    """The pods of the experiment's PS and workers."""
    selector = L.selector_text(experiment.stack, TASK_ROLES)
    return core.list_namespaced_pod(experiment.namespace, label_selector=selector).items


@dataclass(frozen=True)
class PodRow:
    name: str
    node: Optional[str]
    status: str  # as `kubectl get pods` shows it: Running, Pending, ...
    terminating: bool


def pod_rows(dynamic: DynamicClient, experiment: Experiment, roles: tuple[str, ...] = TASK_ROLES) -> list[PodRow]:
    """The pods of `roles` (the PS and workers by default) as `kubectl get pods -o wide` rows.

    Thousands of whole pods would cost the client most of a core to decode on
    every poll; the server-side table format sends only the columns.
    """
    response = dynamic.request(
        "get",
        f"/api/v1/namespaces/{experiment.namespace}/pods",
        label_selector=L.selector_text(experiment.stack, roles),
        header_params={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"},
        serialize=False,
    )
    table = json.loads(response.data)
    columns = [column["name"] for column in table["columnDefinitions"]]
    name, node, status = columns.index("Name"), columns.index("Node"), columns.index("Status")
    rows = []
    for row in table.get("rows", []):
        cells = row["cells"]
        rows.append(
            PodRow(
                name=cells[name],
                node=None if cells[node] in ("<none>", "") else cells[node],
                status=cells[status],
                terminating=cells[status] == "Terminating",
            )
        )
    return rows


@dataclass(frozen=True)
class PodTimes:
    """Seconds from the start of an apply until every PS and worker pod was ..."""

    created_s: float  # ... created by its controller
    bound_s: float  # ... bound to a node by the scheduler
    running_s: float  # ... Running (kwok's part)


def wait_for_pods(
    api: client.ApiClient,
    experiment: Experiment,
    timeout_s: float,
    progress: Progress = quiet,
    started: Optional[float] = None,
) -> PodTimes:
    """Wait until every PS and worker pod is bound, then Running."""
    started = time.monotonic() if started is None else started
    dynamic = DynamicClient(api)
    expected = experiment.plan.count("ps") + experiment.plan.count("worker")
    created_at: Optional[float] = None
    bound_at: Optional[float] = None
    last_report = ""
    while True:
        state = jobset_state(api, experiment)
        # Kueue suspends a queued JobSet at creation and admits one that fits a moment later.
        if state is not None and (state != "queued" or time.monotonic() - started > ADMISSION_GRACE_S):
            raise ExperimentNotRunning(experiment.stack, state)
        rows = [row for row in pod_rows(dynamic, experiment) if not row.terminating]
        bound = sum(1 for row in rows if row.node)
        running = sum(1 for row in rows if row.status == "Running")
        now = time.monotonic() - started
        if created_at is None and len(rows) >= expected:
            created_at = now
        if bound_at is None and bound >= expected:
            bound_at = now
        if running >= expected:
            return PodTimes(created_at or now, bound_at or now, now)
        report = f"{len(rows)}/{expected} pods created, {bound} bound, {running} running"
        if report != last_report:
            progress(report)
            last_report = report
        if now > timeout_s:
            raise ApplyError(
                f"stack '{experiment.stack}': after {timeout_s:.0f} s {report}; "
                f"`python -m components status {experiment.stack}` shows why"
            )
        time.sleep(pod_poll_interval(expected))
