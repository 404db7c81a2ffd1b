"""GPUs only on workers, whole, on the product the stack names; none on PS."""

from __future__ import annotations

from typing import Any, Mapping, Optional

from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    Severity,
    StackValidationArgs,
    StackValidationPolicy,
)

from .facts import COMPONENT, GPU_PRODUCT_LABELS, GPU_RESOURCE, role_by_load
from .reading import (
    as_list,
    clusters,
    containers,
    get,
    kind_of,
    number,
    pod_templates,
    task_type_of,
    tf_config_of,
)

MANDATORY = EnforcementLevel.MANDATORY
ADVISORY = EnforcementLevel.ADVISORY


def _gpu_selection_keys(spec: Mapping[str, Any]) -> list[str]:
    keys = list((get(spec, "nodeSelector", default={}) or {}).keys())
    terms = as_list(
        get(spec, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
    )
    for term in terms:
        keys += [get(e, "key") for e in as_list(get(term, "matchExpressions"))]
    return [k for k in keys if isinstance(k, str) and (k.startswith("nvidia.com/gpu") or k in GPU_PRODUCT_LABELS)]


def _gpu_limits(spec: Optional[Mapping[str, Any]]) -> list[tuple[str, Any, Any]]:
    found = []
    for container in containers(spec):
        limits = get(container, "resources", "limits", default={}) or {}
        requests = get(container, "resources", "requests", default={}) or {}
        if GPU_RESOURCE in limits or GPU_RESOURCE in requests:
            found.append((get(container, "name"), limits.get(GPU_RESOURCE), requests.get(GPU_RESOURCE)))
    return found


def _validate_ps_without_gpu(args: ResourceValidationArgs, report: ReportViolation) -> None:
    for template in pod_templates(kind_of(args.resource_type), args.props):
        spec, name = template.spec, template.name
        workload_task = get(tf_config_of(spec), "task", "type")
        # The role that serves the model's variables (the PS), by its trait in the role table.
        if (workload_task or template.labels.get(COMPONENT)) != role_by_load("variables").name:
            continue
        if _gpu_limits(spec):
            report(f"PS {name} requests {GPU_RESOURCE}; PS do memory-bound lookups and updates", None)
        if _gpu_selection_keys(spec):
            report(f"PS {name} selects GPU nodes ({', '.join(_gpu_selection_keys(spec))})", None)
        for toleration in as_list(get(spec, "tolerations")):
            if str(get(toleration, "key", default="")).startswith("nvidia.com/gpu"):
                report(f"PS {name} tolerates the GPU taint {get(toleration, 'key')}", None)


def _validate_gpu_containers(args: ResourceValidationArgs, report: ReportViolation) -> None:
    for template in pod_templates(kind_of(args.resource_type), args.props):
        spec, name = template.spec, template.name
        gpus = _gpu_limits(spec)
        if not gpus:
            continue
        for container, limit, _request in gpus:
            count = number(limit)
            if count is None or count <= 0 or not float(count).is_integer():
                report(
                    f"container {container} of {name}: {GPU_RESOURCE} must be a whole number in limits (got {limit!r})",
                    None,
                )
        if not set(GPU_PRODUCT_LABELS) & set(_gpu_selection_keys(spec)):
            report(f"{name} asks for GPUs without selecting a GPU product ({' or '.join(GPU_PRODUCT_LABELS)})", None)


def _gpu_product(spec: Mapping[str, Any]) -> Optional[str]:
    for label in GPU_PRODUCT_LABELS:
        selector = get(spec, "nodeSelector", label)
        if selector:
            return selector
    for term in as_list(
        get(spec, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
    ):
        for expression in as_list(get(term, "matchExpressions")):
            if get(expression, "key") in GPU_PRODUCT_LABELS:
                return ",".join(map(str, as_list(get(expression, "values"))))
    return None


def _validate_uniform_workers(args: StackValidationArgs, report: ReportViolation) -> None:
    for (namespace, instance), group in clusters(list(args.resources)).items():
        shapes: dict[tuple[float, Optional[str]], list[Optional[str]]] = {}
        for workload in group:
            # The tasks that compute the steps (the workers): the slowest one paces them all.
            if task_type_of(workload) != role_by_load("steps").name:
                continue
            count = sum(number(limit) or 0 for _, limit, _ in _gpu_limits(workload.spec))
            shapes.setdefault((count, _gpu_product(workload.spec) if count else None), []).append(workload.name)
        if len(shapes) > 1:
            described = "; ".join(f"{c:g} x {p or 'no GPU'}: {len(n)} workers" for (c, p), n in shapes.items())
            report(f"experiment {instance} in {namespace}: workers differ in GPUs ({described})", None)


POLICIES = [
    ResourceValidationPolicy(
        name="tfk8s-ps-without-gpu",
        description="Parameter servers request no GPUs and carry no GPU node selection or toleration.",
        validate=_validate_ps_without_gpu,
        enforcement_level=MANDATORY,
        severity=Severity.MEDIUM,
        remediation_steps="Remove nvidia.com/gpu resources, GPU node selectors and GPU tolerations from PS pods.",
    ),
    ResourceValidationPolicy(
        name="tfk8s-gpu-containers",
        description="GPU containers ask for a whole number of nvidia.com/gpu in limits and select a GPU product.",
        validate=_validate_gpu_containers,
        enforcement_level=MANDATORY,
        severity=Severity.MEDIUM,
        remediation_steps="Put a whole nvidia.com/gpu count in limits and require nvidia.com/gpu.product in node "
        "affinity.",
    ),
    StackValidationPolicy(
        name="tfk8s-uniform-gpu-workers",
        description="All workers of one TF cluster have the same GPU count and product.",
        validate=_validate_uniform_workers,
        enforcement_level=MANDATORY,
        severity=Severity.MEDIUM,
        remediation_steps="Give every worker of the experiment the same gpus and the same GPU pool.",
    ),
]
