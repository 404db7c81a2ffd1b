"""A local run's bottleneck finding (`make report`): the rules of `diagnose`
(components/insight/), fed what this machine measured while the chief trained.

Each task's CPU cores are sampled from /proc (trainer/local/cpu_sampling.py), each allowed its
role's CPU request in the stack scaled to this machine (trainer/local/stacks.py cpu_allowance);
the one server is this machine, with its cores; the stack's shape is its `python -m components
export` (its `cluster`), with the run's partition.
"""

from __future__ import annotations

import os
from typing import Any, Optional

from components.insight.bottleneck import diagnose
from components.insight.experiment_shape import experiment_shape
from components.insight.report_findings import finding_json, local_measurements, no_finding

from ..local.stacks import cpu_allowance
from ..stack_export import StackExport

CHIEF = "chief"


def local_allowance(export: StackExport, ps: int, workers: int, cores: float) -> Optional[dict[str, float]]:
    """Each role's cores on this machine for a run of `ps` PS and `workers` workers (and the chief)."""
    cluster = export.cluster
    if cluster is None:
        return None
    requests = {"ps": cluster.ps_cpu_cores, "worker": cluster.worker_cpu_cores, CHIEF: cluster.chief_cpu_cores}
    return cpu_allowance(requests, {"ps": ps, "worker": workers, CHIEF: 1}, cores)


def local_diagnosis(
    export: Optional[StackExport], partition: str, ps: int, workers: int, summary: dict[str, Any]
) -> dict[str, Any]:
    """A local run's finding, from the launcher's summary (its `task_cpu`, `bytes_per_ps`)."""
    task_cpu = summary.get("task_cpu")
    if export is None:
        return no_finding("the run has no stack to judge it by")
    cores = os.cpu_count() or 1
    shape = experiment_shape(export, partition)
    allowance = local_allowance(export, ps, workers, cores)
    if shape is None or allowance is None:
        return no_finding(
            f"stack '{export.stack}': its export has no 'cluster' (the CPU each task requests): "
            "`python -m components export` of this checkout writes it"
        )
    if not task_cpu or not task_cpu.get("samples"):
        return no_finding("no CPU sample while the chief trained (it finished within a second of the first call)")
    measured = local_measurements(task_cpu, allowance, cores, summary.get("bytes_per_ps"))
    return finding_json(diagnose(measured, shape), measured, task_cpu.get("every_s"))
