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
from .log_archive_client import ArchiveUnreadable, LogArchive
from .status import with_cluster
from .table import aligned
from .tasks import pod_task

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
        archive = LogArchive(core, experiment) if experiment.config.logs is not None else None
        runs = _runs_by_task(core, experiment, archive)
        if task is None:
            print("\n".join(_task_table(tasks, runs, archive)))
            return 0
        return _show_run(core, experiment, archive, task, runs.get(task, []), previous, follow)

    try:
        return with_cluster(experiment, kubeconfig, context, show)
    except ArchiveUnreadable as why:
        print(f"stack '{experiment.stack}': {why}", file=sys.stderr)
        return 2


def experiment_tasks(experiment: Experiment) -> list[str]:
    """Every task of the plan, as `status` names them, in its order."""
    return [placement.task.name for placement in experiment.plan.placements]


def _runs_by_task(core: Any, experiment: Experiment, archive: Optional[LogArchive]) -> dict[str, list[Run]]:
    first_index = {group.name: group.first_index for group in experiment.groups}
    pods = core.list_namespaced_pod(experiment.namespace, label_selector=L.selector_text(experiment.stack)).items
    live: dict[str, list[Any]] = {}
    for pod in sorted(pods, key=lambda p: p.metadata.creation_timestamp):
        name = pod_task(pod, first_index)
        if name is not None:
            live.setdefault(name, []).append(pod)
    archived = archive.runs() if archive is not None else {}
    runs: dict[str, list[Run]] = {}
    for name in set(live) | set(archived):
        by_name = {pod.metadata.name: pod for pod in live.get(name, [])}
        # The archive saw each pod's first line in the order the pods ran; pods it has not seen
        # (their first line not sent yet) come after, oldest first.
        order = list(archived.get(name, []))
        order += [pod for pod in by_name if pod not in order]
        runs[name] = [Run(pod, by_name.get(pod)) for pod in order]
    return runs


def _task_table(tasks: list[str], runs: dict[str, list[Run]], archive: Optional[LogArchive]) -> list[str]:
    rows = [("TASK", "RUNS", "LOG OF THE LAST RUN")]
    for task in tasks:
        task_runs = runs.get(task, [])
        if not task_runs:
            where = "none yet" if archive is not None else "none (its pod is gone)"
        elif task_runs[-1].live is not None:
            where = f"pod {task_runs[-1].pod}"
        else:
            where = "archive" if archive is not None else "none (its pod is gone)"
        rows.append((task, str(len(task_runs)), where))
    lines = aligned(rows)
    if archive is None:
        lines += ["", f"this stack keeps no log archive: a task's log goes with its pod; {NO_ARCHIVE_HELP}"]
    return lines


def _show_run(
    core: Any,
    experiment: Experiment,
    archive: Optional[LogArchive],
    task: str,
    runs: list[Run],
    previous: bool,
    follow: bool,
) -> int:
    stack = experiment.stack
    newest = runs[-1].live if runs else None
    # A StatefulSet's task restarts in its pod: its previous run is the container's previous one.
    if previous and newest is not None and _restarts(newest):
        return _print_pod_log(core, newest, previous=True, follow=follow)
    wanted = len(runs) - (2 if previous else 1)
    if wanted < 0:
        which = "no earlier run" if previous and runs else "no log yet"
        hint = "" if archive is not None or runs else f" (its pod is gone, or never ran; {NO_ARCHIVE_HELP})"
        print(f"stack '{stack}': {task} has {which}{hint}", file=sys.stderr)
        return 1
    run = runs[wanted]
    if run.live is not None:
        return _print_pod_log(core, run.live, previous=False, follow=follow)
    if archive is None:
        print(
            f"stack '{stack}': {task}'s pod {run.pod} is gone, and its log with it; {NO_ARCHIVE_HELP}", file=sys.stderr
        )
        return 1
    text = archive.read(task, run.pod)
    sys.stdout.buffer.write(text)
    sys.stdout.flush()
    if follow:
        print(f"({task}'s pod {run.pod} is gone: this is its whole archived log)", file=sys.stderr)
    return 0


def _restarts(pod: Any) -> int:
    statuses = pod.status.container_statuses or ()
    return sum(status.restart_count or 0 for status in statuses if status.name == CONTAINER_NAME)


def _print_pod_log(core: Any, pod: Any, previous: bool, follow: bool) -> int:
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
        print(f"pod {name}: no log to show: {api_error_text(error.status, error.reason, error.body)}", file=sys.stderr)
        return 1
    try:
        for chunk in response.stream(65536):
            sys.stdout.buffer.write(chunk)
            sys.stdout.flush()
    finally:
        response.release_conn()
    return 0
