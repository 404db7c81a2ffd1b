"""What a TensorFlow task's pod may not loosen: the kernel's guards, its process namespace, a token
it does not need, a writable root filesystem, and the cluster's own priority classes.

A TF task runs an unauthenticated gRPC server that executes any graph sent to it: whoever reaches
it runs code in the pod. These rules keep that code fenced in (the Pod Security Standards' guards
on seccomp, /proc and sysctls, and more: no shared process namespace, no API token, a read-only
root), and are mandatory for every pod that serves TensorFlow, tfk8s's or not.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, ResourceValidationPolicy, Severity

from .reading import as_list, containers, get, kind_of, pod_templates, serves_tf

# The Pod Security Standard's safe sysctls (baseline, as of Kubernetes 1.32): namespaced in the
# pod, and no influence on other pods of the node. Any other is an unsafe sysctl.
SAFE_SYSCTLS = frozenset(
    {
        "kernel.shm_rmid_forced",
        "net.ipv4.ip_local_port_range",
        "net.ipv4.ip_unprivileged_port_start",
        "net.ipv4.tcp_syncookies",
        "net.ipv4.ping_group_range",
        "net.ipv4.ip_local_reserved_ports",
        "net.ipv4.tcp_keepalive_time",
        "net.ipv4.tcp_fin_timeout",
        "net.ipv4.tcp_keepalive_intvl",
        "net.ipv4.tcp_keepalive_probes",
        "net.ipv4.tcp_rmem",
        "net.ipv4.tcp_wmem",
    }
)
# PriorityClasses Kubernetes keeps for the cluster's own components: a task that borrows one
# preempts them, and the API server admits it only in kube-system.
SYSTEM_PRIORITY_PREFIX = "system-"


def _tf_pod_security(args: ResourceValidationArgs, report: ReportViolation) -> None:
    for template in pod_templates(kind_of(args.resource_type), args.props):
        if serves_tf(template.spec):
            for problem in pod_security_problems(template.spec, template.name):
                report(problem, None)


def pod_security_problems(spec: Mapping[str, Any], name: Optional[str]) -> list[str]:
    """What a TF pod's spec loosens, one line each, naming the pod template (and container)."""
    problems = []
    pod_security = get(spec, "securityContext", default={}) or {}
    if _unconfined(pod_security):
        problems.append(f"{name}: seccompProfile is Unconfined; use RuntimeDefault")
    unsafe = [get(s, "name") for s in as_list(get(pod_security, "sysctls")) if get(s, "name") not in SAFE_SYSCTLS]
    if unsafe:
        problems.append(f"{name}: sets unsafe sysctls {', '.join(map(str, unsafe))}")
    if get(spec, "shareProcessNamespace") is True:
        problems.append(f"{name}: shareProcessNamespace is on: its containers see each other's processes and files")
    if get(spec, "hostUsers") is True:
        problems.append(f"{name}: hostUsers: true written out; leave it out (the cluster's default) or set false")
    if get(spec, "automountServiceAccountToken") is not False:
        problems.append(f"{name}: set automountServiceAccountToken: false (a task needs no API token)")
    priority_class = get(spec, "priorityClassName")
    if isinstance(priority_class, str) and priority_class.startswith(SYSTEM_PRIORITY_PREFIX):
        problems.append(f"{name}: priorityClassName {priority_class} is the cluster's own; create one for experiments")
    for container in containers(spec):
        problems += [f"{name}/{get(container, 'name')}: {p}" for p in _container_problems(container)]
    return problems


def _container_problems(container: Mapping[str, Any]) -> list[str]:
    security = get(container, "securityContext", default={}) or {}
    problems = []
    if _unconfined(security):
        problems.append("seccompProfile is Unconfined; use RuntimeDefault")
    if get(security, "procMount") == "Unmasked":
        problems.append("procMount is Unmasked; leave it Default")
    if get(security, "readOnlyRootFilesystem") is not True:
        problems.append("set readOnlyRootFilesystem: true (write to a volume)")
    return problems


def _unconfined(security: Optional[Mapping[str, Any]]) -> bool:
    return get(security, "seccompProfile", "type") == "Unconfined"


POLICIES = [
    ResourceValidationPolicy(
        name="tfk8s-tf-pod-security",
        description="TF pods keep seccomp and /proc masked, set no unsafe sysctls, share no process namespace, "
        "do not write hostUsers: true, mount no service-account token, have a read-only root filesystem and "
        "borrow no system-* PriorityClass (a TF task runs any graph sent to its port).",
        validate=_tf_pod_security,
        enforcement_level=EnforcementLevel.MANDATORY,
        severity=Severity.HIGH,
        remediation_steps="Leave seccomp RuntimeDefault and procMount Default, drop unsafe sysctls, "
        "shareProcessNamespace and hostUsers: true, set automountServiceAccountToken: false and "
        "readOnlyRootFilesystem: true, and give experiments a PriorityClass of their own.",
    ),
]
