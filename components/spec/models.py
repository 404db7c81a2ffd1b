"""The stack file's models: node pools, the cluster (its roles: roles.py), the stack.

Frozen pydantic models with camelCase aliases, as a stack file writes its keys;
each field's description is the user documentation of its key.
"""

from __future__ import annotations

from typing import Any, Literal, Mapping, Optional

from pydantic import ConfigDict, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from .durations import Seconds
from .egress import EgressRule
from .images import image_problem
from .logs import LogsSpec
from .model_base import StackModel as _Model
from .namespace import NamespaceSpec
from .pools import NodePoolSpec
from .program import ProgramSpec
from .quantities import DnsLabel, DnsSubdomain
from .ratio import parse_ratio, ps_count_for_ratio
from .roles import ChiefSpec, EvaluatorSpec, PsSpec, RoleName, WorkerSpec
from .shown_values import shown
from .tensorboard import TensorBoardSpec

# Kubernetes' int32 fields (restarts, GPU counts) hold what a trainer setting does: one definition.
from .trainer_contract import LARGEST_NUMBER as INT32_MAX
from .trainer_contract import TrainerSettings

CONFIG_NAMESPACE = "tfk8s"
# The largest experiment tfk8s is tested with: scene1-case4 fifty times over (1,000 servers,
# 1,000 PS, 10,000 workers and the chief), planned, applied and placed (docs/benchmarks.md).
# A stack past it is refused before it is planned: the plan is built task by task.
MAX_TASKS = 11_001
DEFAULT_IMAGE = "tensorflow/tensorflow:2.21.0"

Placement = Literal["colocated", "isolated", "spread"]
# jobset: the experiment is one JobSet that ends with its chief; statefulset: PS
# and workers serve until the experiment is destroyed (clusters without JobSet).
Workload = Literal["jobset", "statefulset"]
# labels: tfk8s labels the pools' nodes and places by its labels (it patches Nodes); hostname: it
# places by the nodes' own kubernetes.io/hostname and writes nothing outside the namespace.
PlaceBy = Literal["labels", "hostname"]


def gpu_build(image: str) -> str:
    """TensorFlow's GPU build of a tagged image: `tensorflow/tensorflow:2.21.0` -> `...:2.21.0-gpu`."""
    return image if image.endswith("-gpu") else f"{image}-gpu"


class StackConfigError(ValueError):
    """A stack file is wrong. The message names the stack, the field and the fix; `problems`, each
    problem of a listing on its own (none for a one-line error)."""

    LISTED = "  - "  # how a listing shows each problem, after its first line

    def __init__(self, message: str, problems: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.problems = problems

    @classmethod
    def listing(cls, stack: str, errors: list[str]) -> "StackConfigError":
        lines = "\n".join(f"{cls.LISTED}{error}" for error in errors)
        return cls(f"stack '{stack}' has an invalid configuration:\n{lines}", tuple(errors))


class ClusterSpec(_Model):
    placement: Placement = Field(
        description="colocated: PS and workers share one pool (seed scene 1); isolated: the PS pool and the "
        "worker pool are disjoint (scene 2); spread: nothing pinned, the scheduler spreads pods, PS kept apart"
    )
    strict: bool = Field(
        default=True,
        strict=True,
        description="pinned tasks require their server (true); false only prefers it, so a lost server does not "
        "strand a task",
    )
    production: bool = Field(
        default=False,
        strict=True,
        description="labels the namespace tfk8s.io/production: true; the policy pack then advises against strict "
        "pinning",
    )
    egress: Optional[tuple[EgressRule, ...]] = Field(
        default=None,
        description="where the experiment's pods may connect besides each other and the cluster's DNS (CoreDNS "
        "pods in kube-system): a list of {cidr, ports, protocol}, anything else refused by a NetworkPolicy "
        "(default: no egress policy, every destination open; [] : only each other and DNS; docs/network.md)",
    )
    ratio: Optional[str] = Field(
        default=None,
        description="'P:W', P parameter servers per W workers ('1:10'), instead of ps.replicas; both given must agree",
    )
    namespace: Optional[NamespaceSpec] = Field(
        default=None,
        description="namespace of the experiment (default tf-<stack>): a name, which tfk8s creates and "
        "`pulumi destroy` deletes (so not default, kube-system, kube-public or kube-node-lease), or "
        "{name, existing: true}, a team's namespace that tfk8s shares (docs/shared-cluster.md)",
    )
    image: str = Field(
        default=DEFAULT_IMAGE,
        min_length=1,
        description="TensorFlow image the trainer runs in, pinned to a tag (not latest) or a digest",
    )
    gpu_image: Optional[str] = Field(
        default=None,
        min_length=1,
        description="image of GPU workers (default: image with '-gpu' appended to its tag, TensorFlow's GPU build); "
        "needed when image is a digest",
    )
    priority_class: Optional[DnsSubdomain] = Field(
        default=None,
        description="PriorityClass of every pod of the experiment (it must exist on the cluster; default: "
        "the cluster's global default)",
    )
    image_pull_secrets: tuple[DnsSubdomain, ...] = Field(
        default=(), description="Secrets in the namespace used to pull the image"
    )
    place_by: PlaceBy = Field(
        default="labels",
        description="labels: tfk8s labels the pools' nodes (pool.tfk8s.io/<stack>, ...; it needs patch on nodes) "
        "and places tasks by those labels; hostname: tasks are placed by each node's own kubernetes.io/hostname "
        "(which must be its name) and the pools' own labels, read, and tfk8s writes nothing outside the namespace "
        "(docs/shared-cluster.md)",
    )
    workload: Workload = Field(
        default="jobset",
        description="jobset: one JobSet that ends when the chief completes (needs JobSet on the cluster); "
        "statefulset: PS and workers serve until the experiment is destroyed",
    )
    restarts: int = Field(
        default=3,
        strict=True,
        ge=0,
        le=INT32_MAX,
        description="times a lost PS restarts the whole experiment (from its last checkpoint) before it fails "
        "(workload jobset)",
    )
    ttl_seconds_after_finished: Optional[int] = Field(
        default=None,
        strict=True,
        ge=0,
        le=INT32_MAX,
        description="seconds after the experiment ended (Succeeded or Failed) when its JobSet, Jobs and pods are "
        "deleted, their logs with them; the rest stays until `pulumi destroy`, kept checkpoints too (needs "
        "workload jobset; default: kept until destroyed)",
    )
    start_deadline: Optional[Seconds] = Field(
        default=None,
        description="how long every task may take to be running together: seconds (1 to 86400), or 90s, "
        "10m, 1h; past it, tasks still not "
        "running (Pending: unschedulable, an image that does not pull) end the experiment Failed, and status "
        "names them and why; needs python3 in the image and workload jobset (default: no limit)",
    )
    queue: Optional[DnsLabel] = Field(
        default=None,
        description="Kueue ClusterQueue that admits the whole experiment at once (workload jobset); "
        "tfk8s creates the LocalQueue 'tfk8s' pointing at it and labels the JobSet for it, so Kueue admits the "
        "whole experiment or none of it",
    )
    ps: PsSpec = Field(
        description="the parameter servers; may be left out after all: with no ratio there are none (workers "
        "only), and under colocated with a ratio they share workers.pool"
    )
    workers: WorkerSpec = Field(description="the workers")
    chief: ChiefSpec = Field(default_factory=ChiefSpec, description="the chief: it builds the model and checkpoints")
    evaluator: Optional[EvaluatorSpec] = Field(
        default=None,
        description="TensorFlow's side-car evaluator: one task, outside the training cluster, that evaluates each "
        "checkpoint the chief writes (chief.checkpointVolume, read-only in its container, or a remote "
        "checkpointDir); placed like the chief, unpinned in its pool; restarted alone, never deciding the "
        "outcome (workload jobset; default: none)",
    )

    @model_validator(mode="before")
    @classmethod
    def _colocated_ps_follow_the_workers(cls, data: Any) -> Any:
        """Colocated PS share the workers' pool by definition, so `ps` (or its pool) may be left out;
        `ps` left out with no ratio to count them: there are none (workers only)."""
        if not isinstance(data, Mapping):
            return data
        if "ps" not in data and data.get("ratio") is None:
            return {**data, "ps": {"replicas": 0}}
        ps = data.get("ps", {})
        if (
            isinstance(ps, Mapping)
            and "pool" not in ps
            and ps.get("replicas") != 0
            and data.get("placement") == "colocated"
            and isinstance(data.get("workers"), Mapping)
            and "pool" in data["workers"]
        ):
            return {**data, "ps": {**ps, "pool": data["workers"]["pool"]}}
        return data

    @field_validator("ratio")
    @classmethod
    def _ratio_form(cls, ratio: Optional[str]) -> Optional[str]:
        if ratio is not None:
            parse_ratio(ratio)
        return ratio

    @field_validator("namespace", mode="before")
    @classmethod
    def _namespace_by_name(cls, namespace: Any) -> Any:
        """The string form names a namespace tfk8s creates, as it always has."""
        if isinstance(namespace, str):
            return {"name": namespace}
        if namespace is not None and not isinstance(namespace, (Mapping, NamespaceSpec)):
            raise PydanticCustomError(
                "string_type", "should be a namespace's name, or {name: <namespace>, existing: true} for a team's"
            )
        return namespace

    @field_validator("image", "gpu_image")
    @classmethod
    def _image_pinned(cls, image: Optional[str]) -> Optional[str]:
        if image is not None and (problem := image_problem(image)) is not None:
            raise ValueError(f"image {shown(image)} {problem}")
        return image

    @field_validator("priority_class")
    @classmethod
    def _not_the_clusters_own(cls, priority_class: Optional[str]) -> Optional[str]:
        # The API server admits system-* classes only in kube-system, and tasks of that priority
        # would preempt the cluster's own components (the policy pack refuses them too).
        if priority_class is not None and priority_class.startswith("system-"):
            raise ValueError(
                f"'{priority_class}' is one of the cluster's own PriorityClasses (system-*); name one "
                "created for experiments"
            )
        return priority_class

    @property
    def worker_image(self) -> str:
        """What workers run: the GPU build when they have GPUs (the CPU build would leave them idle)."""
        if not self.workers.gpus:
            return self.image
        return self.gpu_image or gpu_build(self.image)

    def pool_of(self, task_type: RoleName) -> str:
        """The node pool of a task type's tasks."""
        pools = {
            "chief": self.chief_pool,
            "ps": self.ps_pool,
            "worker": self.workers.pool,
            "evaluator": self.evaluator_pool,
        }
        return pools[task_type]

    def role(self, task_type: RoleName) -> "ChiefSpec | PsSpec | WorkerSpec | EvaluatorSpec":
        """The settings of a task type's role (a `worker` task's are `workers`)."""
        roles: dict[str, ChiefSpec | PsSpec | WorkerSpec | EvaluatorSpec] = {
            "chief": self.chief,
            "ps": self.ps,
            "worker": self.workers,
        }
        if self.evaluator is not None:
            roles["evaluator"] = self.evaluator
        return roles[task_type]

    @property
    def evaluator_count(self) -> int:
        return self.evaluator.replicas if self.evaluator is not None else 0

    @property
    def evaluator_pool(self) -> str:
        """Where the evaluator runs: its pool, else the chief's when it reads the chief's volume (a
        ReadWriteOnce claim is mounted on one server) or the workers have GPUs (it asks none, and a
        GPU pool's taint would keep it out), else the workers'."""
        if self.evaluator is not None and self.evaluator.pool is not None:
            return self.evaluator.pool
        if self.chief.checkpoint_volume is not None or self.workers.gpus:
            return self.chief_pool
        return self.workers.pool

    @model_validator(mode="after")
    def _jobset_only_settings(self) -> "ClusterSpec":
        if self.workload == "statefulset":
            given = sorted({"queue", "restarts"} & self.model_fields_set)
            if given:
                raise ValueError(
                    f"{' and '.join(given)} need workload: jobset (Kueue admits and JobSet restarts "
                    "a JobSet); drop them or use workload: jobset"
                )
            ended = [
                key
                for key, value in (
                    ("startDeadline", self.start_deadline),
                    ("ttlSecondsAfterFinished", self.ttl_seconds_after_finished),
                    ("evaluator", self.evaluator_count or None),
                )
                if value is not None
            ]
            if ended:
                raise ValueError(
                    f"{' and '.join(ended)} need{'s' if len(ended) == 1 else ''} workload: jobset (a StatefulSet's "
                    "PS and workers serve until "
                    "destroyed, they never end); drop them or use workload: jobset"
                )
            failing = [f"{role}.failOn" for role, spec in (("ps", self.ps), ("workers", self.workers)) if spec.fail_on]
            if failing:
                raise ValueError(
                    f"{' and '.join(failing)} need workload: jobset (a StatefulSet restarts its pods whatever "
                    "their exit code); drop them or use workload: jobset"
                )
        return self

    @model_validator(mode="after")
    def _ps_count_known(self) -> "ClusterSpec":
        if self.ps.replicas is None and self.ratio is None:
            raise ValueError("set ps.replicas or ratio ('1:10' means one PS per ten workers)")
        if self.ps.pool is None and self.ps.replicas != 0:
            raise ValueError("ps.pool: required with PS (ps.replicas: 0 runs workers only)")
        if self.ps.replicas == 0 and self.placement == "isolated":
            raise ValueError(
                "placement: isolated keeps the PS' servers apart from the workers', and there are no PS "
                "(ps.replicas: 0, or ps and ratio left out: workers only); use colocated (or spread)"
            )
        if self.ps.replicas is not None and self.ratio is not None:
            implied = ps_count_for_ratio(self.ratio, self.workers.replicas)
            if implied != self.ps.replicas:
                raise ValueError(
                    f"ratio '{self.ratio}' with {self.workers.replicas} workers means "
                    f"{implied} PS, but ps.replicas is {self.ps.replicas}; drop one or make them agree"
                )
        return self

    @property
    def ps_count(self) -> int:
        if self.ps.replicas is not None:
            return self.ps.replicas
        assert self.ratio is not None
        return ps_count_for_ratio(self.ratio, self.workers.replicas)

    @property
    def ps_pool(self) -> str:
        """The PS' pool; with no PS (workers only), the workers', where the plan puts nothing else."""
        return self.ps.pool or self.workers.pool

    @property
    def chief_pool(self) -> str:
        """Where the chief runs: the PS' pool (the coordinator talks to every PS), never pinned."""
        return self.ps_pool


class StackConfig(_Model):
    stack: str = Field(description="the stack's name (Pulumi.<stack>.yaml), not a key of the file")
    node_pools: tuple[NodePoolSpec, ...] = Field(description="servers the experiment may use")
    cluster: ClusterSpec = Field(description="the TF cluster: placement, PS, workers, chief, lifecycle")
    trainer: TrainerSettings = Field(description="what tfk8s's own trainer trains, and how (defaults apply)")
    program: Optional[ProgramSpec] = Field(
        default=None, description="the team's own TensorFlow program, instead of tfk8s's trainer (docs/programs.md)"
    )
    tensorboard: Optional[TensorBoardSpec] = Field(
        default=None, description="TensorBoard for the experiment, reached through a port-forward (default: none)"
    )
    logs: Optional[LogsSpec] = Field(
        default=None,
        description="keep every task's log after its pod is gone, for `python -m components logs` (default: none: "
        "a log goes with its pod)",
    )

    model_config = ConfigDict(arbitrary_types_allowed=True)

    @classmethod
    def file_keys(cls) -> dict[str, str]:
        """A stack file's top-level keys (`nodePools`, as `tfk8s:nodePools`), each to its field
        (`node_pools`), in the fields' order: every field but `stack`, which names the file. The one
        list of them: the loader, TFExperimentArgs and `diff` read it."""
        return {info.alias or name: name for name, info in cls.model_fields.items() if name != "stack"}

    # A field validator, not min_length: pydantic would report an empty tuple
    # again after any bad pool, doubling the message.
    @field_validator("node_pools")
    @classmethod
    def _some_pool(cls, pools: tuple[NodePoolSpec, ...]) -> tuple[NodePoolSpec, ...]:
        if not pools:
            raise ValueError("list at least one node pool")
        return pools

    @property
    def pools(self) -> dict[str, NodePoolSpec]:
        return {pool.name: pool for pool in self.node_pools}

    @property
    def namespace(self) -> str:
        given = self.cluster.namespace
        return given.name if given is not None else f"tf-{self.stack}"

    @property
    def shares_namespace(self) -> bool:
        """The namespace is the team's (existing: true): tfk8s neither creates nor deletes it, and
        other experiments and the team's own objects live there too."""
        return self.cluster.namespace is not None and self.cluster.namespace.existing
