"""Why an experiment's Jobs failed, in a user's words: the task and exit code of a `failOn` exit,
the tasks a start deadline waited for and the scheduler's reason, else the Job's own reason."""

from __future__ import annotations

import re
from typing import Any, Optional

from ..objects.failure_rules import POD_FAILURE_POLICY, FailedExit, failed_on_exit
from ..objects.start_barrier import START_BARRIER
from ..plan import labels as L
from ..plan.experiment import Experiment
from ..plan.workloads import pod_hostname
from ..spec.task_roles import ROLE_OF, TRAINING_CLUSTER, task_name
from .tasks import pod_task

FAILED_SCHEDULING = "FailedScheduling"
# A task of the training cluster, as the start barrier names those it waits for.
TASK_NAME = re.compile("^" + task_name("(" + "|".join(TRAINING_CLUSTER) + ")", "[0-9]+") + "$")


def failed_jobs(
    jobs: list[Any], experiment: Experiment, pods: list[Any], first_index: dict[str, int], events: list[Any]
) -> str:
    """The task groups whose Job failed, with the tasks they run and the Job's reason."""
    tasks_of = {group.name: [task.name for task in group.tasks] for group in experiment.groups}
    role_in = {group.name: ROLE_OF[group.task_type] for group in experiment.groups}
    pod_named = {pod.metadata.name: pod for pod in pods}
    failed = []
    for job in jobs:
        for condition in job.status.conditions or ():
            if condition.type != "Failed" or condition.status != "True":
                continue
            group = (job.metadata.labels or {}).get(L.WORKLOAD, job.metadata.name)
            exited = failed_on_exit(condition.message or "") if condition.reason == POD_FAILURE_POLICY else None
            if exited is None:
                tasks = ", ".join(tasks_of.get(group, [])) or group
                failed.append(f"{tasks} failed ({condition.reason or condition.message})")
            elif exited.container == START_BARRIER:
                failed.append(_past_start_deadline(exited, pod_named.get(exited.pod), experiment, events))
            else:
                pod = pod_named.get(exited.pod)
                task = (pod_task(pod, first_index) if pod is not None else None) or exited.pod
                key = role_in[group].stack_key if group in role_in else group
                failed.append(f"{task}'s exit code {exited.code} is in {key}.failOn: no retry")
    return "; ".join(dict.fromkeys(failed))  # every task that waited says the same


def _past_start_deadline(exited: FailedExit, pod: Any, experiment: Experiment, events: list[Any]) -> str:
    """What the task that gave up waited for (its termination message), and why each of those tasks
    was not running: the scheduler's last word on its pod, which JobSet has deleted since."""
    said = _barrier_message(pod) or f"not every task was running within startDeadline (pod {exited.pod})"
    listed = said.rsplit(": ", 1)[1].split(", ") if ": " in said else []
    waited = [name for name in listed if TASK_NAME.match(name)]  # the last may be "worker-9 and 40 more"
    reasons = [f"{task}: {why}" for task in waited if (why := _scheduler_said(task, experiment, events))]
    return "; ".join([said, *reasons])


def _barrier_message(pod: Any) -> Optional[str]:
    for status in (pod.status.init_container_statuses or ()) if pod is not None else ():
        terminated = status.state.terminated if status.state is not None else None
        if status.name == START_BARRIER and terminated is not None and terminated.message:
            return str(terminated.message).strip()
    return None


def _scheduler_said(task: str, experiment: Experiment, events: list[Any]) -> Optional[str]:
    """The latest FailedScheduling message of a pod of `task` (a JobSet pod's name is its host name
    and a suffix)."""
    placed = next(((g, t.index) for g in experiment.groups for t in g.tasks if t.name == task), None)
    if placed is None:
        return None
    prefix = pod_hostname(*placed, "jobset", experiment.names) + "-"
    said = [
        event
        for event in events
        if event.reason == FAILED_SCHEDULING
        and event.involved_object is not None
        and (event.involved_object.name or "").startswith(prefix)
    ]
    if not said:
        return None
    latest = max(said, key=lambda event: str(event.last_timestamp or event.event_time or ""))
    return str(latest.message)
