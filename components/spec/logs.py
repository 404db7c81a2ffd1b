"""`tfk8s:logs`: an archive of every task's log that outlives the task's pod, read with
`python -m components logs <stack> TASK` once the pod is gone (components/objects/log_archive.py
builds it; trainer/log_shipper.py and trainer/log_collector.py run it).

Bounded: each task keeps its last KEPT_RUNS runs (a retried task's earlier pod is its previous
run), each run its newest `run_bytes` bytes, so the archive never outgrows `size`.
"""

from __future__ import annotations

from typing import Optional

from pydantic import Field

from .model_base import StackModel as _Model
from .quantities import CpuQuantity, DnsSubdomain, MemoryQuantity, Quantity

# The collector's ports: tasks send to the first; the second answers on its pod's loopback only,
# reached through a port-forward.
INGEST_PORT = 9470
READ_PORT = 9471
# The runs each task keeps: its last and the one before (`logs --previous`).
KEPT_RUNS = 2
# Room under `size` for the folders and the runs list of each task.
SIZE_USED = 0.9
# The least a run keeps: under it, a task's last lines would not say why it ended.
MIN_RUN_BYTES = 64 * 2**10
# Where each task finds the shipper, and the collector its own code (trainer/log_protocol.py names the files).
CODE_MOUNT = "/opt/tfk8s-logs"


class LogsSpec(_Model):
    size: Quantity = Field(
        default="1Gi",
        description=f"the whole archive: each task keeps its last {KEPT_RUNS} runs, the newest "
        f"size / (tasks x {KEPT_RUNS}) bytes of each",
    )
    storage_class: Optional[DnsSubdomain] = Field(
        default=None,
        description="keep the archive on a PersistentVolumeClaim of this StorageClass, which outlives the "
        "collector's pod (default: the collector pod's own emptyDir: kept until `pulumi destroy` unless that pod "
        "is replaced: evicted, its server lost, or a `pulumi up` that changes it, as a new image, number of "
        "tasks or collector code does)",
    )
    cpu: CpuQuantity = Field(default="100m", description="CPU request of the collector's pod")
    memory: MemoryQuantity = Field(default="128Mi", description="memory request and limit of the collector's pod")
