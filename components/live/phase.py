"""An experiment's phase, from its JobSet (or its chief's Job) and its pods (pure, no API calls).

Pending: not all tasks run yet. Queued: Kueue holds the whole experiment (the
JobSet is suspended, no pod exists). Admitted: Kueue let it in, its pods are
starting. Running: every task runs. Restarting (n of max): a lost PS restarted
the experiment n times, and it is not yet running again. Succeeded: the chief
completed. Failed: restarts used up, or the chief's own retries.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence

PHASES = ("Pending", "Queued", "Admitted", "Running", "Restarting", "Succeeded", "Failed")


@dataclass(frozen=True)
class Phase:
    name: str  # one of PHASES
    detail: str = ""  # "2 of 3" for Restarting, why for Failed, the chief's summary for Succeeded

    def __str__(self) -> str:
        return f"{self.name} ({self.detail})" if self.detail else self.name


def jobset_phase(
    jobset: Optional[Mapping[str, Any]],
    queued: bool,
    all_running: bool,
    max_restarts: int,
    removed_after_s: Optional[int] = None,
) -> Phase:
    """`jobset`: the JobSet as the API server returns it (None: not created yet, or removed
    `removed_after_s` after it ended, its ttlSecondsAfterFinished); `queued`: the experiment names a
    Kueue queue; `all_running`: every task's pod runs."""
    if jobset is None:
        if removed_after_s is not None:
            return Phase(
                "Pending",
                f"no JobSet: not created yet, or removed {removed_after_s} s after it ended (ttlSecondsAfterFinished)",
            )
        return Phase("Pending", "no JobSet yet")
    status = jobset.get("status") or {}
    terminal = status.get("terminalState")
    if terminal == "Completed":
        return Phase("Succeeded")
    if terminal == "Failed":
        return Phase("Failed", _condition_message(status, "Failed"))
    if (jobset.get("spec") or {}).get("suspend"):
        return Phase("Queued" if queued else "Pending", "waiting for Kueue to admit it" if queued else "suspended")
    restarts = int(status.get("restarts") or 0)
    if all_running:
        return Phase("Running")
    if restarts:
        # An evicted or preempted PS restarts the experiment without using up `cluster.restarts`
        # (JobSet leaves the count out while it is 0).
        counted = int(status.get("restartsCountTowardsMax") or 0)
        uncounted = f", and {restarts - counted} after a disruption, not counted" if restarts > counted else ""
        return Phase("Restarting", f"{counted} of {max_restarts}{uncounted}")
    return Phase("Admitted" if queued else "Pending")


def queued_detail(workloads: Sequence[Mapping[str, Any]], events: Sequence[Any]) -> str:
    """Why Kueue holds a queued experiment, from what the cluster says.

    `workloads`: the Kueue Workloads of the experiment's JobSet (Kueue makes one per JobSet);
    `events`: the JobSet's events, newest last. A Workload's QuotaReserved condition says what is
    missing (quota, a ClusterQueue); with no Workload, Kueue's warning on the JobSet says why
    it could make none (an invalid Workload, a LocalQueue it cannot find).
    """
    for workload in workloads:
        for condition in (workload.get("status") or {}).get("conditions") or ():
            if condition.get("type") == "QuotaReserved" and condition.get("status") == "False":
                return f"waiting for Kueue to admit it: {condition.get('message') or condition.get('reason')}"
    if workloads:
        return "waiting for Kueue to admit it"
    warnings = [event for event in events if getattr(event, "type", "") == "Warning"]
    if warnings:
        return f"Kueue has made no Workload for it: {warnings[-1].message}"
    return "waiting for Kueue to make its Workload"


def statefulset_phase(chief_succeeded: bool, chief_failed: bool, all_running: bool) -> Phase:
    """The StatefulSet model: the chief's Job decides; PS and workers go on serving after it."""
    if chief_succeeded:
        return Phase("Succeeded", "PS and workers serve until the experiment is destroyed")
    if chief_failed:
        return Phase("Failed", "the chief's Job used up its retries")
    return Phase("Running" if all_running else "Pending")


def summary_text(summary: Mapping[str, Any]) -> str:
    return (
        f"{summary.get('steps')} steps, final loss {summary.get('loss_last')}, "
        f"{summary.get('examples_per_sec')} examples/s"
    )


def last_error(log: str, lines: int = 1) -> str:
    """The last non-empty lines of a failed task's log: where the trainer says why it stops."""
    kept = [line.strip() for line in log.splitlines() if line.strip()]
    return " | ".join(kept[-lines:])


def _condition_message(status: Mapping[str, Any], kind: str) -> str:
    conditions: Sequence[Mapping[str, Any]] = status.get("conditions") or ()
    for condition in conditions:
        if condition.get("type") == kind and condition.get("status") == "True":
            return condition.get("message") or condition.get("reason") or ""
    return ""
