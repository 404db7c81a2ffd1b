"""A TFJob's roles to the `tfk8s:*` values of a stack: what carries over, what the user must fill
in, and a Note for every field that does not carry."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any, Optional

from ..spec.images import is_pinned
from ..spec.kubernetes_limits import image_reference_problem
from ..spec.task_roles import ROLE_OF, WORKER
from .containers import RoleView, read_role, required_text
from .program_section import DONE_COMMENTS, program_section
from .run_policy import carry_run_policy
from .tfjob import Note, NotImportable, TFJob

# What the user must replace: not a node name, a label value or a quantity, so the stack is
# refused, naming the field, until they do.
FILL_IN_NODE = "<fill in: a node's name>"
FILL_IN_GPU_PRODUCT = "<fill in: the GPU model's label value>"
FILL_IN_PS_MEMORY = "<fill in: memory of each PS, e.g. 8Gi>"
# Stand-ins that the stack's check accepts, for checking the rest of an imported stack.
CHECKED_AS = {FILL_IN_NODE: "fill-in-node", FILL_IN_GPU_PRODUCT: "fill-in", FILL_IN_PS_MEMORY: "1Gi"}
DEFAULT_POOL = "servers"


@dataclass(frozen=True)
class ImportOptions:
    stack: str
    image: Optional[str] = None
    nodes: tuple[str, ...] = ()
    pool: str = DEFAULT_POOL


@dataclass
class ImportedStack:
    """The stack's `tfk8s:*` values, comments for the stack file, and what was not carried or must be filled in."""

    values: dict[str, Any]
    comments: dict[tuple[str, ...], str]
    notes: list[Note]
    fill_in: list[str] = field(default_factory=list)
    # Where each value came from, by its stack path (`tfk8s:cluster.ps.memory`): the TFJob field
    # (`spec.tfReplicaSpecs.PS...memory`) or the flag (`--nodes`); a refusal names it, not the key.
    sources: dict[str, str] = field(default_factory=dict)
    # The stack paths whose value is the TFJob's as written (tolerations): a path inside one is the
    # same path inside its source (`...tolerations[0].effect`).
    as_written: frozenset[str] = frozenset()

    def source_of(self, path: str) -> Optional[str]:
        """The TFJob field or flag the value at `path` (or the value holding it) came from."""
        for key in sorted(self.sources, key=len, reverse=True):
            if path == key or path.startswith((f"{key}.", f"{key}[")):
                return self.sources[key] + (path[len(key) :] if key in self.as_written else "")
        return None

    def as_checked(self) -> dict[str, Any]:
        """The values with valid stand-ins for those to fill in: what the stack's check is given."""

        def stand_in(value: Any) -> Any:
            if isinstance(value, dict):
                return {key: stand_in(item) for key, item in value.items()}
            if isinstance(value, list):
                return [stand_in(item) for item in value]
            return CHECKED_AS.get(value, value) if isinstance(value, str) else value

        return stand_in(self.values)


def carry(job: TFJob, options: ImportOptions) -> ImportedStack:
    try:
        roles = {role: read_role(replica) for role, replica in job.replicas.items()}
    except NotImportable as error:
        raise NotImportable(f"TFJob '{job.name}': {error}") from None
    notes = list(job.notes)
    for view in roles.values():
        notes += view.notes
    comments: dict[tuple[str, ...], str] = {}
    fill_in: list[str] = []
    workers = roles["worker"]
    sources = _sources(roles, options)

    pool = _pool(workers, options, comments, fill_in)
    cluster: dict[str, Any] = {"placement": "spread"}
    comments[("tfk8s:cluster", "placement")] = (
        "spread: the scheduler places the pods, as it did the TFJob's; colocated or isolated pin\n"
        "every task to a server (docs/stack-files.md)."
    )
    cluster.update(_images(job, roles, options, notes, sources))
    ps = roles.get("ps")
    if ps is None:
        cluster["ps"] = {"replicas": 0}
        comments[("tfk8s:cluster", "ps")] = (
            "No PS in the TFJob: workers only (MultiWorkerMirroredStrategy, or independent workers)."
        )
    else:
        cluster["ps"] = {"replicas": ps.replica.replicas, "pool": options.pool, **_sizes(ps)}
    if ps is not None and ps.memory is None:
        cluster["ps"]["memory"] = FILL_IN_PS_MEMORY
        fill_in.append(
            f"tfk8s:cluster.ps.memory: {ps.replica.path} requests no memory, and tfk8s cannot size a PS "
            "for a model it does not know"
        )
    cluster["workers"] = {
        "replicas": workers.replica.replicas,
        "pool": options.pool,
        **({"gpus": workers.gpus} if workers.gpus else {}),
        **_sizes(workers),
    }
    chief = roles.get("chief")
    if chief is not None:
        cluster["chief"] = _sizes(chief)
    evaluator = roles.get("evaluator")
    if evaluator is not None:
        cluster["evaluator"] = {"replicas": 1, **_sizes(evaluator)}
        comments[("tfk8s:cluster", "evaluator")] = (
            "TensorFlow's side-car evaluator: restarted alone whatever its exit, never deciding the outcome,\n"
            "stopped when the experiment ends. It reads the checkpoints where your program writes them."
        )
    carry_run_policy(job, roles, cluster, comments, notes, sources)
    _pod_wide(roles, cluster, notes, sources)
    program = program_section(job, roles, notes, sources)
    if program["done"] != "chief":
        comments[("tfk8s:program", "done")] = DONE_COMMENTS[program["done"]]
    notes += _namespace_notes(job, program, cluster)
    values = {"tfk8s:nodePools": [pool], "tfk8s:cluster": cluster, "tfk8s:program": program}
    as_written = frozenset(f"tfk8s:cluster.{ROLE_OF[role].stack_key}.tolerations" for role in roles)
    return ImportedStack(values, comments, notes, fill_in, sources, as_written)


def _sources(roles: dict[str, RoleView], options: ImportOptions) -> dict[str, str]:
    """Where the values carry() writes come from, by stack path: the flags, each role's replicas and
    sizes, and the program's fields (the workers' container, or a role's own)."""
    sources = {
        "tfk8s:nodePools[0].name": "--pool",
        "tfk8s:nodePools[0].nodes": "--nodes",
        "tfk8s:nodePools[0].gpu.perNode": roles["worker"].sources["gpus"],
    }
    if "gpu_product" in roles["worker"].sources:
        sources["tfk8s:nodePools[0].gpu.product"] = roles["worker"].sources["gpu_product"]
    for role, view in roles.items():
        key = f"tfk8s:cluster.{ROLE_OF[role].stack_key}"
        sources[f"{key}.replicas"] = f"{view.replica.path}.replicas"
        sources[f"{key}.pool"] = "--pool"
        for size in ("cpu", "memory", "gpus", "tolerations"):
            sources[f"{key}.{size}"] = view.sources[size]
    workers = roles[WORKER.name]
    for key in ("command", "args", "workingDir", "volumes"):
        sources[f"tfk8s:program.{key}"] = workers.at("volumeMounts" if key == "volumes" else key)
    for view in roles.values():
        for name, path in view.sources.items():
            if name.startswith("env."):
                sources.setdefault(f"tfk8s:program.{name}", path)
        if view.replica.role != WORKER.name:  # the workers' command is the program's own
            for key in ("command", "args"):
                sources[f"tfk8s:program.roles.{view.replica.role}.{key}"] = view.at(key)
    return sources


def _pool(workers: RoleView, options: ImportOptions, comments: dict, fill_in: list[str]) -> dict[str, Any]:
    """The one node pool: the nodes given, or a placeholder; GPUs as the workers ask for them."""
    pool: dict[str, Any] = {"name": options.pool, "nodes": list(options.nodes) or [FILL_IN_NODE]}
    if not options.nodes:
        comments[("tfk8s:nodePools",)] = (
            "Fill in the nodes the experiment may use (kubectl get nodes): tfk8s labels them."
        )
        fill_in.append(f"tfk8s:nodePools[0].nodes: the nodes of pool '{options.pool}' (or import again with --nodes)")
    if workers.gpus:
        pool["gpu"] = {"product": workers.gpu_product or FILL_IN_GPU_PRODUCT, "perNode": workers.gpus}
        if workers.gpu_product:
            pool["gpu"]["labelledBy"] = "gfd"
        else:
            fill_in.append("tfk8s:nodePools[0].gpu.product: the GPU model of the pool's nodes (e.g. Tesla-P40)")
        comments[("tfk8s:nodePools", "gpu")] = "perNode: the GPUs of one worker; set your nodes' count."
    return pool


def _images(
    job: TFJob, roles: dict[str, RoleView], options: ImportOptions, notes: list[Note], sources: dict[str, str]
) -> dict[str, Any]:
    """cluster.image from the chief (else the PS under GPU workers, else the workers); gpuImage for GPU workers."""
    if options.image is not None:
        malformed = image_reference_problem(options.image)
        if malformed is not None:
            raise NotImportable(f"--image {shlex.quote(options.image)} {malformed}")
        if not is_pinned(options.image):
            raise NotImportable(
                f"--image {shlex.quote(options.image)}: tfk8s runs images pinned to a tag other than latest or a "
                "digest (registry/name:tag or registry/name@sha256:...)"
            )
        sources["tfk8s:cluster.image"] = sources["tfk8s:cluster.gpuImage"] = "--image"
        return {"image": options.image, **({"gpuImage": options.image} if roles["worker"].gpus else {})}
    for view in roles.values():
        image = view.container.get("image")
        if not image:
            raise NotImportable(f"TFJob '{job.name}': {view.at('image')} is missing; give --image REF")
        malformed = image_reference_problem(str(image))
        if malformed is not None:
            raise NotImportable(f"TFJob '{job.name}': {view.at('image')} {shlex.quote(str(image))} {malformed}")
        if not is_pinned(image):
            raise NotImportable(
                f"TFJob '{job.name}': {view.at('image')} '{image}' is not pinned: tfk8s runs images pinned to a tag "
                "other than latest or a digest; give --image REF"
            )
    workers = roles["worker"]
    base_role = "chief" if "chief" in roles else "ps" if workers.gpus and "ps" in roles else "worker"
    base = roles[base_role].container["image"]
    images: dict[str, Any] = {"image": base}
    sources["tfk8s:cluster.image"] = roles[base_role].at("image")
    sources["tfk8s:cluster.gpuImage"] = workers.at("image")
    if workers.gpus:
        images["gpuImage"] = workers.container["image"]  # tfk8s would otherwise append -gpu to image's tag
    for role, view in roles.items():
        expected = images["gpuImage"] if role == "worker" and workers.gpus else base
        if view.container["image"] != expected:
            images_of = "tfk8s:cluster.gpuImage" if role == "worker" and workers.gpus else "tfk8s:cluster.image"
            notes.append(
                Note(
                    view.at("image"),
                    f"tfk8s runs this role in {images_of}, {expected}: one image for "
                    "the chief and PS, and for CPU workers (GPU workers may have their own)",
                )
            )
    return images


def _sizes(view: RoleView) -> dict[str, Any]:
    return {key: value for key, value in (("cpu", view.cpu), ("memory", view.memory)) if value is not None} | (
        {"tolerations": view.tolerations} if view.tolerations else {}
    )


def _pod_wide(roles: dict[str, RoleView], cluster: dict[str, Any], notes: list[Note], sources: dict[str, str]) -> None:
    """The priority class and image pull Secrets, which tfk8s gives every pod of the experiment."""
    priorities = {view.replica.pod.get("priorityClassName") for view in roles.values()} - {None}
    if "priorityClass" not in cluster and len(priorities) == 1:
        cluster["priorityClass"] = priorities.pop()
        sources["tfk8s:cluster.priorityClass"] = next(
            f"{view.replica.path}.template.spec.priorityClassName"
            for view in roles.values()
            if view.replica.pod.get("priorityClassName") == cluster["priorityClass"]
        )
    elif priorities - {cluster.get("priorityClass")}:
        for view in roles.values():
            if view.replica.pod.get("priorityClassName") not in (None, cluster.get("priorityClass")):
                notes.append(
                    Note(
                        f"{view.replica.path}.template.spec.priorityClassName",
                        f"tfk8s gives every pod of the experiment one priority class ({cluster.get('priorityClass')})",
                    )
                )
    secrets = sorted(
        {
            required_text(secret.get("name"), f"{view.replica.path}.template.spec.imagePullSecrets[{index}].name")
            for view in roles.values()
            for index, secret in enumerate(view.replica.pod.get("imagePullSecrets") or ())
        }
    )
    if secrets:
        cluster["imagePullSecrets"] = secrets
        sources["tfk8s:cluster.imagePullSecrets"] = next(
            f"{view.replica.path}.template.spec.imagePullSecrets"
            for view in roles.values()
            if view.replica.pod.get("imagePullSecrets")
        )


def _namespace_notes(job: TFJob, program: dict[str, Any], cluster: dict[str, Any]) -> list[Note]:
    """tfk8s creates the experiment's namespace: what the program reads from the TFJob's must be made there."""
    needed = [f"Secret '{v['secret']}'" for v in program.get("env", {}).values() if isinstance(v, dict)]
    needed += [f"claim '{v['claim']}'" for v in program.get("volumes", ())]
    needed += [f"Secret '{name}'" for name in cluster.get("imagePullSecrets", ())]
    if not needed and job.namespace in (None, "default"):
        return []
    where = job.namespace or "default"
    return [
        Note(
            "metadata.namespace",
            f"tfk8s creates the experiment's own namespace (tf-<stack>, or "
            f"tfk8s:cluster.namespace){': create ' + ', '.join(dict.fromkeys(needed)) + ' there' if needed else ''}"
            f"; to run in the TFJob's namespace, where they are, set tfk8s:cluster.namespace: "
            f"{{name: {where}, existing: true}} (docs/shared-cluster.md)",
        )
    ]
