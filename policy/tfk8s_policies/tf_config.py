"""Every task agrees on one cluster, and each address is the DNS name of exactly its task's pod."""

from __future__ import annotations

import json
import re
from typing import Any, Mapping, Optional

from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    Severity,
    StackValidationArgs,
    StackValidationPolicy,
)

from .facts import TF_PORT, role_of
from .pods import previewed_jobsets_named_back
from .reading import (
    PodIdentity,
    as_list,
    clusters,
    get,
    jobset_services,
    name_of,
    namespace_of,
    number,
    of_kind,
    task_of,
)

MANDATORY = EnforcementLevel.MANDATORY
ADVISORY = EnforcementLevel.ADVISORY


# `<pod host name>.<Service>.<namespace>.svc` (tfk8s), or `<Service>.<namespace>.svc` (a Service per task).
ADDRESS = re.compile(r"^(?:([a-z0-9-]+)\.)?([a-z0-9-]+)\.([a-z0-9-]+)\.svc(?:\.[a-z0-9.-]+)?:(\d+)$")


def _named_services(groups: Mapping[tuple, list]) -> set[tuple[Optional[str], str]]:
    """(namespace, Service) of every address in each experiment's TF_CONFIG cluster (its first
    task's: tasks that disagree on the cluster are reported on their own)."""
    named = set()
    for (namespace, _), group in groups.items():
        for addresses in (get(group[0].tf_config, "cluster", default={}) or {}).values():
            for address in as_list(addresses):
                match = ADDRESS.match(str(address))
                if match:
                    named.add((namespace, match.group(2)))
    return named


def _validate_tf_config(args: StackValidationArgs, report: ReportViolation) -> None:
    resources = list(args.resources)
    groups = clusters(resources)
    renamed = previewed_jobsets_named_back(resources, _named_services(groups))
    if any(a is not b for a, b in zip(renamed, resources)):
        resources, groups = renamed, clusters(renamed)
    # A JobSet's pods are named under the headless Service its controller makes.
    services = of_kind(resources, "Service") + jobset_services(resources)
    for (namespace, instance), group in groups.items():
        where = f"experiment {instance or '?'} in {namespace}"
        # A pod without TF_CONFIG has no task, so it is malformed too.
        malformed = [
            w for w in group if any(c is None or "_malformed" in c or task_of(c) is None for c in w.tf_configs)
        ]
        for workload in malformed:
            missing = sorted({name for c in workload.tf_configs for name in get(c, "_unresolved", default=())})
            if missing:
                report(
                    f"{workload.kind} {workload.name}: TF_CONFIG refers to {', '.join(missing)}, which no "
                    "env or envFrom ConfigMap of the stack defines",
                    workload.resource.urn,
                )
            else:
                report(
                    f"{workload.kind} {workload.name}: TF_CONFIG is not valid JSON with cluster and task",
                    workload.resource.urn,
                )
        group = [w for w in group if w not in malformed]
        if not group:
            continue
        # Pods that read one cluster share one parsed object: each distinct one is written out once.
        distinct = {id(get(c, "cluster")): get(c, "cluster") for w in group for c in w.tf_configs}
        cluster_texts = {json.dumps(cluster, sort_keys=True) for cluster in distinct.values()}
        if len(cluster_texts) > 1:
            report(f"{where}: tasks disagree on the cluster in TF_CONFIG ({len(cluster_texts)} versions)", None)
            continue
        cluster = get(group[0].tf_config, "cluster", default={}) or {}
        # Workers only (a team's MultiWorkerMirroredStrategy program) is a cluster; no worker is none.
        if not as_list(get(cluster, "worker")):
            report(f"{where}: the cluster needs at least one worker", None)
        # Every pod here has a task: a workload with a pod that has none was reported as malformed above.
        tasks = [(workload, pod, task) for workload in group for pod, task in workload.pod_tasks() if task is not None]
        seen: dict[tuple, str] = {}
        for workload, pod, task in tasks:
            pod_name = f"{workload.kind} {workload.name}" + (f" pod {pod.name}" if pod.name else "")
            if task in seen:
                report(f"{where}: {pod_name} and {seen[task]} are both task {task[0]}-{task[1]}", workload.resource.urn)
            seen[task] = pod_name
            role = role_of(task[0])
            # A role outside the training cluster (TensorFlow's side-car evaluator) is decided by that
            # trait, never by its name: no cluster lists it, and a role of one task runs task 0 only.
            # A task type with no row in the table is checked against the cluster like any other.
            if role is not None and not role.in_training_cluster:
                kind, index = task
                if (role.one_task and index != 0) or kind in cluster:
                    runs = f"runs one {kind}, {kind}-0," if role.one_task else "runs it outside the cluster"
                    report(
                        f"{where}: {pod_name} is task {kind}-{index}: TensorFlow {runs} and no cluster lists it",
                        workload.resource.urn,
                    )
                continue
            if not 0 <= task[1] < len(as_list(get(cluster, task[0]))):
                report(f"{where}: task {task[0]}-{task[1]} of {pod_name} is outside the cluster", workload.resource.urn)
        pods = ExperimentPods([(pod, task) for _, pod, task in tasks])
        in_namespace = {name_of(s.props): s for s in services if namespace_of(s.props) == namespace}
        for task_type, addresses in cluster.items():
            for index, address in enumerate(as_list(addresses)):
                problem = _address_problem(str(address), (task_type, index), namespace, in_namespace, pods)
                if problem:
                    report(f"{where}: {task_type}-{index} address {address}: {problem}", None)


class ExperimentPods:
    """An experiment's pods with their tasks, looked up by DNS name and by Service (each once)."""

    def __init__(self, pods: list[tuple[PodIdentity, tuple[str, int]]]) -> None:
        self.pods = pods
        self.by_name: dict[tuple, list[tuple[PodIdentity, tuple[str, int]]]] = {}
        for pod, task in pods:
            self.by_name.setdefault((pod.hostname, pod.subdomain), []).append((pod, task))
        # By Service name (None for a Service without one).
        self._selected: dict[Optional[str], list[tuple[PodIdentity, tuple[str, int]]]] = {}
        self._selected_ids: dict[Optional[str], set[int]] = {}

    def selected_by(self, service: Any) -> list[tuple[PodIdentity, tuple[str, int]]]:
        """The pods the Service selects, in order (the first call per Service computes them)."""
        name = name_of(service.props)
        if name not in self._selected:
            selector = get(service.props, "spec", "selector", default={}) or {}
            self._selected[name] = [
                (pod, task)
                for pod, task in self.pods
                if selector and all(pod.labels.get(k) == v for k, v in selector.items())
            ]
        return self._selected[name]

    def is_selected(self, service: Any, pod: PodIdentity) -> bool:
        name = name_of(service.props)
        if name not in self._selected_ids:
            self._selected_ids[name] = {id(selected) for selected, _ in self.selected_by(service)}
        return id(pod) in self._selected_ids[name]


def _address_problem(
    address: str,
    task: tuple[str, int],
    namespace: Optional[str],
    services: Mapping[Optional[str], Any],
    pods: ExperimentPods,
) -> Optional[str]:
    """Why `address` does not reach the pod of `task` (None when it does)."""
    match = ADDRESS.match(address)
    if not match:
        return "not of the form <pod host name>.<service>.<namespace>.svc:<port>"
    host, service_name, service_namespace, port = match.group(1), match.group(2), match.group(3), int(match.group(4))
    if port != TF_PORT:
        return f"port {port}, not {TF_PORT}"
    if service_namespace != namespace:
        return f"points to namespace {service_namespace}"
    service = services.get(service_name)
    if service is None:
        return f"no Service {service_name} in {namespace}"
    if TF_PORT not in [number(get(p, "port")) for p in as_list(get(service.props, "spec", "ports"))]:
        return f"Service {service_name} does not serve port {TF_PORT}"
    selected = pods.selected_by(service)
    if host is None:
        # The Service's own name resolves to the pods it selects: it must be exactly this task's one.
        if [t for _, t in selected] != [task]:
            return f"Service {service_name} selects {len(selected)} tasks' pods, not exactly {task[0]}-{task[1]}'s"
        return None
    # A pod's name resolves under a headless Service it is selected by and names as its subdomain.
    named = pods.by_name.get((host, service_name), [])
    if not named:
        return f"no pod has host name {host} under Service {service_name}"
    if [t for _, t in named] != [task]:
        return f"pod {host} runs {', '.join(f'{t[0]}-{t[1]}' for _, t in named)}, not {task[0]}-{task[1]}"
    if not pods.is_selected(service, named[0][0]):
        return f"Service {service_name} does not select pod {host}, so the name does not resolve"
    return None


POLICIES = [
    StackValidationPolicy(
        name="tfk8s-tf-config-consistent",
        description="Every task (every pod of a StatefulSet or of a JobSet's Jobs) has the same TF_CONFIG cluster "
        "and a unique in-range task, and each address is the DNS name of exactly its task's pod under a Service "
        "on 2222 that selects it (a JobSet's own headless Service included); at least one PS and one worker.",
        validate=_validate_tf_config,
        enforcement_level=MANDATORY,
        severity=Severity.HIGH,
        remediation_steps="Render TF_CONFIG from one cluster spec of pod host names: under the JobSet's subdomain "
        "with each task's index its group's first index plus its Job completion index, or under one headless "
        "Service per role with each pod's index from its StatefulSet ordinal.",
    ),
]
