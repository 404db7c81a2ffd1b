"""What any reviewer of Kubernetes objects checks: container security and resources, namespaces, APIs."""

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

from .facts import COMPONENT, REMOVED_API_VERSIONS, role_by_load
from .reading import (
    api_version_of,
    as_list,
    containers,
    get,
    kind_of,
    name_of,
    namespace_of,
    pod_templates,
    production_workloads,
    serves_tf,
    tf_config_of,
)

MANDATORY = EnforcementLevel.MANDATORY
ADVISORY = EnforcementLevel.ADVISORY


def _container_hygiene(args: ResourceValidationArgs, report: ReportViolation) -> None:
    for template in pod_templates(kind_of(args.resource_type), args.props):
        _template_hygiene(template.spec, template.name, report)


def _template_hygiene(spec: Mapping[str, Any], name: Optional[str], report: ReportViolation) -> None:
    pod_security = get(spec, "securityContext", default={}) or {}
    for container in containers(spec):
        cname = get(container, "name")
        requests = get(container, "resources", "requests", default={}) or {}
        limits = get(container, "resources", "limits", default={}) or {}
        if not requests.get("cpu") or not requests.get("memory"):
            report(f"{name}/{cname}: set cpu and memory requests", None)
        if not limits.get("memory"):
            report(f"{name}/{cname}: set a memory limit", None)
        image = str(get(container, "image", default=""))
        tag = image.rsplit("/", 1)[-1]
        if "@" not in image and (":" not in tag or tag.endswith(":latest")):
            report(f"{name}/{cname}: image '{image}' is untagged or latest; pin a tag", None)
        security = get(container, "securityContext", default={}) or {}
        if get(security, "privileged") is True:
            report(f"{name}/{cname}: privileged", None)
        if get(security, "allowPrivilegeEscalation") is not False:
            report(f"{name}/{cname}: set allowPrivilegeEscalation: false", None)
        if "ALL" not in as_list(get(security, "capabilities", "drop")):
            report(f"{name}/{cname}: drop all capabilities", None)
        if as_list(get(security, "capabilities", "add")):
            report(f"{name}/{cname}: adds capabilities", None)
        if get(security, "runAsNonRoot", default=get(pod_security, "runAsNonRoot")) is not True:
            report(f"{name}/{cname}: set runAsNonRoot: true", None)
        if any(get(port, "hostPort") for port in as_list(get(container, "ports"))):
            report(f"{name}/{cname}: uses a hostPort", None)
    for flag in ("hostNetwork", "hostPID", "hostIPC"):
        if get(spec, flag) is True:
            report(f"{name}: {flag} is on", None)
    for volume in as_list(get(spec, "volumes")):
        if get(volume, "hostPath") is not None:
            report(f"{name}: volume {get(volume, 'name')} is a hostPath", None)


# Kinds that have no namespace (the API's own scope). The provider's `...Patch`
# and `...List` tokens share their kind's scope.
CLUSTER_SCOPED_KINDS = frozenset(
    {
        "Namespace",
        "Node",
        "PersistentVolume",
        "StorageClass",
        "CSIDriver",
        "CSINode",
        "VolumeAttachment",
        "ClusterRole",
        "ClusterRoleBinding",
        "CustomResourceDefinition",
        "APIService",
        "PriorityClass",
        "RuntimeClass",
        "IngressClass",
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "MutatingAdmissionPolicy",
        "MutatingAdmissionPolicyBinding",
        "CertificateSigningRequest",
        "ClusterTrustBundle",
        "FlowSchema",
        "PriorityLevelConfiguration",
        "ComponentStatus",
        "DeviceClass",
        "ResourceSlice",
        "IPAddress",
        "ServiceCIDR",
        "StorageVersionMigration",
        "VolumeAttributesClass",
        "SelfSubjectReview",
        "TokenReview",
        "SubjectAccessReview",
        "SelfSubjectAccessReview",
        "SelfSubjectRulesReview",
    }
)

# Provider resources that are not API objects, or that say their namespace at the top level.
NOT_API_OBJECTS = frozenset({"Provider", "ConfigFile", "ConfigGroup", "Directory"})

TOP_LEVEL_NAMESPACE_KINDS = frozenset({"Release", "Chart"})  # kubernetes:helm.sh/v3|v4


def _base_kind(kind: str) -> str:
    for suffix in ("Patch", "List"):
        if kind.endswith(suffix) and kind != suffix:
            return kind[: -len(suffix)]
    return kind


def _not_default_namespace(args: ResourceValidationArgs, report: ReportViolation) -> None:
    kind = _base_kind(kind_of(args.resource_type))
    if not args.resource_type.startswith("kubernetes:") or kind in NOT_API_OBJECTS or kind in CLUSTER_SCOPED_KINDS:
        return
    if kind in TOP_LEVEL_NAMESPACE_KINDS and args.resource_type.startswith("kubernetes:helm.sh/"):
        namespace, name = get(args.props, "namespace"), get(args.props, "name") or name_of(args.props)
    else:
        namespace, name = namespace_of(args.props), name_of(args.props)
    if namespace in (None, "", "default"):
        report(f"{kind} {name} is in the default namespace; give each experiment its own", None)


def _no_removed_apis(args: ResourceValidationArgs, report: ReportViolation) -> None:
    api_version = api_version_of(args.resource_type)
    if api_version in REMOVED_API_VERSIONS:
        report(
            f"{api_version} {kind_of(args.resource_type)} was removed from Kubernetes; use apps/v1 or batch/v1", None
        )


def _validate_strict_in_production(args: StackValidationArgs, report: ReportViolation) -> None:
    for workload in production_workloads(args):
        terms = as_list(
            get(
                workload.spec,
                "affinity",
                "nodeAffinity",
                "requiredDuringSchedulingIgnoredDuringExecution",
                "nodeSelectorTerms",
            )
        )
        pods = len(workload.pods) or 1
        if any(get(f, "key") == "metadata.name" for t in terms for f in as_list(get(t, "matchFields"))):
            report(
                f"{workload.name} requires one named server for its {pods} pod{'s' if pods > 1 else ''}; in "
                "production a lost server strands them (set cluster.strict: false)",
                workload.resource.urn,
            )
        elif any(
            get(c, "whenUnsatisfiable") == "DoNotSchedule" and get(c, "minDomains") is not None
            for c in as_list(get(workload.spec, "topologySpreadConstraints"))
        ):
            # A share per server that no other server may take (components/objects/pods.py).
            report(
                f"{workload.name} holds each server to its share of its {pods} pod{'s' if pods > 1 else ''}; "
                "in production a lost "
                "server strands its share (set cluster.strict: false)",
                workload.resource.urn,
            )


def _pod_defaults(args: ResourceValidationArgs, report: ReportViolation) -> None:
    for template in pod_templates(kind_of(args.resource_type), args.props):
        spec, name = template.spec, template.name
        if not serves_tf(spec):
            continue
        task_type = get(tf_config_of(spec), "task", "type") or template.labels.get(COMPONENT)
        # The PS (the role serving the variables) is ready when its gRPC server answers.
        is_ps = task_type == role_by_load("variables").name
        if is_ps and not any(get(c, "readinessProbe", "tcpSocket") is not None for c in containers(spec)):
            report(f"PS {name}: no tcpSocket readiness probe on its gRPC port", None)


POLICIES = [
    ResourceValidationPolicy(
        name="tfk8s-container-hygiene",
        description="Containers set requests and a memory limit, pin their image, run non-root without privilege or "
        "escalation, drop all capabilities, and use no host namespaces, ports or paths.",
        validate=_container_hygiene,
        enforcement_level=MANDATORY,
        severity=Severity.HIGH,
        remediation_steps="Follow the restricted Pod Security Standard and set resources on every container.",
    ),
    ResourceValidationPolicy(
        name="tfk8s-not-default-namespace",
        description="Namespaced objects never go to the default namespace.",
        validate=_not_default_namespace,
        enforcement_level=MANDATORY,
        severity=Severity.MEDIUM,
        remediation_steps="Put each experiment in its own namespace (tfk8s: tf-<stack>).",
    ),
    ResourceValidationPolicy(
        name="tfk8s-no-removed-apis",
        description="No API versions removed from Kubernetes (extensions/v1beta1, apps/v1beta1, apps/v1beta2).",
        validate=_no_removed_apis,
        enforcement_level=MANDATORY,
        severity=Severity.HIGH,
        remediation_steps="Use apps/v1 for Deployments and StatefulSets, batch/v1 for Jobs.",
    ),
    StackValidationPolicy(
        name="tfk8s-strict-placement-in-production",
        description="Production experiments do not hold tasks to single named servers or to fixed shares of servers.",
        validate=_validate_strict_in_production,
        enforcement_level=ADVISORY,
        severity=Severity.LOW,
        remediation_steps="Set cluster.strict: false so tasks may move within their pool.",
    ),
    ResourceValidationPolicy(
        name="tfk8s-pod-defaults",
        description="PS have tcpSocket readiness probes on their gRPC port (the rest of a TF pod's defaults are "
        "mandatory: tfk8s-tf-pod-security).",
        validate=_pod_defaults,
        enforcement_level=ADVISORY,
        severity=Severity.LOW,
        remediation_steps="Give each PS a tcpSocket readiness probe on 2222.",
    ),
]
