"""The experiment as one JobSet, and its Kueue LocalQueue (plain dicts, no Pulumi here).

JobSet (sigs.k8s.io/jobset) runs the task groups (components/plan/workloads.py) as
one unit, one group per role: a replicatedJob whose single Indexed Job runs the
role's tasks, with the same pods and resources as the StatefulSet model. So the
JobSet has three replicated Jobs, four with an evaluator (Kueue admits at most 8 pod sets) and keeps its
size at any number of servers; the scheduler gives each server its share of a
role's tasks (components/objects/pods.py).

- success: the experiment is done when the chief's Job completes; JobSet then
  deletes every Job still running, so PS and workers end and free their node.
- failure: a lost worker is replaced by its own Job, after that task's own
  back-off (`backoffLimitPerIndex`), and training goes on; a
  lost PS fails its Job (the variables it held are gone), which restarts the
  whole experiment, resuming from the chief's last checkpoint, at most
  `cluster.restarts` times; a failed chief is retried by its own Job
  (`chief.restarts`), and once that is used up the experiment fails. An exit
  code in a role's `failOn` fails the experiment at once; an evicted or
  preempted task never counts against a limit (components/objects/failure_rules.py).
- the evaluator (a fourth replicatedJob, `cluster.evaluator`) never decides the
  outcome: its Job is never in the success policy and never fails (JobSet has no
  rule that ignores a failed Job: RestartJob is alpha), so it is replaced however
  it exits, and deleted with the others when the experiment ends.
- network: every pod has a DNS name under the JobSet's headless Service,
  published before the pod is ready, which TF_CONFIG lists.
- Kueue admits the JobSet as one Workload: all of its pods, or none.
"""

from __future__ import annotations

from typing import Optional

from ..plan import labels as L
from ..plan.experiment import Experiment
from ..plan.workloads import TaskGroup
from ..spec.task_roles import role_of
from .failure_rules import jobset_failure_rules, pod_failure_policy
from .manifests import chief_deadline, metadata
from .pods import CONTAINER_NAME, Manifest, pod_template

JOBSET_API = "jobset.x-k8s.io/v1alpha2"
KUEUE_API = "kueue.x-k8s.io/v1beta1"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
# pulumi-kubernetes (v4.18+) waits for this JSONPath to exist on the object, instead of its own readiness rule.
WAIT_FOR = "pulumi.com/waitFor"
CREATED = "jsonpath={.status.replicatedJobsStatus}"
DELETION_POLICY = "pulumi.com/deletionPropagationPolicy"
# A worker's Job replaces it however often it is lost: an experiment never
# fails for one worker, the coordinator just schedules its steps elsewhere.
WORKER_BACKOFF_LIMIT = 2**31 - 1
# `done: workers`: how often one worker is retried before the experiment fails (as the chief's default).
FINISHING_WORKER_RETRIES = 6


def jobset(experiment: Experiment) -> Manifest:
    cluster = experiment.config.cluster
    finisher = _finishing_group(experiment)
    meta = metadata(experiment, experiment.names.jobset)
    if cluster.queue is not None:
        meta["labels"][QUEUE_LABEL] = experiment.names.local_queue
    # `pulumi up` waits until the JobSet controller took the experiment in (it made its Jobs,
    # which run at once, or wait suspended while Kueue queues them), not for training to end.
    # Not skipAwait: replacing a changed experiment must wait until the old JobSet is gone.
    meta["annotations"] = {
        WAIT_FOR: CREATED,
        # Deleted after its Jobs, pods and Kueue Workload: Kueue lets a queued experiment in when
        # a Workload goes only while that Workload's LocalQueue still exists (seen on the local
        # cluster), and the LocalQueue, which the JobSet depends on, goes after it.
        DELETION_POLICY: "foreground",
    }
    return {
        "apiVersion": JOBSET_API,
        "kind": "JobSet",
        "metadata": meta,
        "spec": {
            "network": {"enableDNSHostnames": True, "publishNotReadyAddresses": True},
            # JobSet's webhook would default it at creation, and a later apply that leaves it out
            # would remove it again: an unchanged experiment must apply as no change at all.
            "startupPolicy": {"startupPolicyOrder": "AnyOrder"},
            **(
                {"ttlSecondsAfterFinished": cluster.ttl_seconds_after_finished}
                if cluster.ttl_seconds_after_finished is not None
                else {}
            ),
            "successPolicy": _success_policy(finisher),
            "failurePolicy": {
                "maxRestarts": cluster.restarts,
                # Every task of the previous attempt is gone before the next starts:
                # never two PS of one index serving at once.
                "restartStrategy": "BlockingRecreate",
                "rules": jobset_failure_rules(experiment, finisher, CONTAINER_NAME),
            },
            "replicatedJobs": [
                {"name": group.name, "replicas": 1, "template": _job_template(experiment, group)}
                for group in experiment.groups
            ],
        },
    }


def local_queue(experiment: Experiment) -> Optional[Manifest]:
    """The namespace's queue into the stack's ClusterQueue, when the stack names one."""
    cluster_queue = experiment.config.cluster.queue
    if cluster_queue is None:
        return None
    return {
        "apiVersion": KUEUE_API,
        "kind": "LocalQueue",
        "metadata": metadata(experiment, experiment.names.local_queue),
        "spec": {"clusterQueue": cluster_queue},
    }


def _finishing_group(experiment: Experiment) -> TaskGroup:
    """The group whose end is the experiment's: the chief's, or the workers' where the plan has
    no chief (a TF1 between-graph program, `done: workers`: components/plan/planner.py)."""
    role = experiment.plan.deciding_role()
    return next(group for group in experiment.groups if group.task_type == role.name)


def _success_policy(finisher: TaskGroup) -> Manifest:
    """Done when the chief's Job completes, or the workers' (`done: workers`, or `{workers: N}`
    by the Job's own success policy); JobSet then stops every other task and frees its server.
    The group is one Job either way: Any and All differ only in what they say."""
    return {
        "operator": "Any" if role_of(finisher.task_type).one_task else "All",
        "targetReplicatedJobs": [finisher.name],
    }


def _workers_success_policy(experiment: Experiment, group: TaskGroup) -> Manifest:
    """`done: {workers: N}`: the workers' Job completes once N of its tasks exited 0, whichever
    they are; `done: worker-0`, once worker 0 has (its completion index 0: the group's first task).
    The Job controller then stops the rest (Kubernetes' Job success policy, GA in 1.33)."""
    program = experiment.program
    if group != _finishing_group(experiment) or program is None or program.has_chief:
        return {}
    if program.worker_0_decides:
        return {"successPolicy": {"rules": [{"succeededIndexes": "0"}]}}
    needed = program.workers_to_finish(group.count)
    return {} if needed == group.count else {"successPolicy": {"rules": [{"succeededCount": needed}]}}


def _job_template(experiment: Experiment, group: TaskGroup) -> Manifest:
    return {
        "metadata": {"labels": L.group_labels(experiment.stack, group)},
        "spec": {
            # Completion index i runs task `first index + i` (trainer/cluster.py).
            "completionMode": "Indexed",
            "completions": group.count,
            "parallelism": group.count,
            **_retry_limits(experiment, group),
            **(chief_deadline(experiment) if role_of(group.task_type).has_deadline else {}),
            **_workers_success_policy(experiment, group),
            # A replacement starts only once the pod it replaces is gone: never two pods of one task.
            "podReplacementPolicy": "Failed",
            **pod_failure_policy(experiment, group, CONTAINER_NAME),
            "template": pod_template(experiment, group),
        },
    }


def _retry_limits(experiment: Experiment, group: TaskGroup) -> Manifest:
    """How often a group's Job replaces a failed pod, and so how long it waits first.

    The Job controller waits before replacing a failed or deleted pod: 10 s, doubled for each
    failure it counted before, at most 10 minutes. With `backoffLimit` alone it counts the failures
    of the whole Job, so a worker lost after another of its group waited twice as long. With
    `backoffLimitPerIndex` it counts each task's own: a lost worker is back after 10 s however
    many others were lost before it, and a worker that keeps failing by itself (or is lost again
    and again) still waits longer each time, so a broken program does not spin.
    """
    role = role_of(group.task_type)
    if role.retries == "stack":
        return {"backoffLimit": experiment.config.cluster.chief.restarts}
    if role.retries == "never":
        return {"backoffLimit": 0}  # a lost PS fails its Job, and the JobSet restarts the experiment
    if group == _finishing_group(experiment):
        # Without a chief, each worker must finish: one that keeps failing fails the experiment.
        return {
            "backoffLimit": WORKER_BACKOFF_LIMIT,
            "backoffLimitPerIndex": FINISHING_WORKER_RETRIES,
            "maxFailedIndexes": 0,  # the Job fails at once, not when the other workers are done
        }
    return {"backoffLimit": WORKER_BACKOFF_LIMIT, "backoffLimitPerIndex": WORKER_BACKOFF_LIMIT}
