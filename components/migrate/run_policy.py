"""A TFJob's run policy in tfk8s's terms: restart policies and backoffLimit as `restarts` and
`failOn`, the deadline, Kueue's queue and priority, successPolicy; the rest listed as not carried."""

from __future__ import annotations

from typing import Any

from .containers import RoleView
from .tfjob import LEGACY_RUN_KEYS, Note, TFJob

RESTARTING = ("OnFailure", "Always")
# What a TFJob replica without restartPolicy gets from TFJob's controller.
TFJOB_RESTART_POLICY = "Never"
# TFJob's `restartPolicy: ExitCode`: exit codes 1-127 are permanent (the TFJob fails), 128 and up
# (a signal: killed, evicted) are retried.
PERMANENT_EXIT_CODES = ["1-127"]


def carry_run_policy(
    job: TFJob,
    roles: dict[str, RoleView],
    cluster: dict[str, Any],
    comments: dict,
    notes: list[Note],
    sources: dict[str, str],
) -> None:
    """Restart policies, backoffLimit, the deadline, Kueue's queue and the priority, where tfk8s has the
    same meaning; `sources` gets the TFJob field each value came from, by its stack path."""
    # Early v1 TFJobs set these in spec; later ones in spec.runPolicy.
    where_of = {key: f"spec.{key}" for key in LEGACY_RUN_KEYS if key in job.spec}
    where_of |= {key: f"spec.runPolicy.{key}" for key in job.spec.get("runPolicy") or {}}
    run = {key: job.spec.get(key, (job.spec.get("runPolicy") or {}).get(key)) for key in where_of}
    backoff = run.get("backoffLimit")
    for role, where in (("chief", ("chief",)), ("ps", ())):
        view = roles.get(role)
        if view is None:
            continue
        policy = view.replica.restart_policy or TFJOB_RESTART_POLICY
        restarts = 0 if policy == "Never" else backoff if policy in RESTARTING else None
        if policy == "ExitCode":
            _fail_on_permanent_codes(cluster["chief"] if where else cluster["ps"], view, comments, role)
        if restarts is not None:
            target = cluster["chief"] if where else cluster
            target["restarts"] = restarts
            from_backoff = policy in RESTARTING and "backoffLimit" in where_of
            sources[f"tfk8s:cluster.{'chief.' if where else ''}restarts"] = (
                where_of["backoffLimit"] if from_backoff else f"{view.replica.path}.restartPolicy"
            )
            default = "" if view.replica.restart_policy else " (TFJob's default)"
            comments[("tfk8s:cluster", *(where or ("restarts",)))] = (
                f"From the TFJob's {view.replica.path.rsplit('.', 1)[1]} restartPolicy {policy}{default}"
                + (f" and backoffLimit {backoff}." if policy in RESTARTING else ".")
            )
    worker_policy = roles["worker"].replica.restart_policy or TFJOB_RESTART_POLICY
    if worker_policy == "ExitCode":
        _fail_on_permanent_codes(cluster["workers"], roles["worker"], comments, "workers")
    elif worker_policy not in RESTARTING:
        notes.append(
            Note(
                f"{roles['worker'].replica.path}.restartPolicy",
                f"{worker_policy}: tfk8s restarts a failed worker alone (its Job retries it, whatever the exit code)",
            )
        )
    evaluator = roles.get("evaluator")
    if evaluator is not None and evaluator.replica.restart_policy not in (None, *RESTARTING):
        notes.append(
            Note(
                f"{evaluator.replica.path}.restartPolicy",
                f"{evaluator.replica.restart_policy}: tfk8s restarts a failed evaluator alone, whatever its exit code; "
                "it never fails the experiment",
            )
        )
    deadline = run.get("activeDeadlineSeconds")
    if deadline is not None:
        if "chief" in cluster:
            cluster["chief"]["activeDeadlineSeconds"] = deadline
            sources["tfk8s:cluster.chief.activeDeadlineSeconds"] = where_of["activeDeadlineSeconds"]
        else:
            notes.append(
                Note(
                    where_of["activeDeadlineSeconds"],
                    "tfk8s's deadline is the chief's, and this TFJob has no chief (done: workers)",
                )
            )
    scheduling = run.get("schedulingPolicy") or {}
    if scheduling.get("queue"):
        cluster["queue"] = scheduling["queue"]
        sources["tfk8s:cluster.queue"] = "spec.runPolicy.schedulingPolicy.queue"
        comments[("tfk8s:cluster", "queue")] = "A Kueue ClusterQueue: Kueue admits the whole experiment or none of it."
    if scheduling.get("priorityClass"):
        cluster["priorityClass"] = scheduling["priorityClass"]
        sources["tfk8s:cluster.priorityClass"] = "spec.runPolicy.schedulingPolicy.priorityClass"
    for key in sorted(set(scheduling) - {"queue", "priorityClass"}):
        notes.append(
            Note(
                f"spec.runPolicy.schedulingPolicy.{key}",
                "with tfk8s:cluster.queue, Kueue admits the whole "
                "experiment at once; tfk8s has no gang scheduler settings",
            )
        )
    instead = {
        "cleanPodPolicy": "JobSet ends the PS and workers when the experiment ends; `pulumi destroy` removes the rest",
        "suspend": "`pulumi up` starts the experiment",
    }
    if run.get("ttlSecondsAfterFinished") is not None:
        cluster["ttlSecondsAfterFinished"] = run["ttlSecondsAfterFinished"]
        sources["tfk8s:cluster.ttlSecondsAfterFinished"] = where_of["ttlSecondsAfterFinished"]
    carried = {"backoffLimit", "activeDeadlineSeconds", "schedulingPolicy", "ttlSecondsAfterFinished"}
    for key in sorted(set(run) - carried):
        notes.append(Note(where_of[key], instead.get(key, "tfk8s does not know this field")))
    # successPolicy is carried (tfjob.py refuses a value TFJob does not take): TFJob ignores it when it
    # has a chief, as tfk8s does; without one, its default ("") is `done: worker-0` and `AllWorkers`
    # is `done: workers` (carry.py).
    spec_instead = {"enableDynamicWorker": "the number of workers is the stack's tfk8s:cluster.workers.replicas"}
    for key in sorted(set(job.spec) - {"tfReplicaSpecs", "runPolicy", "successPolicy", *LEGACY_RUN_KEYS}):
        notes.append(Note(f"spec.{key}", spec_instead.get(key, "tfk8s does not know this field")))


def _fail_on_permanent_codes(role: dict[str, Any], view: RoleView, comments: dict, key: str) -> None:
    role["failOn"] = PERMANENT_EXIT_CODES
    comments[("tfk8s:cluster", key, "failOn")] = (
        f"From the TFJob's {view.replica.path.rsplit('.', 1)[1]} restartPolicy ExitCode: exits 1-127 end the\n"
        "experiment, 128 and up (a signal) are retried. An evicted task is replaced and never counts."
    )
