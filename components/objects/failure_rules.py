"""What ends an experiment and what does not: the Pod failure policy of each role's Job and the
JobSet's failure rules (plain dicts, no Pulumi here).

Two rules TFJob users ask for, in Kubernetes' own terms:
- `failOn` (a role's exit codes): such an exit fails the task's Job at once (`FailJob`), and the
  JobSet's first rule fails the experiment, whichever role it was: no restart is spent on a
  program that cannot succeed (a bad flag, a missing file).
- Disruptions never count: a pod evicted (Eviction API, a node drain), preempted by the scheduler,
  or stopped by node pressure or shutdown carries the `DisruptionTarget` condition. A chief's or
  a worker's is replaced without counting against its retries (`Ignore`). A PS's variables die
  with it, so its Job fails all the same, and the JobSet restarts the experiment from its last
  checkpoint without counting it against `cluster.restarts` (`RestartJobSetAndIgnoreMaxRestarts`).

And a third, `startDeadline`: the start barrier's own exit (components/objects/start_barrier.py)
fails its Job at once, and the JobSet's first rule the experiment.

Every FailJob rule fails its Job with reason `PodFailurePolicy`; the JobSet tells them apart by
the Job controller's message, which names the rule's index (Kubernetes' pod_failure_policy.go:
`Container %s for pod %s/%s failed with exit code %v matching %v rule at index %d`, `Pod %s/%s has
condition %v matching %v rule at index %d`), as JobSet's onJobFailureMessagePatterns is meant for.
Pod names are DNS labels, so no name can forge either text.

A Pod failure policy needs `restartPolicy: Never`: every retried task is a new pod
(components/objects/pods.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Optional

from ..plan.experiment import Experiment
from ..plan.workloads import TaskGroup
from ..spec.roles import EvaluatorSpec
from ..spec.task_roles import role_of
from .start_barrier import START_BARRIER, START_DEADLINE_EXIT

Manifest = dict[str, Any]

DISRUPTED = {"type": "DisruptionTarget", "status": "True"}
# The Job condition reason of a Job a Pod failure policy rule failed.
POD_FAILURE_POLICY = "PodFailurePolicy"
# A PS's rules, by index: its disruption first, so that an evicted program's own exit code
# (a SIGTERM handler's) still reads as the disruption it was.
PS_DISRUPTED_RULE = 0

# JobSet rule names: letters, digits and _,: only.
FAILED_ON_EXIT = "FailedOnExitCode"
PS_DISRUPTED = "PSDisrupted"
START_DEADLINE_EXCEEDED = "StartDeadlineExceeded"


def fails_experiment(task_type: str) -> str:
    """The name of the rule by which the deciding role's failed Job fails the JobSet: `ChiefFailed`, or
    `WorkerFailed` where the workers decide (`done: workers`)."""
    return f"{task_type.capitalize()}Failed"


def _exit_message(container: str, pod: str, code: str) -> str:
    """The Job controller's message of a FailJob rule on exit codes, as a regular expression of the
    given parts (read by Python's re and by JobSet's RE2 alike)."""
    return f"^Container {container} for pod {pod} failed with exit code {code} matching FailJob rule at index [0-9]+$"


_EXIT_MESSAGE = re.compile(
    _exit_message("(?P<container>[^ ]+)", "(?P<namespace>[^/ ]+)/(?P<pod>[^ ]+)", "(?P<code>[0-9]+)")
)


def exit_code_message_pattern(container: str) -> str:
    """RE2 (JobSet's) for the Job controller's message of a FailJob rule on exit codes of `container`."""
    return _exit_message(re.escape(container), "[^ ]+", "[0-9]+")


def disruption_message_pattern(rule_index: int) -> str:
    return f"^Pod [^ ]+ has condition DisruptionTarget matching FailJob rule at index {rule_index}$"


@dataclass(frozen=True)
class FailedExit:
    """An exit a FailJob rule failed a Job for: `failOn` (the task's container) or the start deadline."""

    container: str
    pod: str
    code: int


def failed_on_exit(message: str) -> Optional[FailedExit]:
    """The container, pod and exit code a FailJob rule on exit codes failed a Job for, from its
    condition's message."""
    match = _EXIT_MESSAGE.match(message or "")
    return FailedExit(match["container"], match["pod"], int(match["code"])) if match else None


def pod_failure_policy(experiment: Experiment, group: TaskGroup, container: str) -> Manifest:
    """The `podFailurePolicy` of a group's Job: disruptions first, then the start deadline, then the
    role's `failOn`. The evaluator's Job never fails (components/objects/jobset.py): replaced, whatever
    its exit, after no start barrier."""
    fail_on = _fail_on(experiment, group)
    role = role_of(group.task_type)
    disrupted = {
        # A PS's Job fails (the JobSet restarts the experiment, uncounted); another task is replaced.
        "action": "FailJob" if role.lost_restarts_experiment else "Ignore",
        "onPodConditions": [DISRUPTED],
    }
    rules: list[Manifest] = [disrupted]
    if experiment.config.cluster.start_deadline is not None and role.waits_at_start_barrier:
        rules.append(
            {
                "action": "FailJob",
                "onExitCodes": {"containerName": START_BARRIER, "operator": "In", "values": [START_DEADLINE_EXIT]},
            }
        )
    if fail_on:
        rules.append(
            {
                "action": "FailJob",
                "onExitCodes": {"containerName": container, "operator": "In", "values": list(fail_on)},
            }
        )
    return {"podFailurePolicy": {"rules": rules}}


def _fail_on(experiment: Experiment, group: TaskGroup) -> tuple[int, ...]:
    """The exit codes that fail the experiment at once; none of the evaluator's ever do."""
    if not role_of(group.task_type).fails_on_exit_codes:
        return ()
    settings = experiment.config.cluster.role(group.task_type)
    assert not isinstance(settings, EvaluatorSpec), "the evaluator takes no failOn"
    return settings.fail_on


def jobset_failure_rules(experiment: Experiment, finisher: TaskGroup, container: str) -> list[Manifest]:
    """The JobSet's rules, matched in order; a failed Job no rule names (a PS that crashed) restarts
    the experiment, counted against `cluster.restarts`. Every rule that fails the experiment comes
    first, so that a permanent failure wins over a PS restart when both are seen at once."""
    cluster = experiment.config.cluster
    rules: list[Manifest] = []
    if cluster.start_deadline is not None:
        rules.append(
            {
                "name": START_DEADLINE_EXCEEDED,
                "action": "FailJobSet",
                "onJobFailureReasons": [POD_FAILURE_POLICY],
                "onJobFailureMessagePatterns": [exit_code_message_pattern(START_BARRIER)],
            }
        )
    if any(_fail_on(experiment, group) for group in experiment.groups):
        rules.append(
            {
                "name": FAILED_ON_EXIT,
                "action": "FailJobSet",
                "onJobFailureReasons": [POD_FAILURE_POLICY],
                "onJobFailureMessagePatterns": [exit_code_message_pattern(container)],
            }
        )
    rules.append(
        {
            "name": fails_experiment(finisher.task_type),
            "action": "FailJobSet",
            "targetReplicatedJobs": [finisher.name],
        }
    )
    rules.extend(
        {
            "name": PS_DISRUPTED,
            "action": "RestartJobSetAndIgnoreMaxRestarts",
            "targetReplicatedJobs": [group.name],
            "onJobFailureReasons": [POD_FAILURE_POLICY],
            "onJobFailureMessagePatterns": [disruption_message_pattern(PS_DISRUPTED_RULE)],
        }
        for group in experiment.groups
        if role_of(group.task_type).lost_restarts_experiment
    )
    return rules
