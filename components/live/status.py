"""`python -m components status <stack>`: the experiment's phase, and the plan against what the cluster did.

This module reads the cluster; tasks.py decides what each pod means for its task and prints it.

First the experiment's phase (components/live/phase.py), with the chief's summary
once it succeeded or the failed task and its last words once it failed. Then,
for every task: the server the plan gave it, the node its pod is on, the
pod's phase, and for a pod that is not where the plan put it or not running,
why (the scheduler's own message, a missing server, or the controller's event).

It needs no more than rights in the experiment's namespace: what it reads
beyond them (the Nodes, to name a planned server that is not in the cluster)
it reads where it may, and where refused says in one line what it could not
read and which permission would show it.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import TYPE_CHECKING, Any, Optional, cast

from ..objects.api_errors import api_error_text, missing_permission, status_of
from ..plan import labels as L
from ..plan.experiment import Experiment
from ..spec.task_roles import role_of
from ..spec.trainer_contract import last_summary
from .cluster_access import JOBSET_CRD, NoJobSetError, no_jobset_message, with_cluster
from .failures import failed_jobs
from .lost_servers import LostServer, PodStand, lost_servers
from .phase import (
    Phase,
    jobset_phase,
    last_error,
    queued_detail,
    statefulset_phase,
    summary_text,
)
from .tasks import (
    ExperimentStatus,
    TaskStatus,
    against_shares,
    last_failed_create,
    newest_pods_by_task,
    pod_task,
    status_json,
    status_table,
    task_status,
)

if TYPE_CHECKING:
    from kubernetes.client import V1Job, V1JobStatus, V1ObjectMeta


def not_read(what: str, error: Any, would: str) -> str:
    """One line: what a 403 kept from status, the permission that would show it, and what it would tell."""
    permission = missing_permission(str(status_of(error.body).get("message") or ""))
    needs = f"it needs {permission}" if permission else api_error_text(error.status, error.reason, error.body)
    return f"not read: {what} ({needs}); with it, {would}"


def group_served(api: Any, group: str) -> bool:
    """Whether the API server serves `group`, from discovery (which every authenticated user may read).
    True where discovery cannot be read either: the caller then reports the refusal it had."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    try:
        return any(served.name == group for served in client.ApisApi(api).get_api_versions().groups)
    except ApiException:
        return True


def _nodes(core: Any, not_read_lines: list[str]) -> Optional[dict[str, Any]]:
    """Every Node by name; None where the user may not list them (namespace rights)."""
    from kubernetes.client.exceptions import ApiException

    try:
        return {node.metadata.name: node for node in core.list_node().items}
    except ApiException as error:
        if error.status != 403:
            raise
        not_read_lines.append(not_read("Nodes", error, "status names a planned server that is not in the cluster"))
        return None


def read_status(api: Any, experiment: Experiment) -> ExperimentStatus:
    from kubernetes import client

    core = client.CoreV1Api(api)
    selector = L.selector_text(experiment.stack)
    all_pods = core.list_namespaced_pod(experiment.namespace, label_selector=selector).items
    first_index = {group.name: group.first_index for group in experiment.groups}
    pods = newest_pods_by_task(all_pods, first_index)
    unread: list[str] = []
    nodes = _nodes(core, unread)
    events = core.list_namespaced_event(experiment.namespace).items
    failed_by_workload = last_failed_create(events)
    jobs = client.BatchV1Api(api).list_namespaced_job(experiment.namespace, label_selector=selector).items
    job_parts = [_listed_job(job) for job in jobs]
    # Events name the workload that runs a group of tasks (a JobSet's Job: `tf-<group>-0`).
    group_of_workload = {metadata.name: (metadata.labels or {}).get(L.WORKLOAD) for metadata, _ in job_parts}
    failed_creates = {group_of_workload.get(name, name): message for name, message in failed_by_workload.items()}
    finished = {group_of_workload[metadata.name] for metadata, status in job_parts if (status.succeeded or 0) >= 1}
    workload = {task.name: group.name for group in experiment.groups for task in group.tasks}
    pool_servers = {pool.name: frozenset(pool.nodes or ()) for pool in experiment.config.node_pools}
    tasks = [
        task_status(
            placement,
            pods.get(placement.task.name),
            nodes,
            experiment.plan.strict,
            failed_creates.get(workload[placement.task.name], ""),
            finished=workload[placement.task.name] in finished,
            pool_servers=pool_servers[placement.pool],
        )
        for placement in experiment.plan.placements
    ]
    lost = lost_servers(nodes, _task_servers(experiment, all_pods, pods, first_index))
    tasks = [_waiting_on(task, lost, pods.get(task.task)) for task in tasks]
    tasks, servers = against_shares(experiment, tasks)
    # The evaluator does not decide whether the experiment runs (it may have finished, or be replaced).
    side_tasks = {p.task.name for p in experiment.plan.placements if not role_of(p.task.type).in_training_cluster}
    all_running = all(t.phase == "Running" for t in tasks if t.task not in side_tasks)
    if experiment.workload == "jobset":
        phase = jobset_phase(
            read_jobset(api, experiment),
            experiment.config.cluster.queue is not None,
            all_running,
            experiment.config.cluster.restarts,
            experiment.config.cluster.ttl_seconds_after_finished,
        )
    else:
        deciding = experiment.plan.deciding_role().name
        deciding_groups = {group.name for group in experiment.groups if group.task_type == deciding}
        chief_jobs = [status for metadata, status in job_parts if group_of_workload[metadata.name] in deciding_groups]
        phase = statefulset_phase(
            any((status.succeeded or 0) >= 1 for status in chief_jobs),
            any(c.type == "Failed" and c.status == "True" for status in chief_jobs for c in status.conditions or ()),
            all_running,
        )
    if phase.name == "Queued":
        phase = Phase(phase.name, queued_detail(*_kueue_view(api, experiment, unread)))
    summary = None
    if phase.name == "Succeeded":
        # JobSet ended the PS and workers with the chief (the workers, without one): their pods
        # are gone by design.
        ended_with = f"the {experiment.plan.deciding_role().stack_key}"
        tasks = [
            TaskStatus(t.task, t.pool, t.planned, None, "Succeeded", True, f"ended with {ended_with}")
            if t.phase == "Missing"
            else t
            for t in tasks
        ]
        summary = last_summary(pod_log(core, pods.get("chief-0")))
        if summary is not None:
            phase = Phase(phase.name, summary_text(summary))
    elif phase.name == "Failed":
        why = [
            phase.detail,
            failed_jobs(jobs, experiment, all_pods, first_index, events),
            failed_task(core, all_pods, first_index),
        ]
        phase = Phase(phase.name, "; ".join(filter(None, why)))
    elif lost:
        phase = Phase(phase.name, "; ".join(filter(None, [phase.detail, f"waiting on {_names(lost)}, NotReady"])))
    return ExperimentStatus(phase, tasks, summary, pods, servers, unread, lost)


def _task_servers(
    experiment: Experiment, all_pods: list[Any], current: dict[str, Any], first_index: dict[str, int]
) -> dict[str, tuple[str, ...]]:
    """Task -> the node its pod is on (its current pod's, else one being deleted: a pod on a lost server
    stays Terminating for good); for a pod not placed yet, the servers it may go to."""
    servers: dict[str, tuple[str, ...]] = {
        task: (pod.spec.node_name,) for task, pod in current.items() if pod.spec.node_name
    }
    for pod in all_pods:
        task = pod_task(pod, first_index)
        if task is not None and task not in current and pod.metadata.deletion_timestamp and pod.spec.node_name:
            servers[task] = (pod.spec.node_name,)
    pools = {pool.name: tuple(pool.nodes or ()) for pool in experiment.config.node_pools}
    for placement in experiment.plan.placements:
        if placement.task.name in current and placement.task.name not in servers:
            servers[placement.task.name] = (placement.server,) if placement.server else pools[placement.pool]
    return servers


def _waiting_on(task: TaskStatus, lost: list[LostServer], pod: Any) -> TaskStatus:
    """A task that waits on a lost server: its phase as far as anyone can know it, and why it is stuck."""
    server = next((server for server in lost if task.task in server.tasks), None)
    if server is None or task.phase in ("Succeeded", "Failed"):
        return task
    where: PodStand
    if pod is None:
        where, phase = "terminating", "Terminating"
    elif not pod.spec.node_name:
        where, phase = "pending", task.phase
    else:
        where, phase = "running", "Unknown"
    reason = server.task_reason(where)
    return dataclasses.replace(
        task,
        node=task.node or (server.name if where == "terminating" else None),
        phase=phase,
        as_planned=False,
        reason=reason if where != "pending" else "; ".join(filter(None, [reason, task.reason])),
    )


def _names(lost: list[LostServer]) -> str:
    return ", ".join(server.name for server in lost)


def _listed_job(job: V1Job) -> tuple[V1ObjectMeta, V1JobStatus]:
    """A listed Job's metadata and status, which the API server writes on every Job it lists."""
    assert job.metadata is not None and job.status is not None
    return job.metadata, job.status


def _kueue_view(api: Any, experiment: Experiment, unread: list[str]) -> tuple[list[dict[str, Any]], list[Any]]:
    """The Kueue Workloads the experiment's JobSet owns, and the JobSet's events, oldest first."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    try:
        # Kueue's Workloads are answered as a list object in decoded JSON: a dict.
        listed = cast(
            dict[str, Any],
            client.CustomObjectsApi(api).list_namespaced_custom_object(
                "kueue.x-k8s.io", "v1beta1", experiment.namespace, "workloads"
            ),
        )["items"]
    except ApiException as error:
        listed = []  # no Kueue: the events say why
        if error.status == 403:
            unread.append(not_read("Kueue's Workloads", error, "status says why Kueue has not admitted it yet"))
    workloads = [
        w
        for w in listed
        if any(
            o.get("kind") == "JobSet" and o.get("name") == experiment.names.jobset
            for o in w["metadata"].get("ownerReferences") or ()
        )
    ]
    events = (
        client.CoreV1Api(api)
        .list_namespaced_event(
            experiment.namespace,
            field_selector=f"involvedObject.kind=JobSet,involvedObject.name={experiment.names.jobset}",
        )
        .items
    )
    # Never None: the API server gives every event its creation time.
    events.sort(key=lambda e: cast(datetime, e.last_timestamp or e.event_time or e.metadata.creation_timestamp))
    return workloads, events


def read_jobset(api: Any, experiment: Experiment) -> Optional[dict[str, Any]]:
    """The experiment's JobSet as the API server has it; None before it exists; NoJobSetError
    when the cluster has no JobSet at all."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    try:
        # The JobSet is answered as decoded JSON: a dict.
        return cast(
            dict[str, Any],
            client.CustomObjectsApi(api).get_namespaced_custom_object(
                "jobset.x-k8s.io", "v1alpha2", experiment.namespace, "jobsets", experiment.names.jobset
            ),
        )
    except ApiException as error:
        if error.status != 404:
            raise
    try:
        client.ApiextensionsV1Api(api).read_custom_resource_definition(JOBSET_CRD)
    except ApiException as error:
        # CRDs are cluster-wide: with namespace rights, discovery tells whether JobSet is served.
        if error.status == 404 or (error.status == 403 and not group_served(api, "jobset.x-k8s.io")):
            raise NoJobSetError(no_jobset_message(experiment.stack)) from None
        if error.status != 403:
            raise
    return None


def pod_log(core: Any, pod: Any, lines: int = 50) -> str:
    """The tail of a pod's log ('' where the node serves none, as kwok's do not)."""
    from kubernetes.client.exceptions import ApiException

    if pod is None:
        return ""
    try:
        return core.read_namespaced_pod_log(pod.metadata.name, pod.metadata.namespace, tail_lines=lines)
    except ApiException:
        return ""


STOPPED_EXIT_CODES = (128 + 15, 128 + 9)
# Enough lines for a traceback's last frame and its error, or a message and the line before it:
# a program's stdout and stderr reach the log through two pipes, so their last lines may swap.
FAILED_TASK_LINES = 3


def failed_task(core: Any, pods: list[Any], first_index: dict[str, int]) -> str:
    """The last task whose container failed, and the last lines it wrote."""
    failures = []
    for pod in pods:
        for container in pod.status.container_statuses or ():
            for state in (container.state, container.last_state):
                terminated = state.terminated if state is not None else None
                if terminated is not None and terminated.exit_code:
                    failures.append((terminated.finished_at, pod, terminated))
    if not failures:
        return ""
    # A task stopped by a signal (143: SIGTERM, 137: SIGKILL) was most likely stopped because of
    # the failure, not its cause: the last task that exited by itself comes first.
    _, pod, terminated = max(
        failures, key=lambda failure: (failure[2].exit_code not in STOPPED_EXIT_CODES, str(failure[0]))
    )
    task = pod_task(pod, first_index) or pod.metadata.name
    # The kubelet keeps the tail of a failed container's log as its termination message
    # (FallbackToLogsOnError): it belongs to that very run, where the pod's log is the newest run's.
    said = last_error(terminated.message or pod_log(core, pod, lines=10), lines=FAILED_TASK_LINES)
    return f"{task} exited {terminated.exit_code}" + (f": {said}" if said else "")


def cluster_status(
    experiment: Experiment,
    kubeconfig: Optional[str],
    context: Optional[str],
    as_json: bool,
    stack_given: Optional[str] = None,
) -> int:
    """Print the status; 0 when the experiment succeeded or every task runs as planned, 1 when not (or it
    failed), 2 when the cluster cannot be read (or has no JobSet for a stack that asks for one)."""

    def show(api: Any) -> int:
        status = read_status(api, experiment)
        print(status_json(experiment, status) if as_json else status_table(experiment, status, stack_given))
        if status.phase.name == "Succeeded":
            return 0
        return 0 if all(s.as_planned for s in status.tasks) and status.phase.name != "Failed" else 1

    return with_cluster(experiment, kubeconfig, context, show, stack_given)
