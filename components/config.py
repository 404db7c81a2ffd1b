"""Stack configuration: the only place a stack file is parsed and checked.

`load_stack_config(stack, values)` turns the `tfk8s:*` values of one stack into
a frozen `StackConfig`, or raises `StackConfigError` with one message that
names the stack, each bad field and what is allowed. Nothing here touches
Pulumi resources, so a bad stack fails before anything is registered.
"""

from __future__ import annotations

import difflib
import math
import re
import typing
from typing import Annotated, Any, Literal, Mapping, Optional

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from trainer.settings import SettingsError, TrainerSettings

from .sizing import checkpoint_bytes, embedding_shard_bytes

CONFIG_NAMESPACE = "tfk8s"
DEFAULT_IMAGE = "tensorflow/tensorflow:2.21.0"

# Kubernetes resource quantities as a stack file would write them ("500m", "4Gi").
QUANTITY_PATTERN = r"^[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$"
# DNS-1123 label: names of pools, namespaces and nodes' label values we write.
DNS_LABEL_PATTERN = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"
# A Kubernetes label value (GPU product names such as "Tesla-P40").
LABEL_VALUE_PATTERN = r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$"
# Node names are DNS-1123 subdomains.
NODE_NAME_PATTERN = r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$"

QUANTITY_FACTORS = {
    "": 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
}
# The least a TensorFlow task can run with: a smaller request is a typo ("1" is one byte).
MIN_CPU = 0.01
MIN_MEMORY_BYTES = 128 * 2**20


def quantity_value(text: str) -> float:
    """'500m' -> 0.5, '4Gi' -> 4294967296.0 (the text already matches QUANTITY_PATTERN)."""
    number = re.match(r"^[0-9]+(\.[0-9]+)?", text)
    assert number is not None
    return float(number.group(0)) * QUANTITY_FACTORS[text[number.end():]]


def _at_least_cpu(text: str) -> str:
    if quantity_value(text) < MIN_CPU:
        raise ValueError(f"CPU '{text}' is below {MIN_CPU * 1000:.0f}m; give at least '10m' (e.g. '500m', '2')")
    return text


def _at_least_memory(text: str) -> str:
    if quantity_value(text) < MIN_MEMORY_BYTES:
        raise ValueError(
            f"memory '{text}' is below 128Mi, too little for a TensorFlow task; quantities are bytes "
            "unless suffixed (e.g. '512Mi', '4Gi')"
        )
    return text


Quantity = Annotated[str, Field(pattern=QUANTITY_PATTERN)]
CpuQuantity = Annotated[Quantity, AfterValidator(_at_least_cpu)]
MemoryQuantity = Annotated[Quantity, AfterValidator(_at_least_memory)]
DnsLabel = Annotated[str, Field(pattern=DNS_LABEL_PATTERN, max_length=63)]
NodeName = Annotated[str, Field(pattern=NODE_NAME_PATTERN)]

Placement = Literal["colocated", "isolated", "spread"]
# jobset: the experiment is one JobSet that ends with its chief; statefulset: PS
# and workers serve until the experiment is destroyed (clusters without JobSet).
Workload = Literal["jobset", "statefulset"]
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


def gpu_build(image: str) -> str:
    """TensorFlow's GPU build of a tagged image: `tensorflow/tensorflow:2.21.0` -> `...:2.21.0-gpu`."""
    return image if image.endswith("-gpu") else f"{image}-gpu"


class StackConfigError(ValueError):
    """A stack file is wrong. The message names the stack, the field and the fix."""

    @classmethod
    def listing(cls, stack: str, errors: list[str]) -> "StackConfigError":
        lines = "\n".join(f"  - {error}" for error in errors)
        return cls(f"stack '{stack}' has an invalid configuration:\n{lines}")


class _Model(BaseModel):
    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
        strict=False,
    )


# Who labels a GPU pool's nodes with their GPU product: tfk8s (its own label, on the nodes
# it names) or NVIDIA GPU Feature Discovery (nvidia.com/gpu.product, which GFD owns).
GpuLabeller = Literal["tfk8s", "gfd"]


class GpuSpec(_Model):
    product: str = Field(
        pattern=LABEL_VALUE_PATTERN,
        min_length=1,
        description="GPU model the GPU workers are scheduled on (e.g. Tesla-P40; with GFD: its product label's value)",
    )
    per_node: int = Field(strict=True, ge=1, description="GPUs on each node of the pool")
    labelled_by: Optional[GpuLabeller] = Field(
        default=None,
        description="tfk8s: tfk8s labels the pool's nodes tfk8s.io/gpu-product (default for pools of nodes); "
        "gfd: GPU Feature Discovery's nvidia.com/gpu.product is selected, tfk8s writes no GPU label "
        "(default for selector pools)",
    )


TolerationOperator = Literal["Exists", "Equal"]
TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class Toleration(_Model):
    """A Kubernetes toleration, as a pod spec writes it."""

    key: Optional[str] = Field(default=None, min_length=1, description="taint key (unset with Exists: every taint)")
    operator: TolerationOperator = Field(default="Equal", description="Equal (key and value) or Exists (key only)")
    value: Optional[str] = Field(default=None, description="taint value, with operator Equal")
    effect: Optional[TaintEffect] = Field(default=None, description="the taint effect tolerated (unset: every effect)")
    toleration_seconds: Optional[int] = Field(
        default=None, strict=True, ge=0, description="with NoExecute: how long the pod stays after the taint"
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


class NodePoolSpec(_Model):
    name: DnsLabel = Field(description="pool name, referenced by cluster.ps.pool / workers.pool")
    nodes: Optional[tuple[NodeName, ...]] = Field(
        default=None, description="existing nodes, by name; tfk8s labels them"
    )
    selector: Optional[dict[str, str]] = Field(
        default=None,
        description="labels that already select the pool's nodes (usable only with placement: spread)",
    )
    gpu: Optional[GpuSpec] = Field(default=None, description="GPUs on every node of the pool")

    @model_validator(mode="after")
    def _gpu_labels_of_a_selector_pool(self) -> "NodePoolSpec":
        if self.selector is not None and self.gpu is not None and self.gpu.labelled_by == "tfk8s":
            raise ValueError(
                "gpu.labelledBy: tfk8s labels only the nodes a pool names; a selector pool's GPU "
                "product is selected by GPU Feature Discovery's label: use labelledBy: gfd"
            )
        return self

    @property
    def gpu_labeller(self) -> Optional[GpuLabeller]:
        if self.gpu is None:
            return None
        return self.gpu.labelled_by or ("tfk8s" if self.nodes is not None else "gfd")

    @model_validator(mode="after")
    def _nodes_or_selector(self) -> "NodePoolSpec":
        if (self.nodes is None) == (self.selector is None):
            raise ValueError("give exactly one of 'nodes' (a list of node names) or 'selector'")
        if self.nodes is not None:
            if not self.nodes:
                raise ValueError("'nodes' must list at least one node")
            seen: set[str] = set()
            for node in self.nodes:
                if node in seen:
                    raise ValueError(f"node '{node}' is listed twice; list each node once")
                seen.add(node)
        if self.selector is not None and not self.selector:
            raise ValueError("'selector' must have at least one label")
        return self

    @property
    def pinnable(self) -> bool:
        return self.nodes is not None


class PsSpec(_Model):
    replicas: Optional[int] = Field(
        default=None, strict=True, ge=1, description="parameter servers; may be left to cluster.ratio"
    )
    pool: DnsLabel = Field(description="node pool the PS run in")
    cpu: CpuQuantity = Field(default="2", description="CPU request and limit of each PS")
    memory: Optional[MemoryQuantity] = Field(
        default=None,
        description="memory request and limit of each PS; derived from the model when unset",
    )
    tolerations: Tolerations = Field(default=(), description=TOLERATIONS_HELP)


class WorkerSpec(_Model):
    replicas: int = Field(strict=True, ge=1, description="workers")
    pool: DnsLabel = Field(description="node pool the workers run in")
    gpus: int = Field(default=0, strict=True, ge=0, description="nvidia.com/gpu per worker (0: CPU only)")
    cpu: CpuQuantity = Field(default="1", description="CPU request and limit of each worker")
    memory: MemoryQuantity = Field(default="2Gi", description="memory request and limit of each worker")
    tolerations: Tolerations = Field(default=(), description=TOLERATIONS_HELP)


class CheckpointVolumeSpec(_Model):
    size: Quantity = Field(description="storage the chief's checkpoint volume requests (e.g. 20Gi)")
    storage_class: Optional[Annotated[str, Field(pattern=NODE_NAME_PATTERN)]] = Field(
        default=None, description="StorageClass of the volume (default: the cluster's default class)"
    )


class ChiefSpec(_Model):
    cpu: CpuQuantity = Field(default="1", description="CPU request and limit of the chief")
    memory: Optional[MemoryQuantity] = Field(
        default=None,
        description="memory request and limit of the chief (default: derived from the checkpoint it writes, at least 2Gi)",
    )
    restarts: int = Field(
        default=6, strict=True, ge=0, description="times the chief is restarted (from its checkpoint) before the Job fails"
    )
    checkpoint_volume: Optional[CheckpointVolumeSpec] = Field(
        default=None,
        description="a PersistentVolumeClaim for the chief's checkpoints, so they outlive the chief's pod",
    )
    active_deadline_seconds: Optional[int] = Field(
        default=None,
        strict=True,
        ge=1,
        description="seconds the chief's Job may run in all before it fails (and the experiment with it): "
        "a hung chief otherwise runs forever (default: no deadline)",
    )
    tolerations: Tolerations = Field(default=(), description=TOLERATIONS_HELP)


class ClusterSpec(_Model):
    placement: Placement = Field(
        description="colocated: PS and workers share servers; isolated: disjoint servers; "
        "spread: the scheduler spreads pods"
    )
    strict: bool = Field(
        default=True,
        strict=True,
        description="pinned tasks require their server (true) or only prefer it (false)",
    )
    production: bool = Field(
        default=False,
        strict=True,
        description="marks the experiment's namespace as production (the policy pack then advises against strict pinning)",
    )
    ratio: Optional[str] = Field(
        default=None, description="'P:W', P parameter servers per W workers (instead of ps.replicas)"
    )
    namespace: Optional[DnsLabel] = Field(
        default=None, description="namespace of the experiment (default tf-<stack>)"
    )
    image: str = Field(
        default=DEFAULT_IMAGE,
        min_length=1,
        description="TensorFlow image the trainer runs in (pin a tag)",
    )
    gpu_image: Optional[str] = Field(
        default=None,
        min_length=1,
        description="image of GPU workers (default: image with '-gpu' appended to its tag, TensorFlow's GPU build)",
    )
    priority_class: Optional[NodeName] = Field(
        default=None,
        description="PriorityClass of every pod of the experiment (it must exist on the cluster; default: "
        "the cluster's global default)",
    )
    image_pull_secrets: tuple[DnsLabel, ...] = Field(
        default=(), description="Secrets in the namespace used to pull the image"
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
        description="times a lost PS restarts the whole experiment (from its last checkpoint) before it fails "
        "(workload jobset)",
    )
    queue: Optional[DnsLabel] = Field(
        default=None,
        description="Kueue ClusterQueue that admits the whole experiment at once (workload jobset); "
        "tfk8s creates the LocalQueue 'tfk8s' pointing at it",
    )
    ps: PsSpec
    workers: WorkerSpec
    chief: ChiefSpec = Field(default_factory=ChiefSpec)

    @model_validator(mode="before")
    @classmethod
    def _colocated_ps_follow_the_workers(cls, data: Any) -> Any:
        """Colocated PS share the workers' pool by definition, so `ps` may be left out."""
        if (
            isinstance(data, Mapping)
            and "ps" not in data
            and data.get("placement") == "colocated"
            and isinstance(data.get("workers"), Mapping)
            and "pool" in data["workers"]
        ):
            return {**data, "ps": {"pool": data["workers"]["pool"]}}
        return data

    @field_validator("ratio")
    @classmethod
    def _ratio_form(cls, ratio: Optional[str]) -> Optional[str]:
        if ratio is not None:
            parse_ratio(ratio)
        return ratio

    @field_validator("namespace")
    @classmethod
    def _not_a_system_namespace(cls, namespace: Optional[str]) -> Optional[str]:
        if namespace in SYSTEM_NAMESPACES:
            raise ValueError(
                f"'{namespace}' belongs to the cluster; tfk8s creates and owns the experiment's "
                "namespace, so name a new one (default tf-<stack>)"
            )
        return namespace

    @field_validator("image", "gpu_image")
    @classmethod
    def _image_pinned(cls, image: Optional[str]) -> Optional[str]:
        if image is not None and "@" not in image and (":" not in image.rsplit("/", 1)[-1] or image.endswith(":latest")):
            raise ValueError(f"image '{image}' must be pinned to a tag other than latest or a digest")
        return image

    @property
    def worker_image(self) -> str:
        """What workers run: the GPU build when they have GPUs (the CPU build would leave them idle)."""
        if not self.workers.gpus:
            return self.image
        return self.gpu_image or gpu_build(self.image)

    @model_validator(mode="after")
    def _jobset_only_settings(self) -> "ClusterSpec":
        if self.workload == "statefulset":
            given = sorted({"queue", "restarts"} & self.model_fields_set)
            if given:
                raise ValueError(
                    f"{' and '.join(given)} need workload: jobset (Kueue admits and JobSet restarts "
                    "a JobSet); drop them or use workload: jobset"
                )
        return self

    @model_validator(mode="after")
    def _ps_count_known(self) -> "ClusterSpec":
        if self.ps.replicas is None and self.ratio is None:
            raise ValueError("set ps.replicas or ratio ('1:10' means one PS per ten workers)")
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


class StackConfig(_Model):
    stack: str
    node_pools: tuple[NodePoolSpec, ...] = Field(description="servers the experiment may use")
    cluster: ClusterSpec
    trainer: TrainerSettings

    model_config = ConfigDict(arbitrary_types_allowed=True)

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
        return self.cluster.namespace or f"tf-{self.stack}"


_RATIO = re.compile(r"^\s*([0-9]+)\s*:\s*([0-9]+)\s*$")


def parse_ratio(ratio: str) -> tuple[int, int]:
    match = _RATIO.match(ratio)
    if not match or int(match.group(1)) < 1 or int(match.group(2)) < 1:
        raise ValueError(
            f"ratio '{ratio}' is not of the form 'P:W' with positive whole numbers, e.g. '1:10'"
        )
    return int(match.group(1)), int(match.group(2))


def ps_count_for_ratio(ratio: str, workers: int) -> int:
    ps, per_workers = parse_ratio(ratio)
    return max(1, math.ceil(workers * ps / per_workers))


# --------------------------------------------------------------------------
# Loading


TOP_LEVEL_KEYS = {"nodePools": "node_pools", "cluster": "cluster", "trainer": "trainer"}


def load_stack_config(stack: str, values: Mapping[str, Any]) -> StackConfig:
    """Validate the `tfk8s:*` config of `stack`.

    `values` maps keys with or without the `tfk8s:` prefix to decoded values
    (mappings and lists as the stack file writes them).
    """
    errors: list[str] = []
    if not re.match(LABEL_VALUE_PATTERN, stack) or not stack:
        errors.append(
            f"stack name '{stack}' must be usable as a label value: letters, digits, '-', '_', "
            "'.', at most 63"
        )
    given: dict[str, Any] = {}
    for key, value in values.items():
        short = key.split(":", 1)[1] if key.startswith(f"{CONFIG_NAMESPACE}:") else key
        if short in TOP_LEVEL_KEYS:
            given[short] = value
        elif ":" not in key or key.startswith(f"{CONFIG_NAMESPACE}:"):
            errors.append(
                f"{CONFIG_NAMESPACE}:{short}: unknown key{_did_you_mean(short, TOP_LEVEL_KEYS)}; "
                f"allowed: {', '.join(f'{CONFIG_NAMESPACE}:{k}' for k in TOP_LEVEL_KEYS)}"
            )

    for required in ("nodePools", "cluster"):
        if required not in given:
            errors.append(f"{CONFIG_NAMESPACE}:{required}: missing; every stack needs it")

    try:
        # Not `or None`: an empty list or a 0 is a mistake, not a request for the defaults.
        trainer = TrainerSettings.from_config(given.get("trainer"))
    except SettingsError as exc:
        trainer = None
        where = f"{CONFIG_NAMESPACE}:trainer" + (f".{exc.key}" if exc.key else "")
        errors.append(f"{where}: {exc.message}")

    # Every problem in one pass: the pools and the cluster are checked even when the trainer
    # settings or the top-level keys have errors of their own.
    config: StackConfig | None = None
    if all(required in given for required in ("nodePools", "cluster")):
        try:
            config = StackConfig.model_validate(
                {
                    "stack": stack,
                    "nodePools": given["nodePools"],
                    "cluster": given["cluster"],
                    "trainer": trainer or TrainerSettings(),
                }
            )
        except ValidationError as exc:
            errors.extend(_describe_validation_error(exc))

    # The cross checks size memory from the trainer settings: only with settings that are valid.
    if config is not None and trainer is not None:
        errors.extend(_cross_checks(config))
    if errors:
        raise StackConfigError.listing(stack, errors)
    assert config is not None
    return config


def _cross_checks(config: StackConfig) -> list[str]:
    """Rules that relate pools to the cluster; each returns a message or nothing."""
    errors: list[str] = []
    cluster = config.cluster
    pools = config.pools
    ns = CONFIG_NAMESPACE

    if cluster.namespace is None and not re.match(DNS_LABEL_PATTERN, config.namespace):
        errors.append(
            f"{ns}:cluster.namespace: the default namespace '{config.namespace}' made from the "
            "stack name is not a DNS label; set cluster.namespace"
        )

    seen_names: set[str] = set()
    for index, pool in enumerate(config.node_pools):
        if pool.name in seen_names:
            errors.append(f"{ns}:nodePools[{index}].name: pool '{pool.name}' is defined twice")
        seen_names.add(pool.name)

    for role in ("ps", "workers"):
        pool_name = getattr(cluster, role).pool
        if pool_name not in pools:
            errors.append(
                f"{ns}:cluster.{role}.pool: unknown pool '{pool_name}'; "
                f"defined pools: {', '.join(pools)}"
            )
    if errors:
        return errors

    ps_pool, worker_pool = pools[cluster.ps.pool], pools[cluster.workers.pool]

    if cluster.placement == "colocated" and ps_pool.name != worker_pool.name:
        errors.append(
            f"{ns}:cluster.workers.pool: colocated placement puts PS and workers on the same "
            f"servers, so workers.pool must be '{ps_pool.name}' like ps.pool (or use placement: isolated)"
        )
    if cluster.placement == "isolated":
        if ps_pool.name == worker_pool.name:
            errors.append(
                f"{ns}:cluster.workers.pool: isolated placement needs separate PS and worker "
                f"pools, but both are '{ps_pool.name}'"
            )
        elif ps_pool.nodes and worker_pool.nodes:
            for node in ps_pool.nodes:
                if node in worker_pool.nodes:
                    errors.append(
                        f"{ns}:nodePools: node '{node}' is in both the PS pool '{ps_pool.name}' "
                        f"and the worker pool '{worker_pool.name}'; isolated placement needs "
                        "disjoint pools"
                    )

    if cluster.placement != "spread":
        for role, pool in (("ps", ps_pool), ("workers", worker_pool)):
            if not pool.pinnable:
                errors.append(
                    f"{ns}:cluster.{role}.pool: pool '{pool.name}' is given by a selector, so "
                    f"its servers are unknown and {cluster.placement} placement cannot pin tasks; "
                    "list its nodes or use placement: spread"
                )

    # A node carries one pool label, so it can belong to one pool only.
    owner: dict[str, str] = {}
    for pool in config.node_pools:
        for node in pool.nodes or ():
            other = owner.setdefault(node, pool.name)
            if other != pool.name and not (
                cluster.placement == "isolated"
                and {other, pool.name} == {ps_pool.name, worker_pool.name}
            ):
                errors.append(
                    f"{ns}:nodePools: node '{node}' is listed in pools '{other}' and "
                    f"'{pool.name}'; a node belongs to one pool"
                )

    if cluster.ps.memory is not None:
        shard = embedding_shard_bytes(config.trainer, cluster.ps_count)
        if quantity_value(cluster.ps.memory) < shard:
            errors.append(
                f"{ns}:cluster.ps.memory: {cluster.ps.memory} is below the {math.ceil(shard / 2**20)}Mi "
                f"that each PS's embedding shard needs ({config.trainer.embedding_rows} rows x "
                f"{config.trainer.embedding_dim} over {config.trainer.shard_count(cluster.ps_count)} "
                f"shard(s), optimizer slots included); raise it or leave it unset to derive it"
            )

    if cluster.chief.memory is not None:
        checkpoint = checkpoint_bytes(config.trainer)
        if quantity_value(cluster.chief.memory) < checkpoint:
            errors.append(
                f"{ns}:cluster.chief.memory: {cluster.chief.memory} is below the {math.ceil(checkpoint / 2**20)}Mi "
                f"of one checkpoint ({config.trainer.embedding_rows} rows x {config.trainer.embedding_dim}, "
                "optimizer slots included), which passes through the chief's memory when it saves; "
                "raise it or leave it unset to derive it"
            )

    volume = cluster.chief.checkpoint_volume
    if volume is not None and config.trainer.checkpoint_dir != "default":
        errors.append(
            f"{ns}:cluster.chief.checkpointVolume and {ns}:trainer.checkpointDir "
            f"('{config.trainer.checkpoint_dir}') are both set: the chief writes its checkpoints to one "
            "place; keep the volume and leave checkpointDir at 'default' (tfk8s points it at the volume), "
            "or drop the volume"
        )

    gpus = cluster.workers.gpus
    if gpus and cluster.gpu_image is None and "@" in cluster.image:
        errors.append(
            f"{ns}:cluster.gpuImage: GPU workers need TensorFlow's GPU build, and image '{cluster.image}' "
            "is a digest, so its GPU build cannot be derived; set gpuImage (a tag or a digest)"
        )
    if gpus:
        if worker_pool.gpu is None:
            errors.append(
                f"{ns}:cluster.workers.gpus: {gpus} GPUs asked, but pool '{worker_pool.name}' "
                "has no GPUs; add gpu: {product, perNode} to the pool or set gpus: 0"
            )
        elif gpus > worker_pool.gpu.per_node:
            errors.append(
                f"{ns}:cluster.workers.gpus: {gpus} GPUs per worker do not fit on a node of "
                f"pool '{worker_pool.name}' ({worker_pool.gpu.per_node} per node)"
            )
    return errors


def _describe_validation_error(exc: ValidationError) -> list[str]:
    messages = []
    for error in exc.errors(include_url=False):
        loc = tuple(error["loc"])
        field_path = _format_loc(loc)
        if error["type"] == "extra_forbidden":
            allowed = _allowed_keys(loc[:-1])
            key = str(loc[-1])
            hint = _did_you_mean(key, allowed)
            messages.append(
                f"{field_path}: unknown key{hint}; allowed: {', '.join(allowed)}"
            )
            continue
        message = error["msg"]
        if message.startswith("Value error, "):
            message = message[len("Value error, ") :]
        if error["type"] == "string_pattern_mismatch":
            message = _pattern_help(error)
        got = error.get("input")
        if error["type"] not in ("missing",) and not isinstance(got, (dict, list)):
            message = f"{message} (got {got!r})"
        messages.append(f"{field_path}: {message}")
    return messages


_PATTERN_HELP = {
    QUANTITY_PATTERN: "must be a Kubernetes quantity such as '500m', '2', '4Gi'",
    DNS_LABEL_PATTERN: "must be a DNS label: lower-case letters, digits and '-', at most 63",
    LABEL_VALUE_PATTERN: "must be a label value: letters, digits, '-', '_', '.', at most 63",
    NODE_NAME_PATTERN: "must be a node name: lower-case letters, digits, '-' and '.'",
}


def _pattern_help(error: Mapping[str, Any]) -> str:
    pattern = (error.get("ctx") or {}).get("pattern", "")
    return _PATTERN_HELP.get(pattern, error["msg"])


def _format_loc(loc: tuple) -> str:
    if not loc:
        return f"{CONFIG_NAMESPACE}:(stack)"
    head, *rest = loc
    path = f"{CONFIG_NAMESPACE}:{head}"
    for part in rest:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def _allowed_keys(loc: tuple) -> list[str]:
    """The camelCase keys allowed at `loc` (a pydantic error location)."""
    model: Any = StackConfig
    for part in loc:
        if isinstance(part, int):
            continue
        field_name = next(
            (name for name, info in model.model_fields.items() if (info.alias or name) == part),
            None,
        )
        if field_name is None:
            return []
        model = _model_in(model.model_fields[field_name].annotation)
        if model is None:
            return []
    return [info.alias or name for name, info in model.model_fields.items() if name != "stack"]


def _model_in(annotation: Any) -> Any:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def _did_you_mean(key: str, allowed: Any) -> str:
    close = difflib.get_close_matches(key, list(allowed), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""
