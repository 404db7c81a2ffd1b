"""The roles of a stack file's cluster: the PS, the workers, the chief (its checkpoint volume) and
the evaluator, with the tolerations and exit-code rules every role takes."""

from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import Field, model_validator

from .exit_codes import FAIL_ON_HELP, FailOn
from .model_base import StackModel as _Model
from .quantities import INT64_MAX, CpuQuantity, DnsLabel, DnsSubdomain, MemoryQuantity, StorageQuantity
from .trainer_contract import LARGEST_NUMBER as INT32_MAX

# The task roles a stack file configures; components/spec/task_roles.py holds each one's traits.
RoleName = Literal["chief", "ps", "worker", "evaluator"]

# Where the chief's checkpointVolume is mounted, in the chief and in what reads it.
CHECKPOINT_MOUNT = "/checkpoints"


def is_remote(path: str) -> bool:
    """A URL TensorFlow's file system reads (gs://, s3://, hdfs://), not a path in a pod."""
    return "://" in path


def checkpoint_volume_folder(path: str) -> Optional[str]:
    """The folder of the chief's checkpoint volume that a normalised path in a pod names, relative to
    the volume ('' for its root); None for a path elsewhere or a remote URL. The one rule TensorBoard's
    pod, the evaluator's writable mount and the stack's checks follow."""
    if is_remote(path):
        return None
    if path == CHECKPOINT_MOUNT:
        return ""
    if path.startswith(f"{CHECKPOINT_MOUNT}/") and ".." not in path.split("/"):
        return path[len(CHECKPOINT_MOUNT) + 1 :]
    return None


TolerationOperator = Literal["Exists", "Equal"]
TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class Toleration(_Model):
    """A Kubernetes toleration, as a pod spec writes it."""

    key: Optional[str] = Field(default=None, min_length=1, description="taint key (unset with Exists: every taint)")
    operator: TolerationOperator = Field(default="Equal", description="Equal (key and value) or Exists (key only)")
    value: Optional[str] = Field(default=None, description="taint value, with operator Equal")
    effect: Optional[TaintEffect] = Field(default=None, description="the taint effect tolerated (unset: every effect)")
    toleration_seconds: Optional[int] = Field(
        default=None,
        strict=True,
        ge=0,
        le=INT64_MAX,
        description="with NoExecute: how long the pod stays after the taint",
    )

    @model_validator(mode="after")
    def _consistent(self) -> "Toleration":
        if self.operator == "Exists" and self.value is not None:
            raise ValueError("operator Exists takes no value; drop value or use operator Equal")
        if self.operator == "Equal" and self.key is None:
            raise ValueError("operator Equal needs a key")
        if self.toleration_seconds is not None and self.effect != "NoExecute":
            raise ValueError("tolerationSeconds applies to effect NoExecute only")
        return self

    def manifest(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_none=True)


Tolerations = tuple[Toleration, ...]
TOLERATIONS_HELP = "tolerations of this role's pods, added to tfk8s's own (GPU workers tolerate nvidia.com/gpu)"


class PsSpec(_Model):
    replicas: Optional[int] = Field(
        default=None,
        strict=True,
        ge=0,
        description="parameter servers; may be left to cluster.ratio; 0: workers only (a team's program, e.g. "
        "MultiWorkerMirroredStrategy)",
    )
    pool: Optional[DnsLabel] = Field(
        default=None,
        description="node pool the PS run in (required with PS; colocated PS take the workers' pool where it is "
        "left out)",
    )
    cpu: CpuQuantity = Field(
        default="2", description="CPU request of each PS (no CPU limit: a limit throttles TensorFlow's threads)"
    )
    memory: Optional[MemoryQuantity] = Field(
        default=None,
        description="memory request and limit of each PS; derived from tfk8s's trainer's model when unset "
        "(required with tfk8s:program)",
    )
    tolerations: Tolerations = Field(default=(), description=TOLERATIONS_HELP)
    fail_on: FailOn = Field(default=(), description=FAIL_ON_HELP)


class WorkerSpec(_Model):
    replicas: int = Field(strict=True, ge=1, description="workers")
    pool: DnsLabel = Field(description="node pool the workers run in")
    gpus: int = Field(default=0, strict=True, ge=0, le=INT32_MAX, description="nvidia.com/gpu per worker (0: CPU only)")
    cpu: CpuQuantity = Field(
        default="1", description="CPU request of each worker (no CPU limit: a limit throttles TensorFlow's threads)"
    )
    memory: MemoryQuantity = Field(default="2Gi", description="memory request and limit of each worker")
    tolerations: Tolerations = Field(default=(), description=TOLERATIONS_HELP)
    fail_on: FailOn = Field(default=(), description=FAIL_ON_HELP)


class CheckpointVolumeSpec(_Model):
    size: StorageQuantity = Field(description="storage the chief's checkpoint volume requests (e.g. 20Gi)")
    storage_class: Optional[DnsSubdomain] = Field(
        default=None, description="StorageClass of the volume (default: the cluster's default class)"
    )
    keep: bool = Field(
        default=True,
        strict=True,
        description="true: `pulumi destroy` keeps the claim, the trained model, (and a namespace tfk8s created, "
        "which holds it), and the next `pulumi up` of the stack resumes from its last checkpoint; false: the "
        "checkpoints are deleted with the experiment",
    )


class ChiefSpec(_Model):
    cpu: CpuQuantity = Field(
        default="1", description="CPU request of the chief (no CPU limit: a limit throttles TensorFlow's threads)"
    )
    memory: Optional[MemoryQuantity] = Field(
        default=None,
        description="memory request and limit of the chief (default: derived from the checkpoint it writes, at least "
        "2Gi)",
    )
    restarts: int = Field(
        default=6,
        strict=True,
        ge=0,
        le=INT32_MAX,
        description="times the chief is restarted (from its checkpoint) before the Job fails",
    )
    checkpoint_volume: Optional[CheckpointVolumeSpec] = Field(
        default=None,
        description="a PersistentVolumeClaim for the chief's checkpoints, so they outlive the chief's pod",
    )
    active_deadline_seconds: Optional[int] = Field(
        default=None,
        strict=True,
        ge=1,
        le=INT64_MAX,
        description="seconds the chief's Job may run in all before it fails (and the experiment with it): "
        "a hung chief otherwise runs forever (default: no deadline)",
    )
    tolerations: Tolerations = Field(default=(), description=TOLERATIONS_HELP)
    fail_on: FailOn = Field(default=(), description=FAIL_ON_HELP)


class EvaluatorSpec(_Model):
    """TensorFlow's side-car evaluator: one task outside the training cluster that follows the chief's
    checkpoints. It never decides the experiment's outcome: restarted alone whatever its exit, never
    counted toward `done`, stopped when the experiment ends."""

    replicas: int = Field(default=1, strict=True, ge=0, le=1, description="1: run the evaluator; 0: none")
    pool: Optional[DnsLabel] = Field(
        default=None,
        description="node pool it runs in (default: workers.pool; the chief's with chief.checkpointVolume, where "
        "it runs on the chief's server, or with GPU workers)",
    )
    cpu: CpuQuantity = Field(
        default="1", description="CPU request of the evaluator (no CPU limit: a limit throttles TensorFlow's threads)"
    )
    memory: Optional[MemoryQuantity] = Field(
        default=None,
        description="memory request and limit of the evaluator (default: tfk8s's trainer's as the chief's, since it "
        "loads each whole checkpoint; 2Gi for a team's program)",
    )
    tolerations: Tolerations = Field(default=(), description=TOLERATIONS_HELP)
