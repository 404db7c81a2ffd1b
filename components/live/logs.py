"""`python -m components logs <stack> [TASK] [--previous] [--follow]`: a task's log, as `kubectl
logs` shows it while its pod lives, and from the log archive (tfk8s:logs) once the pod is gone:
JobSet deletes the PS and the workers still running when the experiment ends.

A task's runs are its pods, oldest first (a retried task's earlier pod is its previous run): the
archive's and those still in the cluster, each read from its pod while the pod is there. Without
TASK it lists the experiment's tasks and where each one's log is. The user needs `pods/log` and,
for the archive, `pods/portforward` in the namespace (docs/rbac/tfk8s-experimenter.yaml).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Optional

from ..objects.api_errors import api_error_text
from ..objects.pods import CONTAINER_NAME
from ..plan import labels as L
from ..plan.experiment import Experiment
from .cluster_access import with_cluster
from .log_archive_client import ArchiveUnreadable, LogArchive
from .table import aligned
from .tasks import pod_task

# A pod of these phases has ended: one the archive does not list ran before those it kept.
FINISHED = ("Succeeded", "Failed")
TASKS_SHOWN = 12  # of a refused task's experiment: the first ones show how they are named
NO_ARCHIVE_HELP = "add tfk8s:logs: {} to the stack and `pulumi up` to keep every task's log after its pod is gone"


@dataclass(frozen=True)
class Run:
    pod: str
    live: Any  # the pod as the API server has it; None once it is gone (the archive's copy is read)


def show_logs(
    experiment: Experiment,
    task: Optional[str],
    previous: bool,
    follow: bool,
    kubeconfig: Optional[str],
    context: Optional[str],
    stack_given: Optional[str] = None,
) -> int:
    """0 when a log (or the list) was printed; 1 when the task has no log to show; 2 for an unknown
    task or a cluster that cannot be read."""
    tasks = experiment_tasks(experiment)
    if task is not None and task not in tasks:
        shown = ", ".join(tasks[:TASKS_SHOWN]) + (
            f" and {len(tasks) - TASKS_SHOWN} more" if len(tasks) > TASKS_SHOWN else ""
        )
        print(f"stack '{experiment.stack}': no task '{task}'; its tasks are {shown}", file=sys.stderr)
        return 2

    def show(api: Any) -> int:
        from kubernetes import client

        core = client.CoreV1Api(api)
        archive = Archive.read_from(core, experiment, cluster_flags(kubeconfig, context))
        runs = task_runs(_live_pods_by_task(core, experiment), archive.runs)
        if task is None:
            print("\n".join(_task_table(tasks, runs, archive)))
            return 0
        return _show_run(core, experiment, archive, task, runs.get(task, []), previous, follow)

    return with_cluster(experiment, kubeconfig, context, show, stack_given)


def cluster_flags(kubeconfig: Optional[str], context: Optional[str]) -> tuple[str, ...]:
    """What points kubectl at the cluster this command reads: the --kubeconfig and --context it was given."""
    return (*(("--kubeconfig", kubeconfig) if kubeconfig else ()), *(("--context", context) if context else ()))


def experiment_tasks(experiment: Experiment) -> list[str]:
    """Every task of the plan, as `status` names them, in its order."""
    return [placement.task.name for placement in experiment.plan.placements]


@dataclass
class Archive:
    """The stack's log archive as this command found it: its runs, or why there are none."""

    reader: Optional[LogArchive]  # None: the stack keeps none
    runs: dict[str, list[str]]
    cluster_flags: tuple[str, ...]  # for a kubectl command the user is told to run (cluster_flags())
    unreadable: str = ""  # why it could not be read; the pods' own logs are shown meanwhile

    @classmethod
    def read_from(cls, core: Any, experiment: Experiment, cluster_flags: tuple[str, ...] = ()) -> "Archive":
        if experiment.config.logs is None:
            return cls(None, {}, cluster_flags)
        reader = LogArchive(core, experiment)
        try:
            return cls(reader, reader.runs(), cluster_flags)
        except ArchiveUnreadable as why:
            said = why.said(cluster_flags)
            print(f"stack '{experiment.stack}': {said}; showing the pods' own logs", file=sys.stderr)
            return cls(reader, {}, cluster_flags, said)


def _live_pods_by_task(core: Any, experiment: Experiment) -> dict[str, list[Any]]:
    first_index = {group.name: group.first_index for group in experiment.groups}
    pods = core.list_namespaced_pod(experiment.namespace, label_selector=L.selector_text(experiment.stack)).items
    live: dict[str, list[Any]] = {}
    for pod in sorted(pods, key=lambda p: p.metadata.creation_timestamp):
        name = pod_task(pod, first_index)
        if name is not None:
            live.setdefault(name, []).append(pod)
    return live


def task_runs(live: dict[str, list[Any]], archived: dict[str, list[str]]) -> dict[str, list[Run]]:
    """Each task's runs, oldest first (pure). The archive lists the pods it kept in the order they
    ran; a pod in the cluster it does not list either ran before them (a finished pod whose run it
    dropped: it keeps the last KEPT_RUNS, components/spec/logs.py) or after (one running, its first line
    not sent yet)."""
    runs: dict[str, list[Run]] = {}
    for name in set(live) | set(archived):
        pods = live.get(name, [])  # oldest first
        kept = archived.get(name, [])
        by_name = {pod.metadata.name: pod for pod in pods}
        unlisted = [pod for pod in pods if pod.metadata.name not in kept]
        older = [pod.metadata.name for pod in unlisted if pod.status.phase in FINISHED]
        newer = [pod.metadata.name for pod in unlisted if pod.status.phase not in FINISHED]
        runs[name] = [Run(pod, by_name.get(pod)) for pod in [*older, *kept, *newer]]
    return runs


def _task_table(tasks: list[str], runs: dict[str, list[Run]], archive: Archive) -> list[str]:
    gone = "archive" if archive.reader is not None else "none (its pod is gone)"
    rows = [("TASK", "RUNS", "LOG OF THE LAST RUN")]
    for task in tasks:
        task_runs = runs.get(task, [])
        if not task_runs:
            where = "none yet" if archive.reader is not None else "none (its pod is gone)"
        else:
            where = f"pod {task_runs[-1].pod}" if task_runs[-1].live is not None else gone
        rows.append((task, str(len(task_runs)), where))
    lines = aligned(rows)
    if archive.reader is None:
        lines += ["", f"this stack keeps no log archive: a task's log goes with its pod; {NO_ARCHIVE_HELP}"]
    return lines


def _show_run(
    core: Any,
    experiment: Experiment,
    archive: Archive,
    task: str,
    runs: list[Run],
    previous: bool,
    follow: bool,
) -> int:
    stack = experiment.stack
    newest = runs[-1].live if runs else None
    # A StatefulSet's task restarts in its pod: its previous run is the container's previous one.
    if previous and newest is not None and _restarts(newest):
        return _print_pod_log(core, stack, newest, previous=True, follow=follow)
    wanted = len(runs) - (2 if previous else 1)
    if wanted < 0:
        which = "no earlier run" if previous and runs else "no log yet"
        if archive.unreadable:
            which += f" that its pods show (the log archive cannot be read: {archive.unreadable})"
        elif archive.reader is None and not runs:
            which += f" (its pod is gone, or never ran; {NO_ARCHIVE_HELP})"
        print(f"stack '{stack}': {task} has {which}", file=sys.stderr)
        return 1
    run = runs[wanted]
    if run.live is not None:
        return _print_pod_log(core, stack, run.live, previous=False, follow=follow)
    if archive.reader is None:
        print(
            f"stack '{stack}': {task}'s pod {run.pod} is gone, and its log with it; {NO_ARCHIVE_HELP}", file=sys.stderr
        )
        return 1
    try:
        text = archive.reader.read(task, run.pod)
    except ArchiveUnreadable as why:
        print(f"stack '{stack}': {why.said(archive.cluster_flags)}", file=sys.stderr)
        return 2
    sys.stdout.buffer.write(text)
    sys.stdout.flush()
    if follow:
        print(f"({task}'s pod {run.pod} is gone: this is its whole archived log)", file=sys.stderr)
    return 0


def _restarts(pod: Any) -> int:
    statuses = pod.status.container_statuses or ()
    return sum(status.restart_count or 0 for status in statuses if status.name == CONTAINER_NAME)


def _print_pod_log(core: Any, stack: str, pod: Any, previous: bool, follow: bool) -> int:
    """The pod's log as `kubectl logs` prints it, followed until the container ends with `follow`."""
    from kubernetes.client.exceptions import ApiException

    name, namespace = pod.metadata.name, pod.metadata.namespace
    try:
        response = core.read_namespaced_pod_log(
            name, namespace, container=CONTAINER_NAME, previous=previous, follow=follow, _preload_content=False
        )
    except ApiException as error:
        if error.status != 400:
            raise
        # The container has not started (Pending, its image pulling), or kept no previous run.
        why = api_error_text(error.status, error.reason, error.body)
        print(f"stack '{stack}': pod {name} has no log to show: {why}", file=sys.stderr)
        return 1
    try:
        for chunk in response.stream(65536):
            sys.stdout.buffer.write(chunk)
            sys.stdout.flush()
    finally:
        response.release_conn()
    return 0
