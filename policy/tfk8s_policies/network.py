"""TensorFlow's gRPC port reachable only from the experiment's own pods (its server is unauthenticated)."""

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

from .facts import COMPONENT, INSTANCE, TF_PORT, TF_PORT_NAME
from .reading import (
    as_list,
    containers,
    get,
    kind_of,
    labels_match,
    name_of,
    namespace_of,
    number,
    of_kind,
    production_workloads,
    serves_tf,
    workloads,
)

MANDATORY = EnforcementLevel.MANDATORY
ADVISORY = EnforcementLevel.ADVISORY


def tf_port_names_of(spec: Optional[Mapping[str, Any]]) -> set[str]:
    """Names the pod gives its TF gRPC port (a NetworkPolicy may name the port instead of numbering it)."""
    return {
        get(port, "name")
        for container in containers(spec)
        for port in as_list(get(container, "ports"))
        if number(get(port, "containerPort")) == TF_PORT and isinstance(get(port, "name"), str)
    } | {TF_PORT_NAME}


def rule_opens_tf_port(rule: Mapping[str, Any], tf_port_names: set[str]) -> bool:
    """Whether an ingress rule admits TCP to the TF port: no ports at all means every port;
    a port may be a number, the start of an endPort range, a name, or absent (every port)."""
    ports = as_list(get(rule, "ports"))
    if not ports:
        return True
    for entry in ports:
        if get(entry, "protocol", default="TCP") not in ("TCP", None):
            continue
        port = get(entry, "port")
        if port is None:
            return True
        if isinstance(port, str) and number(port) is None:
            if port in tf_port_names:
                return True
            continue
        start = number(port)
        if start is None:
            continue
        end = number(get(entry, "endPort")) or start
        if start <= TF_PORT <= end:
            return True
    return False


def _validate_tf_grpc_isolation(args: StackValidationArgs, report: ReportViolation) -> None:
    policies = of_kind(args.resources, "NetworkPolicy")
    for workload in workloads(args.resources):
        if not serves_tf(workload.spec):
            continue
        selecting = [
            p
            for p in policies
            if namespace_of(p.props) == workload.namespace
            and labels_match(get(p.props, "spec", "podSelector", default={}) or {}, workload.labels)
            and "Ingress" in (as_list(get(p.props, "spec", "policyTypes")) or ["Ingress"])
        ]
        if not selecting:
            report(
                f"{workload.kind} {workload.name}: no NetworkPolicy selects its pods, so TensorFlow's "
                f"unauthenticated gRPC port {TF_PORT} is open to the whole cluster",
                workload.resource.urn,
            )
            continue
        instance = workload.labels.get(INSTANCE)
        tf_port_names = tf_port_names_of(workload.spec)
        for policy in selecting:
            for rule in as_list(get(policy.props, "spec", "ingress")):
                if not rule_opens_tf_port(rule, tf_port_names):
                    continue
                peers = as_list(get(rule, "from"))
                problem = None
                if not peers:
                    problem = "admits every source (empty 'from')"
                for peer in peers:
                    if get(peer, "ipBlock") is not None:
                        problem = "admits an ipBlock"
                    elif get(peer, "namespaceSelector") is not None:
                        problem = "admits pods of other namespaces"
                    elif get(peer, "podSelector") is None:
                        problem = "has a peer without a podSelector"
                    elif instance is None or get(peer, "podSelector", "matchLabels", INSTANCE) != instance:
                        problem = f"admits pods beyond this experiment (podSelector must require {INSTANCE}={instance})"
                if problem:
                    report(
                        f"NetworkPolicy {name_of(policy.props)} {problem} on port {TF_PORT} of "
                        f"{workload.kind} {workload.name}",
                        policy.urn,
                    )


def limits_egress(policy_spec: Mapping[str, Any]) -> bool:
    """Whether a NetworkPolicy limits the egress of the pods it selects: an Egress policy (listed in
    policyTypes, or, with none listed, given egress rules, as the API server defaults it) without a
    rule that admits everything (no `to` and no `ports`)."""
    rules = as_list(get(policy_spec, "egress"))
    types = as_list(get(policy_spec, "policyTypes")) or (["Ingress", "Egress"] if rules else ["Ingress"])
    return "Egress" in types and not any(get(r, "to") is None and get(r, "ports") is None for r in rules)


def _validate_egress_in_production(args: StackValidationArgs, report: ReportViolation) -> None:
    policies = of_kind(args.resources, "NetworkPolicy")
    for workload in production_workloads(args):
        if serves_tf(workload.spec) and not any(
            namespace_of(p.props) == workload.namespace
            and labels_match(get(p.props, "spec", "podSelector", default={}) or {}, workload.labels)
            and limits_egress(get(p.props, "spec", default={}) or {})
            for p in policies
        ):
            report(
                f"{workload.kind} {workload.name}: its pods may connect anywhere; a production experiment "
                "lists where (tfk8s:cluster.egress), so that code sent to its gRPC port cannot send the data "
                "or the model out",
                workload.resource.urn,
            )


def _validate_headless_services(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if kind_of(args.resource_type) != "Service" or not args.resource_type.startswith("kubernetes:"):
        return
    spec = get(args.props, "spec", default={}) or {}
    entries = as_list(get(spec, "ports"))
    numbers = {number(get(p, "port")) for p in entries} | {number(get(p, "targetPort")) for p in entries}
    # A Service may reach the TF port by its name in the pods.
    names = {get(p, "targetPort") for p in entries} | {get(p, "name") for p in entries}
    selector = get(spec, "selector", default={}) or {}
    if TF_PORT not in numbers and TF_PORT_NAME not in names and COMPONENT not in selector:
        return
    service_type = get(spec, "type", default="ClusterIP")
    if service_type != "ClusterIP":
        report(f"Service {name_of(args.props)} is {service_type}; a TF task Service must be a headless ClusterIP", None)
    if get(spec, "clusterIP") != "None":
        report(f"Service {name_of(args.props)} is not headless (clusterIP: None)", None)
    if as_list(get(spec, "externalIPs")):
        report(f"Service {name_of(args.props)} has externalIPs", None)


POLICIES = [
    StackValidationPolicy(
        name="tfk8s-tf-grpc-isolation",
        description="TF task pods are selected by a NetworkPolicy that admits port 2222 only from pods of the same "
        "experiment (TensorFlow's gRPC server is unauthenticated and runs any graph sent to it).",
        validate=_validate_tf_grpc_isolation,
        enforcement_level=MANDATORY,
        severity=Severity.CRITICAL,
        remediation_steps="Add a NetworkPolicy selecting the experiment's pods whose ingress on 2222 comes only from "
        "a podSelector requiring the experiment's instance label.",
    ),
    StackValidationPolicy(
        name="tfk8s-egress-in-production",
        description="A production experiment's TF pods are selected by a NetworkPolicy that limits their egress.",
        validate=_validate_egress_in_production,
        enforcement_level=ADVISORY,
        severity=Severity.MEDIUM,
        remediation_steps="Set tfk8s:cluster.egress to the addresses the tasks need (data, checkpoints), [] for none.",
    ),
    ResourceValidationPolicy(
        name="tfk8s-headless-task-services",
        description="TF task Services are headless ClusterIP Services: no NodePort, LoadBalancer or externalIPs.",
        validate=_validate_headless_services,
        enforcement_level=MANDATORY,
        severity=Severity.HIGH,
        remediation_steps="Set spec.clusterIP: None and drop type, nodePort and externalIPs.",
    ),
]
