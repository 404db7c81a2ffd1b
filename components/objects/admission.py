"""Whether Kueue could ever admit a queued experiment: what its JobSet asks for against the most its
ClusterQueue could ever lend it (pure; components/resources/admission.py reads the ClusterQueue).

Kueue admits a Workload whole or not at all, and only within its ClusterQueue's quota: what each
flavor's `nominalQuota` gives, plus its `borrowingLimit` when the queue is in a cohort (without a
limit, a cohort lends without bound). A resource the queue does not cover at all is one Kueue
cannot assign (its "resource ... unavailable in ClusterQueue"). An experiment that asks for more
waits forever with no pod and no error: it is refused before anything is created instead.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Optional

from ..plan.experiment import Experiment
from ..spec.quantities import QUANTITY_PATTERN, quantity_value
from ..spec.sizing import mebibytes
from .jobset import jobset

Manifest = dict[str, Any]
UNBOUNDED = float("inf")


def requested(experiment: Experiment) -> dict[str, float]:
    """Resource -> what the whole experiment requests, as Kueue sums its pod sets (a request left out
    is its limit, as Kubernetes defaults it)."""
    totals: dict[str, float] = {}
    for replicated in jobset(experiment)["spec"]["replicatedJobs"]:
        job = replicated["template"]["spec"]
        pods = replicated["replicas"] * job.get("parallelism", 1)
        for container in job["template"]["spec"]["containers"]:
            resources = container.get("resources", {})
            asked = {**resources.get("limits", {}), **resources.get("requests", {})}
            for resource, amount in asked.items():
                totals[resource] = totals.get(resource, 0.0) + pods * quantity_value(str(amount))
    return {resource: amount for resource, amount in totals.items() if amount > 0}


def lendable(cluster_queue: Mapping[str, Any]) -> dict[str, float]:
    """Resource -> the most the ClusterQueue could ever give one Workload (UNBOUNDED where a cohort
    lends without a limit, or a quota is written in a form not read here)."""
    spec = cluster_queue.get("spec") or {}
    in_cohort = bool(spec.get("cohort") or spec.get("cohortName"))
    most: dict[str, float] = {}
    for group in spec.get("resourceGroups") or ():
        for flavor in group.get("flavors") or ():
            for quota in flavor.get("resources") or ():
                name = quota.get("name")
                amount = _amount(quota.get("nominalQuota", 0))
                if in_cohort:
                    limit = quota.get("borrowingLimit")
                    amount += UNBOUNDED if limit is None else _amount(limit)
                most[name] = most.get(name, 0.0) + amount
    return most


def _amount(value: Any) -> float:
    text = str(value)
    return quantity_value(text) if re.match(QUANTITY_PATTERN, text) else UNBOUNDED


def never_admitted(experiment: Experiment, cluster_queue: Optional[Mapping[str, Any]]) -> Optional[str]:
    """Why Kueue could never admit the experiment through its queue, naming the stack and the field;
    None when it could."""
    queue = experiment.config.cluster.queue
    if queue is None:
        return None
    where = f"stack '{experiment.stack}': tfk8s:cluster.queue '{queue}'"
    if cluster_queue is None:
        return (
            f"{where}: the cluster has no such ClusterQueue (or no Kueue), so the experiment would wait "
            "forever with no pod; create it, or name one the cluster has"
        )
    most = lendable(cluster_queue)
    short = [
        f"{resource} {_shown(resource, amount)} (the queue lends at most {_shown(resource, most.get(resource, 0.0))})"
        for resource, amount in sorted(requested(experiment).items())
        if amount > most.get(resource, 0.0)
    ]
    if not short:
        return None
    return (
        f"{where}: Kueue could never admit this experiment, which asks for {'; '.join(short)}; "
        "ask for less (fewer or smaller tasks) or raise the ClusterQueue's quota"
    )


def _shown(resource: str, amount: float) -> str:
    if amount == UNBOUNDED:
        return "unbounded"
    if resource in ("memory", "ephemeral-storage"):
        return mebibytes(int(amount))
    if resource == "cpu":
        return f"{amount:g}"
    return f"{amount:.0f}"
