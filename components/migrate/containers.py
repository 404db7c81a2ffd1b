"""One TFJob role's pod, read for what a tfk8s stack can say of it: its container's command, env,
claims and resources, and its tolerations; every other field becomes a Note with what tfk8s does
instead."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Optional

from ..plan.tf_config import TF_PORT
from ..spec.program import OWN_MOUNTS, PROGRAM_VARIABLES, RESERVED_PREFIX, TF_CONFIG
from ..spec.quantities import QUANTITY_FORM, QUANTITY_PATTERN
from ..spec.strict_yaml import described
from .tfjob import Note, NotImportable, Replica

GPU_RESOURCE = "nvidia.com/gpu"
# GPU Feature Discovery's product label, which a TFJob's GPU workers often select.
GFD_PRODUCT_LABEL = "nvidia.com/gpu.product"
# The port TFJob's controller gives TensorFlow; tfk8s's TF_CONFIG names its own.
TFJOB_PORT_NAME, TFJOB_PORT = "tfjob-port", 2222
PLACED_BY_TFK8S = "tfk8s places pods itself: the node pool's nodes (--nodes) and tfk8s:cluster.placement"

# Pod fields with a tfk8s answer of their own (the rest: "tfk8s does not set it").
POD_FIELDS_INSTEAD = {
    "nodeSelector": PLACED_BY_TFK8S,
    "affinity": PLACED_BY_TFK8S,
    "nodeName": PLACED_BY_TFK8S,
    "topologySpreadConstraints": PLACED_BY_TFK8S,
    "initContainers": "tfk8s runs one container per task: do the setup in the program or bake it into the image",
    "restartPolicy": "the replica's restartPolicy decides, as in TFJob",
    "serviceAccountName": "tfk8s's tasks run as the namespace's default service account",
    "serviceAccount": "tfk8s's tasks run as the namespace's default service account",
    "securityContext": "tfk8s runs every task as uid 1000 with a read-only root filesystem (restricted Pod Security)",
}
POD_FIELDS_READ = {"containers", "volumes", "tolerations", "priorityClassName", "imagePullSecrets"}
CONTAINER_FIELDS_INSTEAD = {
    "envFrom": "tfk8s:program.env takes values and Secret keys, one by one",
    "imagePullPolicy": "Kubernetes' default applies (IfNotPresent for a pinned tag)",
    "securityContext": POD_FIELDS_INSTEAD["securityContext"],
    **dict.fromkeys(
        ("livenessProbe", "readinessProbe", "startupProbe"), "tfk8s probes PS and workers on their gRPC port itself"
    ),
    "ports": f"tfk8s serves TensorFlow on port {TF_PORT} and names it in TF_CONFIG; other ports are not opened",
}
CONTAINER_FIELDS_READ = {"name", "image", "command", "args", "env", "workingDir", "resources", "volumeMounts"}


@dataclass
class RoleView:
    """What the stack can say of one role, and what it cannot."""

    replica: Replica
    env: dict[str, Any] = field(default_factory=dict)  # name -> value or {secret, key}
    claims: list[dict[str, Any]] = field(default_factory=list)  # {claim, mountPath, readOnly, sources}
    cpu: Optional[str] = None
    memory: Optional[str] = None
    gpus: int = 0
    gpu_product: Optional[str] = None
    tolerations: list[dict[str, Any]] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    # The TFJob field each of the above came from ("cpu", "memory", "gpus", "tolerations", "env.NAME").
    sources: dict[str, str] = field(default_factory=dict)

    @property
    def container(self) -> dict[str, Any]:
        return self.replica.container

    def at(self, key: str) -> str:
        """A field path of the role's container, for notes."""
        return f"{self.replica.container_path}.{key}"


def read_role(replica: Replica) -> RoleView:
    view = RoleView(replica)
    _pod_fields(view)
    _container_fields(view)
    _env(view)
    _claims(view)
    _resources(view)
    return view


def _pod_fields(view: RoleView) -> None:
    pod, path = view.replica.pod, f"{view.replica.path}.template.spec"
    for index, container in enumerate(pod.get("containers") or ()):
        if container is not view.container:
            view.notes.append(Note(f"{path}.containers[{index}]", "a sidecar: tfk8s runs one container per task"))
    selector = pod.get("nodeSelector") or {}
    for key in sorted(set(pod) - POD_FIELDS_READ):
        if key == "nodeSelector" and view.replica.role == "worker" and GFD_PRODUCT_LABEL in selector:
            view.gpu_product = str(selector[GFD_PRODUCT_LABEL])  # the GPU pool's product
            if set(selector) == {GFD_PRODUCT_LABEL}:
                continue
        view.notes.append(Note(f"{path}.{key}", POD_FIELDS_INSTEAD.get(key, "tfk8s does not set it")))
    view.tolerations = [
        {name: value for name, value in toleration.items() if value is not None}
        for toleration in pod.get("tolerations") or ()
    ]
    view.sources["tolerations"] = f"{path}.tolerations"
    if view.gpu_product is not None:
        view.sources["gpu_product"] = f"{path}.nodeSelector.{GFD_PRODUCT_LABEL}"


def _container_fields(view: RoleView) -> None:
    container = view.container
    for key in sorted(set(container) - CONTAINER_FIELDS_READ):
        if key == "ports" and all(_is_tfjob_port(port) for port in container["ports"] or ()):
            continue  # TFJob's own port: tfk8s gives TensorFlow the same
        view.notes.append(Note(view.at(key), CONTAINER_FIELDS_INSTEAD.get(key, "tfk8s does not set it")))


def _is_tfjob_port(port: dict[str, Any]) -> bool:
    return port.get("name") == TFJOB_PORT_NAME or port.get("containerPort") == TFJOB_PORT


def _env(view: RoleView) -> None:
    for index, variable in enumerate(view.container.get("env") or ()):
        path = view.at(f"env[{index}]")
        name = required_text(variable.get("name"), f"{path}.name")
        if name == TF_CONFIG or name in PROGRAM_VARIABLES or name.startswith(RESERVED_PREFIX):
            view.notes.append(Note(f"{path} ({name})", "tfk8s sets it on every task"))
            continue
        view.sources[f"env.{name}"] = path
        source = variable.get("valueFrom")
        if source is None:
            view.env[name] = str(variable.get("value", ""))
            continue
        secret = source.get("secretKeyRef")
        if secret is None:
            view.notes.append(Note(f"{path} ({name})", "tfk8s:program.env takes values and Secret keys only"))
            continue
        for part in ("name", "key"):
            required_text(secret.get(part), f"{path}.valueFrom.secretKeyRef.{part}")
        view.env[name] = {"secret": secret.get("name"), "key": secret.get("key")}
        if secret.get("optional"):
            view.notes.append(Note(f"{path}.valueFrom.secretKeyRef.optional", "tfk8s's Secret keys are required"))


def _claims(view: RoleView) -> None:
    volumes: dict[Any, tuple[Optional[int], dict[str, Any]]] = {
        volume.get("name"): (at, volume) for at, volume in enumerate(view.replica.pod.get("volumes") or ())
    }
    for index, mount in enumerate(view.container.get("volumeMounts") or ()):
        path = view.at(f"volumeMounts[{index}]")
        at, volume = volumes.get(mount.get("name"), (None, {}))
        claim = volume.get("persistentVolumeClaim")
        mount_path = mount.get("mountPath", "")
        if claim is None:
            kind = next((key for key in volume if key != "name"), "missing")
            view.notes.append(
                Note(
                    f"{path} ({mount_path})",
                    f"a {kind} volume: tfk8s mounts existing "
                    "PersistentVolumeClaims only (tfk8s:program.volumes); bake it into the image",
                )
            )
            continue
        mount_path = required_text(mount.get("mountPath"), f"{path}.mountPath")
        clash = next((own for own in OWN_MOUNTS if mount_path == own or mount_path.startswith(f"{own}/")), None)
        if clash:
            view.notes.append(Note(f"{path} ({mount_path})", f"tfk8s mounts {clash} itself; mount the claim elsewhere"))
            continue
        for key in ("subPath", "subPathExpr", "mountPropagation"):
            if key in mount:
                view.notes.append(Note(f"{path}.{key}", "tfk8s mounts the whole claim"))
        claim_path = f"{view.replica.path}.template.spec.volumes[{at}].persistentVolumeClaim.claimName"
        view.claims.append(
            {
                "claim": required_text(claim.get("claimName"), claim_path),
                "mountPath": mount_path,
                "readOnly": bool(mount.get("readOnly") or claim.get("readOnly")),
                # Each value's TFJob field, for a refusal to name (carry.py's sources).
                "sources": {"claim": claim_path, "mountPath": f"{path}.mountPath", "readOnly": f"{path}.readOnly"},
            }
        )


def _a_quantity(value: Any, path: str) -> None:
    if value is None:
        return
    text = str(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else value
    if not isinstance(text, str) or not re.match(QUANTITY_PATTERN, text):
        raise NotImportable(f"{path}: {QUANTITY_FORM} (got {described(value)})")


def required_text(value: Any, path: str) -> str:
    """A field Kubernetes requires, as text (a name, a claim's, a Secret's name and key, a mount's path)."""
    if value is None or value == "":
        raise NotImportable(f"{path} is missing; Kubernetes requires it")
    if not isinstance(value, str):
        raise NotImportable(f"{path} is {described(value)}; it is text")
    return value


def _resources(view: RoleView) -> None:
    resources = view.container.get("resources") or {}
    requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
    path = view.at("resources")
    # The one not carried beside the one carried (the requests' CPU, the limits' memory, which the
    # stack's own check names): Kubernetes refuses the TFJob for either.
    if "cpu" in requests:
        _a_quantity(limits.get("cpu"), f"{path}.limits.cpu")
    if "memory" in limits:
        _a_quantity(requests.get("memory"), f"{path}.requests.memory")
    cpu = requests.get("cpu", limits.get("cpu"))
    view.cpu = None if cpu is None else str(cpu)
    view.sources["cpu"] = f"{path}.{'requests' if 'cpu' in requests else 'limits'}.cpu"
    if "cpu" in limits:
        view.notes.append(
            Note(
                f"{path}.limits.cpu",
                "tfk8s sets no CPU limit: a limit throttles TensorFlow's threads (the request is kept)",
            )
        )
    memory = limits.get("memory", requests.get("memory"))
    view.memory = None if memory is None else str(memory)
    view.sources["memory"] = f"{path}.{'limits' if 'memory' in limits else 'requests'}.memory"
    if "memory" in limits and "memory" in requests and str(limits["memory"]) != str(requests["memory"]):
        view.notes.append(Note(f"{path}.requests.memory", f"tfk8s requests what it limits: {limits['memory']}"))
    gpus = limits.get(GPU_RESOURCE, requests.get(GPU_RESOURCE))
    gpus_at = view.sources["gpus"] = f"{path}.{'limits' if GPU_RESOURCE in limits else 'requests'}.{GPU_RESOURCE}"
    if gpus is not None and not (str(gpus).isascii() and str(gpus).isdigit()):
        raise NotImportable(f"{gpus_at} is {gpus!r}; GPUs are whole numbers")
    if gpus is not None and int(gpus) > 0:
        if view.replica.role == "worker":
            view.gpus = int(gpus)
        else:
            view.notes.append(
                Note(
                    f"{path}.limits.{GPU_RESOURCE}",
                    "tfk8s gives GPUs to workers only (a PS holds variables in memory, a chief coordinates)",
                )
            )
    for kind in sorted((set(requests) | set(limits)) - {"cpu", "memory", GPU_RESOURCE}):
        view.notes.append(Note(f"{path} ({kind})", "tfk8s requests CPU, memory and nvidia.com/gpu only"))
