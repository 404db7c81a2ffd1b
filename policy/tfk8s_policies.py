"""The checks a TF-on-Kubernetes reviewer would make, as CrossGuard policies.

Props arrive as the engine delivers them: read-only mappings, numbers as
floats, camelCase Kubernetes fields. Helpers below read them defensively: a
missing property is a violation where the rule requires it, never a crash.
This module never imports TensorFlow (pulumi-policy pins protobuf 5.29).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Iterable, Iterator, Mapping, Optional

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    Severity,
    StackValidationArgs,
    StackValidationPolicy,
)

TF_PORT = 2222
TF_PORT_NAME = "tf-grpc"  # the name tfk8s gives the port in pods and Services
GPU_RESOURCE = "nvidia.com/gpu"
GPU_PRODUCT = "nvidia.com/gpu.product"
INSTANCE = "app.kubernetes.io/instance"
COMPONENT = "app.kubernetes.io/component"
SETTINGS_ENV = "TFK8S_TRAINER"
PRODUCTION_LABEL = "tfk8s.io/production"
REMOVED_API_VERSIONS = ("extensions/v1beta1", "apps/v1beta1", "apps/v1beta2")
WORKLOAD_KINDS = ("Pod", "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob")
OPTIMIZER_SLOTS = {"sgd": 0, "adagrad": 1, "adam": 2}
QUANTITY_SUFFIX = {
    "": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18,
    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60, "m": 1e-3,
}


# -- reading engine props -----------------------------------------------------


def kind_of(resource_type: str) -> str:
    """'kubernetes:apps/v1:StatefulSet' -> 'StatefulSet'."""
    return resource_type.rsplit(":", 1)[-1]


def api_version_of(resource_type: str) -> str:
    parts = resource_type.split(":")
    if len(parts) != 3 or parts[0] != "kubernetes":
        return ""
    return parts[1][len("core/"):] if parts[1].startswith("core/") else parts[1]


def get(value: Any, *path: Any, default: Any = None) -> Any:
    for key in path:
        if isinstance(key, int):
            if not isinstance(value, (list, tuple)) or key >= len(value):
                return default
            value = value[key]
        else:
            if not isinstance(value, Mapping) or key not in value:
                return default
            value = value[key]
    return value


def as_list(value: Any) -> list:
    return list(value) if isinstance(value, (list, tuple)) else []


def pod_spec(kind: str, props: Mapping[str, Any]) -> Optional[Mapping[str, Any]]:
    if kind == "Pod":
        return get(props, "spec")
    if kind == "CronJob":
        return get(props, "spec", "jobTemplate", "spec", "template", "spec")
    if kind in WORKLOAD_KINDS:
        return get(props, "spec", "template", "spec")
    return None


def pod_labels(kind: str, props: Mapping[str, Any]) -> Mapping[str, str]:
    if kind == "Pod":
        return get(props, "metadata", "labels", default={}) or {}
    if kind == "CronJob":
        return get(props, "spec", "jobTemplate", "spec", "template", "metadata", "labels", default={}) or {}
    return get(props, "spec", "template", "metadata", "labels", default={}) or {}


POD_INDEX = "apps.kubernetes.io/pod-index"
# A pod's fields an env var may take through the downward API that are known before it exists.
PodFields = Mapping[str, str]


class PodIdentity:
    """One pod a workload makes: its name, DNS host name and subdomain, and labels.

    A StatefulSet makes a pod `<name>-<ordinal>` per ordinal from
    `spec.ordinals.start`, whose host name is its name under `serviceName` and
    whose label apps.kubernetes.io/pod-index is the ordinal; other workloads
    make pods whose name is not known before, with the host name they write.
    """

    def __init__(self, name: Optional[str], hostname: Optional[str], subdomain: Optional[str],
                 labels: Mapping[str, str]) -> None:
        self.name, self.hostname, self.subdomain, self.labels = name, hostname, subdomain, labels

    @property
    def fields(self) -> PodFields:
        fields = {f"metadata.labels['{key}']": str(value) for key, value in self.labels.items()}
        if self.name is not None:
            fields["metadata.name"] = self.name
        return fields


def pod_identities(kind: str, props: Mapping[str, Any]) -> list[PodIdentity]:
    labels = pod_labels(kind, props)
    spec = pod_spec(kind, props) or {}
    if kind == "StatefulSet":
        name = name_of(props)
        replicas = number(get(props, "spec", "replicas", default=1))
        start = number(get(props, "spec", "ordinals", "start", default=0))
        if name is None or replicas is None or start is None:
            return []
        service = get(props, "spec", "serviceName")
        return [
            PodIdentity(f"{name}-{ordinal}", f"{name}-{ordinal}", service, {**labels, POD_INDEX: str(ordinal)})
            for ordinal in range(int(start), int(start) + int(replicas))
        ]
    if kind == "Pod":
        return [PodIdentity(name_of(props), get(spec, "hostname") or name_of(props), get(spec, "subdomain"), labels)]
    return [PodIdentity(None, get(spec, "hostname"), get(spec, "subdomain"), labels)]


def containers(spec: Optional[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return as_list(get(spec, "containers")) + as_list(get(spec, "initContainers"))


def env_value(container: Mapping[str, Any], name: str) -> Optional[str]:
    for item in as_list(get(container, "env")):
        if get(item, "name") == name:
            return get(item, "value")
    return None


# `$(NAME)` in an env value is replaced by the variable NAME defined before it
# (envFrom first, then earlier env entries); `$$` is a literal `$`; a
# reference to an undefined variable stays as written (kubelet's rules).
ENV_REFERENCE = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")
ConfigMaps = Mapping[tuple, Mapping[str, Any]]  # (namespace, name) -> data


def config_map_data(resources: Iterable[Any]) -> dict[tuple, Mapping[str, Any]]:
    return {
        (namespace_of(r.props), name_of(r.props)): get(r.props, "data", default={}) or {}
        for r in of_kind(resources, "ConfigMap")
    }


def expand_env(value: str, variables: Mapping[str, str]) -> tuple[str, list[str]]:
    """`value` with references expanded as kubelet does; the names it could not resolve."""
    unresolved: list[str] = []

    def replace(match: re.Match) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group(1)
        if name in variables:
            return variables[name]
        unresolved.append(name)
        return match.group(0)

    return ENV_REFERENCE.sub(replace, value), unresolved


def container_env(
    container: Mapping[str, Any], namespace: Optional[str], config_maps: ConfigMaps, pod_fields: Optional[PodFields] = None
) -> tuple[dict[str, str], dict[str, list[str]]]:
    """The environment kubelet would give the container; per variable, the references left unresolved.

    `pod_fields`: the pod's fields known beforehand (its name, its labels), for downward-API variables.
    """
    variables: dict[str, str] = {}
    for source in as_list(get(container, "envFrom")):
        data = config_maps.get((namespace, get(source, "configMapRef", "name")), {})
        prefix = get(source, "prefix", default="") or ""
        variables.update({f"{prefix}{key}": str(value) for key, value in data.items()})
    unresolved: dict[str, list[str]] = {}
    for item in as_list(get(container, "env")):
        name, value = get(item, "name"), get(item, "value")
        field = get(item, "valueFrom", "fieldRef", "fieldPath")
        if isinstance(name, str) and isinstance(value, str):
            variables[name], missing = expand_env(value, variables)
            if missing:
                unresolved[name] = missing
        elif isinstance(name, str) and field in (pod_fields or {}):
            variables[name] = pod_fields[field]
    return variables, unresolved


def tf_config_of(
    spec: Optional[Mapping[str, Any]],
    namespace: Optional[str] = None,
    config_maps: Optional[ConfigMaps] = None,
    pod_fields: Optional[PodFields] = None,
) -> Optional[dict]:
    """A task's TF_CONFIG as its process sees it.

    tfk8s writes the shared cluster once, in a ConfigMap, and each task's
    TF_CONFIG refers to it and to the pod's index (its StatefulSet ordinal). A
    stack check passes the stack's ConfigMaps and the pod's fields; a check of
    one resource has none, and reads what it cannot know as unknown (null).
    """
    for container in containers(spec):
        if env_value(container, "TF_CONFIG") is None:
            continue
        variables, unresolved = container_env(container, namespace, config_maps or {}, pod_fields)
        raw = variables["TF_CONFIG"]
        if unresolved.get("TF_CONFIG"):
            if config_maps is not None:
                return {"_malformed": raw, "_unresolved": unresolved["TF_CONFIG"]}
            raw = ENV_REFERENCE.sub(lambda m: "$" if m.group(0) == "$$" else "null", raw)
        try:
            parsed = json.loads(raw)
        except ValueError:
            return {"_malformed": raw}
        return parsed if isinstance(parsed, dict) else {"_malformed": raw}
    return None


def serves_tf(spec: Optional[Mapping[str, Any]]) -> bool:
    if tf_config_of(spec) is not None:
        return True
    return any(
        number(get(port, "containerPort")) == TF_PORT
        for container in containers(spec)
        for port in as_list(get(container, "ports"))
    )


def number(value: Any) -> Optional[float]:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def quantity_bytes(value: Any) -> Optional[float]:
    """A Kubernetes quantity ('4Gi', '512Mi', '1e9', 2.0) as a number."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, str):
        return None
    match = re.fullmatch(r"([0-9.]+(?:[eE][0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E|m)?", value.strip())
    if not match:
        return None
    return float(match.group(1)) * QUANTITY_SUFFIX[match.group(2) or ""]


def labels_match(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """A LabelSelector (matchLabels and matchExpressions) against labels."""
    for key, value in (get(selector, "matchLabels", default={}) or {}).items():
        if labels.get(key) != value:
            return False
    for expression in as_list(get(selector, "matchExpressions")):
        key, operator = get(expression, "key"), get(expression, "operator")
        values = as_list(get(expression, "values"))
        present = key in labels
        if operator == "In" and not (present and labels[key] in values):
            return False
        if operator == "NotIn" and present and labels[key] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
    return True


def namespace_of(props: Mapping[str, Any]) -> Optional[str]:
    return get(props, "metadata", "namespace")


def name_of(props: Mapping[str, Any]) -> Optional[str]:
    return get(props, "metadata", "name")


class Workload:
    """A resource that runs pods, as a stack validation sees it."""

    def __init__(self, resource: Any, config_maps: ConfigMaps) -> None:
        self.resource = resource
        self.kind = kind_of(resource.resource_type)
        self.props = resource.props
        self.spec = pod_spec(self.kind, self.props)
        self.labels = pod_labels(self.kind, self.props)
        self.namespace = namespace_of(self.props)
        self.name = name_of(self.props)
        self.pods = pod_identities(self.kind, self.props)
        # Each pod's TF_CONFIG (they differ in the task index only); None where the pods have none.
        self.tf_configs = [tf_config_of(self.spec, self.namespace, config_maps, pod.fields) for pod in self.pods]
        self.tf_config = self.tf_configs[0] if self.tf_configs else None
        self.settings = settings_of(self.spec, self.namespace, config_maps)

    @property
    def task(self) -> Optional[tuple[str, int]]:
        """The task of the workload's first pod."""
        return task_of(self.tf_config)

    def pod_tasks(self) -> list[tuple[PodIdentity, Optional[tuple[str, int]]]]:
        return [(pod, task_of(config)) for pod, config in zip(self.pods, self.tf_configs)]


def task_of(tf_config: Optional[Mapping[str, Any]]) -> Optional[tuple[str, int]]:
    task = get(tf_config, "task")
    kind, index = get(task, "type"), number(get(task, "index"))
    return (kind, int(index)) if isinstance(kind, str) and index is not None else None


def workloads(resources: Iterable[Any]) -> Iterator[Workload]:
    resources = list(resources)
    config_maps = config_map_data(resources)
    for resource in resources:
        if kind_of(resource.resource_type) in WORKLOAD_KINDS:
            workload = Workload(resource, config_maps)
            if workload.spec is not None:
                yield workload


def of_kind(resources: Iterable[Any], kind: str) -> list[Any]:
    return [r for r in resources if kind_of(r.resource_type) == kind and r.resource_type.startswith("kubernetes:")]


def task_type_of(workload: Workload) -> Optional[str]:
    task = workload.task
    return task[0] if task else workload.labels.get(COMPONENT)


def settings_of(spec: Optional[Mapping[str, Any]], namespace: Optional[str], config_maps: ConfigMaps) -> Optional[dict]:
    """The trainer settings a pod gets: a literal env value or an envFrom ConfigMap."""
    for container in containers(spec):
        raw = container_env(container, namespace, config_maps)[0].get(SETTINGS_ENV)
        if raw:
            try:
                return json.loads(raw)
            except ValueError:
                return {"_malformed": raw}
    return None


def chief_settings(group: list["Workload"]) -> Optional[dict]:
    """The settings of the task that builds the model (the chief; any task if there is none)."""
    chiefs = [w for w in group if task_type_of(w) == "chief"]
    return (chiefs or group)[0].settings


def embedding_shards(settings: Mapping[str, Any], ps_count: int) -> int:
    """The trainer's rule (trainer/settings.py): one shard per PS in TF_CONFIG; one with partition none."""
    return 1 if settings.get("partition") == "none" else max(ps_count, 1)


def clusters(resources: list) -> dict[tuple, list[Workload]]:
    """TF workloads grouped by (namespace, experiment instance)."""
    groups: dict[tuple, list[Workload]] = {}
    for workload in workloads(resources):
        if workload.tf_config is not None:
            key = (workload.namespace, workload.labels.get(INSTANCE))
            groups.setdefault(key, []).append(workload)
    return groups


# -- mandatory ----------------------------------------------------------------


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
        end = number(get(entry, "endPort")) or start
        if start is not None and start <= TF_PORT <= end:
            return True
    return False


def _validate_tf_grpc_isolation(args: StackValidationArgs, report: ReportViolation) -> None:
    policies = of_kind(args.resources, "NetworkPolicy")
    for workload in workloads(args.resources):
        if not serves_tf(workload.spec):
            continue
        selecting = [
            p for p in policies
            if namespace_of(p.props) == workload.namespace
            and labels_match(get(p.props, "spec", "podSelector", default={}) or {}, workload.labels)
            and "Ingress" in (as_list(get(p.props, "spec", "policyTypes")) or ["Ingress"])
        ]
        if not selecting:
            report(f"{workload.kind} {workload.name}: no NetworkPolicy selects its pods, so TensorFlow's "
                   f"unauthenticated gRPC port {TF_PORT} is open to the whole cluster", workload.resource.urn)
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
                    report(f"NetworkPolicy {name_of(policy.props)} {problem} on port {TF_PORT} of "
                           f"{workload.kind} {workload.name}", policy.urn)


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
        report(f"Service {name_of(args.props)} is {service_type}; a TF task Service must be a headless ClusterIP")
    if get(spec, "clusterIP") != "None":
        report(f"Service {name_of(args.props)} is not headless (clusterIP: None)")
    if as_list(get(spec, "externalIPs")):
        report(f"Service {name_of(args.props)} has externalIPs")


# `<pod host name>.<Service>.<namespace>.svc` (tfk8s), or `<Service>.<namespace>.svc` (a Service per task).
ADDRESS = re.compile(r"^(?:([a-z0-9-]+)\.)?([a-z0-9-]+)\.([a-z0-9-]+)\.svc(?:\.[a-z0-9.-]+)?:(\d+)$")


def _validate_tf_config(args: StackValidationArgs, report: ReportViolation) -> None:
    services = of_kind(args.resources, "Service")
    for (namespace, instance), group in clusters(list(args.resources)).items():
        where = f"experiment {instance or '?'} in {namespace}"
        malformed = [w for w in group if any("_malformed" in c or task_of(c) is None for c in w.tf_configs)]
        for workload in malformed:
            missing = sorted({name for c in workload.tf_configs for name in c.get("_unresolved", ())})
            if missing:
                report(f"{workload.kind} {workload.name}: TF_CONFIG refers to {', '.join(missing)}, which no "
                       "env or envFrom ConfigMap of the stack defines", workload.resource.urn)
            else:
                report(f"{workload.kind} {workload.name}: TF_CONFIG is not valid JSON with cluster and task",
                       workload.resource.urn)
        group = [w for w in group if w not in malformed]
        if not group:
            continue
        cluster_texts = {json.dumps(get(c, "cluster"), sort_keys=True) for w in group for c in w.tf_configs}
        if len(cluster_texts) > 1:
            report(f"{where}: tasks disagree on the cluster in TF_CONFIG ({len(cluster_texts)} versions)")
            continue
        cluster = get(group[0].tf_config, "cluster", default={}) or {}
        if not as_list(get(cluster, "ps")) or not as_list(get(cluster, "worker")):
            report(f"{where}: the cluster needs at least one ps and one worker")
        seen: dict[tuple, str] = {}
        for workload in group:
            for pod, task in workload.pod_tasks():
                pod_name = f"{workload.kind} {workload.name}" + (f" pod {pod.name}" if pod.name else "")
                if task in seen:
                    report(f"{where}: {pod_name} and {seen[task]} are both task {task[0]}-{task[1]}",
                           workload.resource.urn)
                seen[task] = pod_name
                if not 0 <= task[1] < len(as_list(get(cluster, task[0]))):
                    report(f"{where}: task {task[0]}-{task[1]} of {pod_name} is outside the cluster",
                           workload.resource.urn)
        pods = ExperimentPods([(pod, task) for workload in group for pod, task in workload.pod_tasks()])
        in_namespace = {name_of(s.props): s for s in services if namespace_of(s.props) == namespace}
        for task_type, addresses in cluster.items():
            for index, address in enumerate(as_list(addresses)):
                problem = _address_problem(str(address), (task_type, index), namespace, in_namespace, pods)
                if problem:
                    report(f"{where}: {task_type}-{index} address {address}: {problem}")


class ExperimentPods:
    """An experiment's pods with their tasks, looked up by DNS name and by Service (each once)."""

    def __init__(self, pods: list[tuple[PodIdentity, tuple[str, int]]]) -> None:
        self.pods = pods
        self.by_name: dict[tuple, list[tuple[PodIdentity, tuple[str, int]]]] = {}
        for pod, task in pods:
            self.by_name.setdefault((pod.hostname, pod.subdomain), []).append((pod, task))
        self._selected: dict[str, list[tuple[PodIdentity, tuple[str, int]]]] = {}
        self._selected_ids: dict[str, set[int]] = {}

    def selected_by(self, service: Any) -> list[tuple[PodIdentity, tuple[str, int]]]:
        """The pods the Service selects, in order (the first call per Service computes them)."""
        name = name_of(service.props)
        if name not in self._selected:
            selector = get(service.props, "spec", "selector", default={}) or {}
            self._selected[name] = [
                (pod, task) for pod, task in self.pods
                if selector and all(pod.labels.get(k) == v for k, v in selector.items())
            ]
        return self._selected[name]

    def is_selected(self, service: Any, pod: PodIdentity) -> bool:
        name = name_of(service.props)
        if name not in self._selected_ids:
            self._selected_ids[name] = {id(selected) for selected, _ in self.selected_by(service)}
        return id(pod) in self._selected_ids[name]


def _address_problem(
    address: str, task: tuple[str, int], namespace: str, services: Mapping[str, Any], pods: ExperimentPods
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


def _gpu_selection_keys(spec: Mapping[str, Any]) -> list[str]:
    keys = list((get(spec, "nodeSelector", default={}) or {}).keys())
    terms = as_list(get(spec, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms"))
    for term in terms:
        keys += [get(e, "key") for e in as_list(get(term, "matchExpressions"))]
    return [k for k in keys if isinstance(k, str) and k.startswith("nvidia.com/gpu")]


def _gpu_limits(spec: Optional[Mapping[str, Any]]) -> list[tuple[str, Any, Any]]:
    found = []
    for container in containers(spec):
        limits = get(container, "resources", "limits", default={}) or {}
        requests = get(container, "resources", "requests", default={}) or {}
        if GPU_RESOURCE in limits or GPU_RESOURCE in requests:
            found.append((get(container, "name"), limits.get(GPU_RESOURCE), requests.get(GPU_RESOURCE)))
    return found


def _validate_ps_without_gpu(args: ResourceValidationArgs, report: ReportViolation) -> None:
    kind = kind_of(args.resource_type)
    spec = pod_spec(kind, args.props)
    if spec is None:
        return
    workload_task = get(tf_config_of(spec), "task", "type")
    if (workload_task or pod_labels(kind, args.props).get(COMPONENT)) != "ps":
        return
    if _gpu_limits(spec):
        report(f"PS {name_of(args.props)} requests {GPU_RESOURCE}; PS do memory-bound lookups and updates")
    if _gpu_selection_keys(spec):
        report(f"PS {name_of(args.props)} selects GPU nodes ({', '.join(_gpu_selection_keys(spec))})")
    for toleration in as_list(get(spec, "tolerations")):
        if str(get(toleration, "key", default="")).startswith("nvidia.com/gpu"):
            report(f"PS {name_of(args.props)} tolerates the GPU taint {get(toleration, 'key')}")


def _validate_gpu_containers(args: ResourceValidationArgs, report: ReportViolation) -> None:
    spec = pod_spec(kind_of(args.resource_type), args.props)
    gpus = _gpu_limits(spec)
    if not gpus:
        return
    for container, limit, _request in gpus:
        count = number(limit)
        if count is None or count <= 0 or not float(count).is_integer():
            report(f"container {container} of {name_of(args.props)}: {GPU_RESOURCE} must be a whole number in limits (got {limit!r})")
    if GPU_PRODUCT not in _gpu_selection_keys(spec):
        report(f"{name_of(args.props)} asks for GPUs without selecting a GPU product ({GPU_PRODUCT})")


def _gpu_product(spec: Mapping[str, Any]) -> Optional[str]:
    selector = get(spec, "nodeSelector", GPU_PRODUCT)
    if selector:
        return selector
    for term in as_list(get(spec, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")):
        for expression in as_list(get(term, "matchExpressions")):
            if get(expression, "key") == GPU_PRODUCT:
                return ",".join(map(str, as_list(get(expression, "values"))))
    return None


def _validate_uniform_workers(args: StackValidationArgs, report: ReportViolation) -> None:
    for (namespace, instance), group in clusters(list(args.resources)).items():
        shapes = {}
        for workload in group:
            if task_type_of(workload) != "worker":
                continue
            count = sum(number(limit) or 0 for _, limit, _ in _gpu_limits(workload.spec))
            shapes.setdefault((count, _gpu_product(workload.spec) if count else None), []).append(workload.name)
        if len(shapes) > 1:
            described = "; ".join(f"{c:g} x {p or 'no GPU'}: {len(n)} workers" for (c, p), n in shapes.items())
            report(f"experiment {instance} in {namespace}: workers differ in GPUs ({described})")


def _validate_embedding_shards(args: StackValidationArgs, report: ReportViolation) -> None:
    """The chief shards the table over the PS its TF_CONFIG lists (the trainer's own rule, so with
    tfk8s's objects shards always equal PS). What can still break it: settings the chief cannot read
    or a partition it does not know, and tasks that get other settings than the chief (a literal env
    value on one workload overrides the shared ConfigMap), which then disagree on the table."""
    for (namespace, instance), group in clusters(list(args.resources)).items():
        cluster = get(group[0].tf_config, "cluster", default={}) or {}
        ps_count = len(as_list(get(cluster, "ps")))
        settings = chief_settings(group)
        where = f"experiment {instance} in {namespace}"
        if settings is None or "_malformed" in settings:
            report(f"{where}: the pods get no readable trainer settings ({SETTINGS_ENV}), so embedding sharding is unknown")
            continue
        partition = settings.get("partition")
        if partition not in ("auto", "range", "none"):
            report(f"{where}: partition must be set explicitly to auto, range or none (got {partition!r})")
            continue
        shards = embedding_shards(settings, ps_count)
        for workload in group:
            other = workload.settings
            if other == settings:
                continue
            other_partition = get(other, "partition") if isinstance(other, Mapping) else None
            other_shards = embedding_shards(other, ps_count) if isinstance(other, Mapping) else "unknown"
            report(f"{where}: {workload.name} gets other trainer settings than the chief (partition "
                   f"{other_partition!r}, {other_shards} embedding shards, against the chief's {partition!r}, "
                   f"{shards} shards for {ps_count} PS); every task must run the same model",
                   workload.resource.urn)


def _container_hygiene(args: ResourceValidationArgs, report: ReportViolation) -> None:
    kind = kind_of(args.resource_type)
    spec = pod_spec(kind, args.props)
    if spec is None:
        return
    name = name_of(args.props)
    pod_security = get(spec, "securityContext", default={}) or {}
    for container in containers(spec):
        cname = get(container, "name")
        requests = get(container, "resources", "requests", default={}) or {}
        limits = get(container, "resources", "limits", default={}) or {}
        if not requests.get("cpu") or not requests.get("memory"):
            report(f"{name}/{cname}: set cpu and memory requests")
        if not limits.get("memory"):
            report(f"{name}/{cname}: set a memory limit")
        image = str(get(container, "image", default=""))
        tag = image.rsplit("/", 1)[-1]
        if "@" not in image and (":" not in tag or tag.endswith(":latest")):
            report(f"{name}/{cname}: image '{image}' is untagged or latest; pin a tag")
        security = get(container, "securityContext", default={}) or {}
        if get(security, "privileged") is True:
            report(f"{name}/{cname}: privileged")
        if get(security, "allowPrivilegeEscalation") is not False:
            report(f"{name}/{cname}: set allowPrivilegeEscalation: false")
        if "ALL" not in as_list(get(security, "capabilities", "drop")):
            report(f"{name}/{cname}: drop all capabilities")
        if as_list(get(security, "capabilities", "add")):
            report(f"{name}/{cname}: adds capabilities")
        if get(security, "runAsNonRoot", default=get(pod_security, "runAsNonRoot")) is not True:
            report(f"{name}/{cname}: set runAsNonRoot: true")
        if any(get(port, "hostPort") for port in as_list(get(container, "ports"))):
            report(f"{name}/{cname}: uses a hostPort")
    for flag in ("hostNetwork", "hostPID", "hostIPC"):
        if get(spec, flag) is True:
            report(f"{name}: {flag} is on")
    for volume in as_list(get(spec, "volumes")):
        if get(volume, "hostPath") is not None:
            report(f"{name}: volume {get(volume, 'name')} is a hostPath")


# Kinds that have no namespace (the API's own scope). The provider's `...Patch`
# and `...List` tokens share their kind's scope.
CLUSTER_SCOPED_KINDS = frozenset({
    "Namespace", "Node", "PersistentVolume", "StorageClass", "CSIDriver", "CSINode", "VolumeAttachment",
    "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "APIService", "PriorityClass",
    "RuntimeClass", "IngressClass", "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration",
    "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "MutatingAdmissionPolicy",
    "MutatingAdmissionPolicyBinding", "CertificateSigningRequest", "ClusterTrustBundle", "FlowSchema",
    "PriorityLevelConfiguration", "ComponentStatus", "DeviceClass", "ResourceSlice", "IPAddress",
    "ServiceCIDR", "StorageVersionMigration", "VolumeAttributesClass", "SelfSubjectReview",
    "TokenReview", "SubjectAccessReview", "SelfSubjectAccessReview", "SelfSubjectRulesReview",
})
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
        report(f"{kind} {name} is in the default namespace; give each experiment its own")


def _no_removed_apis(args: ResourceValidationArgs, report: ReportViolation) -> None:
    api_version = api_version_of(args.resource_type)
    if api_version in REMOVED_API_VERSIONS:
        report(f"{api_version} {kind_of(args.resource_type)} was removed from Kubernetes; use apps/v1 or batch/v1")


# -- advisory -----------------------------------------------------------------


def _validate_ratio(args: StackValidationArgs, report: ReportViolation) -> None:
    config = args.get_config()
    low, high = config.get("minWorkersPerPs", 1), config.get("maxWorkersPerPs", 10)
    for (namespace, instance), group in clusters(list(args.resources)).items():
        cluster = get(group[0].tf_config, "cluster", default={}) or {}
        ps, workers = len(as_list(get(cluster, "ps"))), len(as_list(get(cluster, "worker")))
        if ps and not low <= workers / ps <= high:
            report(f"experiment {instance}: {ps} PS for {workers} workers is 1:{workers / ps:.1f}, outside "
                   f"1:{low:g} to 1:{high:g} (sparse models do well at 1:3 to 1:5)")


def shard_bytes(settings: Mapping[str, Any], ps_count: int) -> Optional[float]:
    try:
        rows, dim = float(settings["embeddingRows"]), float(settings["embeddingDim"])
        slots = OPTIMIZER_SLOTS[settings.get("optimizer", "adagrad")]
    except (KeyError, TypeError, ValueError):
        return None
    return math.ceil(rows / embedding_shards(settings, ps_count)) * dim * 4 * (1 + slots)


def _validate_ps_memory(args: StackValidationArgs, report: ReportViolation) -> None:
    for (namespace, instance), group in clusters(list(args.resources)).items():
        cluster = get(group[0].tf_config, "cluster", default={}) or {}
        settings = chief_settings(group) or {}
        needed = shard_bytes(settings, len(as_list(get(cluster, "ps"))))
        if needed is None:
            continue
        for workload in group:
            if task_type_of(workload) != "ps":
                continue
            for container in containers(workload.spec):
                requested = quantity_bytes(get(container, "resources", "requests", "memory"))
                if requested is None or requested < needed:
                    report(f"PS {workload.name} requests {get(container, 'resources', 'requests', 'memory')} "
                           f"but its embedding shard with optimizer slots needs {needed / 2**20:.0f}Mi",
                           workload.resource.urn)


def _is_production(args: StackValidationArgs) -> bool:
    if str(args.stack_tags.get("production", "")).lower() in ("true", "yes", "1"):
        return True
    return any(
        get(ns.props, "metadata", "labels", PRODUCTION_LABEL) == "true" for ns in of_kind(args.resources, "Namespace")
    )


def _validate_strict_in_production(args: StackValidationArgs, report: ReportViolation) -> None:
    if not _is_production(args):
        return
    for workload in workloads(args.resources):
        terms = as_list(get(workload.spec, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms"))
        if any(get(f, "key") == "metadata.name" for t in terms for f in as_list(get(t, "matchFields"))):
            pods = len(workload.pods) or 1
            report(f"{workload.name} requires one named server for its {pods} pod{'s' if pods > 1 else ''}; in "
                   "production a lost server strands them (set cluster.strict: false)", workload.resource.urn)


def _pod_defaults(args: ResourceValidationArgs, report: ReportViolation) -> None:
    kind = kind_of(args.resource_type)
    spec = pod_spec(kind, args.props)
    if spec is None or not serves_tf(spec):
        return
    name = name_of(args.props)
    if get(spec, "automountServiceAccountToken") is not False:
        report(f"{name}: mounts a service-account token it does not need")
    for container in containers(spec):
        if get(container, "securityContext", "readOnlyRootFilesystem") is not True:
            report(f"{name}/{get(container, 'name')}: root filesystem is writable")
    is_ps = (get(tf_config_of(spec), "task", "type") or pod_labels(kind, args.props).get(COMPONENT)) == "ps"
    if is_ps and not any(get(c, "readinessProbe", "tcpSocket") is not None for c in containers(spec)):
        report(f"PS {name}: no tcpSocket readiness probe on its gRPC port")


def _on_a_claim(spec: Optional[Mapping[str, Any]], path: str) -> bool:
    """`path` lies on a PersistentVolumeClaim mounted into the pod."""
    claims = {get(v, "name") for v in as_list(get(spec, "volumes")) if get(v, "persistentVolumeClaim") is not None}
    target = path.rstrip("/")
    for container in containers(spec):
        for mount in as_list(get(container, "volumeMounts")):
            mount_path = str(get(mount, "mountPath", default="")).rstrip("/")
            if get(mount, "name") in claims and mount_path and (target == mount_path or target.startswith(mount_path + "/")):
                return True
    return False


def _checkpoints_outlive_the_chief(args: StackValidationArgs, report: ReportViolation) -> None:
    limit = args.get_config().get("maxScratchCheckpointIntervals", 2)
    for (namespace, instance), group in clusters(list(args.resources)).items():
        settings = chief_settings(group) or {}
        steps, every = number(settings.get("steps")), number(settings.get("checkpointEvery"))
        path = str(settings.get("checkpointDir", "default"))
        if not steps or not every or steps <= limit * every or "://" in path:
            continue
        chiefs = [w for w in group if task_type_of(w) == "chief"]
        if path != "default" and chiefs and _on_a_claim(chiefs[0].spec, path):
            continue
        where = "the pod's scratch space" if path == "default" else f"{path}, which is on no volume claim"
        report(f"experiment {instance}: {steps / every:.0f} checkpoint intervals of training keep their "
               f"checkpoints on {where}; a replaced chief pod or a drained server starts again from step 0")


def _report_unpartitioned(args: StackValidationArgs, report: ReportViolation) -> None:
    for (namespace, instance), group in clusters(list(args.resources)).items():
        settings = chief_settings(group) or {}
        if settings.get("partition") == "none":
            report(f"experiment {instance}: partition: none keeps the whole embedding on one PS (the seed's "
                   "single loaded PS); fine for reproducing it, not for training")


# -- the policies -------------------------------------------------------------

MANDATORY = EnforcementLevel.MANDATORY
ADVISORY = EnforcementLevel.ADVISORY

POLICIES = [
    StackValidationPolicy(
        name="tfk8s-tf-grpc-isolation",
        description="TF task pods are selected by a NetworkPolicy that admits port 2222 only from pods of the same experiment (TensorFlow's gRPC server is unauthenticated and runs any graph sent to it).",
        validate=_validate_tf_grpc_isolation, enforcement_level=MANDATORY, severity=Severity.CRITICAL,
        remediation_steps="Add a NetworkPolicy selecting the experiment's pods whose ingress on 2222 comes only from a podSelector requiring the experiment's instance label.",
    ),
    ResourceValidationPolicy(
        name="tfk8s-headless-task-services",
        description="TF task Services are headless ClusterIP Services: no NodePort, LoadBalancer or externalIPs.",
        validate=_validate_headless_services, enforcement_level=MANDATORY, severity=Severity.HIGH,
        remediation_steps="Set spec.clusterIP: None and drop type, nodePort and externalIPs.",
    ),
    StackValidationPolicy(
        name="tfk8s-tf-config-consistent",
        description="Every task (every pod of a StatefulSet) has the same TF_CONFIG cluster and a unique in-range task, and each address is the DNS name of exactly its task's pod under a Service on 2222 that selects it; at least one PS and one worker.",
        validate=_validate_tf_config, enforcement_level=MANDATORY, severity=Severity.HIGH,
        remediation_steps="Render TF_CONFIG from one cluster spec of pod host names under one headless Service per role, with each pod's index from its StatefulSet ordinal.",
    ),
    ResourceValidationPolicy(
        name="tfk8s-ps-without-gpu",
        description="Parameter servers request no GPUs and carry no GPU node selection or toleration.",
        validate=_validate_ps_without_gpu, enforcement_level=MANDATORY, severity=Severity.MEDIUM,
        remediation_steps="Remove nvidia.com/gpu resources, GPU node selectors and GPU tolerations from PS pods.",
    ),
    ResourceValidationPolicy(
        name="tfk8s-gpu-containers",
        description="GPU containers ask for a whole number of nvidia.com/gpu in limits and select a GPU product.",
        validate=_validate_gpu_containers, enforcement_level=MANDATORY, severity=Severity.MEDIUM,
        remediation_steps="Put a whole nvidia.com/gpu count in limits and require nvidia.com/gpu.product in node affinity.",
    ),
    StackValidationPolicy(
        name="tfk8s-uniform-gpu-workers",
        description="All workers of one TF cluster have the same GPU count and product.",
        validate=_validate_uniform_workers, enforcement_level=MANDATORY, severity=Severity.MEDIUM,
        remediation_steps="Give every worker of the experiment the same gpus and the same GPU pool.",
    ),
    StackValidationPolicy(
        name="tfk8s-embedding-shards-match-ps",
        description="The embedding is sharded as the chief derives it (one shard per PS in TF_CONFIG unless partition: none): the settings are readable, the partition explicit, and every task gets the chief's settings.",
        validate=_validate_embedding_shards, enforcement_level=MANDATORY, severity=Severity.HIGH,
        remediation_steps="Give every task the trainer settings from the shared ConfigMap (no per-task TFK8S_TRAINER), with partition: auto (or range) so the table is sharded over every PS.",
    ),
    ResourceValidationPolicy(
        name="tfk8s-container-hygiene",
        description="Containers set requests and a memory limit, pin their image, run non-root without privilege or escalation, drop all capabilities, and use no host namespaces, ports or paths.",
        validate=_container_hygiene, enforcement_level=MANDATORY, severity=Severity.HIGH,
        remediation_steps="Follow the restricted Pod Security Standard and set resources on every container.",
    ),
    ResourceValidationPolicy(
        name="tfk8s-not-default-namespace",
        description="Namespaced objects never go to the default namespace.",
        validate=_not_default_namespace, enforcement_level=MANDATORY, severity=Severity.MEDIUM,
        remediation_steps="Put each experiment in its own namespace (tfk8s: tf-<stack>).",
    ),
    ResourceValidationPolicy(
        name="tfk8s-no-removed-apis",
        description="No API versions removed from Kubernetes (extensions/v1beta1, apps/v1beta1, apps/v1beta2).",
        validate=_no_removed_apis, enforcement_level=MANDATORY, severity=Severity.HIGH,
        remediation_steps="Use apps/v1 for Deployments and StatefulSets, batch/v1 for Jobs.",
    ),
    StackValidationPolicy(
        name="tfk8s-ps-worker-ratio",
        description="PS:worker ratio within a configurable range (default 1:1 to 1:10; sparse models do well at 1:3 to 1:5).",
        validate=_validate_ratio, enforcement_level=ADVISORY, severity=Severity.LOW,
        config_schema=PolicyConfigSchema(properties={
            "minWorkersPerPs": {"type": "number", "default": 1, "minimum": 0},
            "maxWorkersPerPs": {"type": "number", "default": 10, "minimum": 1},
        }),
        remediation_steps="Change ps.replicas or cluster.ratio.",
    ),
    StackValidationPolicy(
        name="tfk8s-ps-memory-fits-shard",
        description="Each PS requests at least the memory of its embedding shard with optimizer slots.",
        validate=_validate_ps_memory, enforcement_level=ADVISORY, severity=Severity.MEDIUM,
        remediation_steps="Leave ps.memory unset (tfk8s derives it from the model) or raise it.",
    ),
    StackValidationPolicy(
        name="tfk8s-strict-placement-in-production",
        description="Production experiments do not require single named servers.",
        validate=_validate_strict_in_production, enforcement_level=ADVISORY, severity=Severity.LOW,
        remediation_steps="Set cluster.strict: false so tasks may move within their pool.",
    ),
    ResourceValidationPolicy(
        name="tfk8s-pod-defaults",
        description="TF pods have a read-only root filesystem, no service-account token, and PS have tcpSocket readiness probes.",
        validate=_pod_defaults, enforcement_level=ADVISORY, severity=Severity.LOW,
        remediation_steps="Set readOnlyRootFilesystem, automountServiceAccountToken: false and a tcpSocket probe on 2222.",
    ),
    StackValidationPolicy(
        name="tfk8s-unpartitioned-embedding",
        description="partition: none keeps the embedding on one PS: flagged so it is a deliberate choice.",
        validate=_report_unpartitioned, enforcement_level=ADVISORY, severity=Severity.LOW,
        remediation_steps="Use partition: auto unless reproducing the single-loaded-PS bottleneck.",
    ),
    StackValidationPolicy(
        name="tfk8s-checkpoints-outlive-the-chief",
        description="A long run (more checkpoint intervals than maxScratchCheckpointIntervals, default 2) keeps its checkpoints where a replaced chief pod finds them: a volume claim or a remote path, not the pod's scratch space.",
        validate=_checkpoints_outlive_the_chief, enforcement_level=ADVISORY, severity=Severity.MEDIUM,
        config_schema=PolicyConfigSchema(properties={
            "maxScratchCheckpointIntervals": {"type": "number", "minimum": 0},
        }),
        remediation_steps="Set tfk8s:cluster.chief.checkpointVolume: {size: 20Gi}, or a gs://, s3:// or hdfs:// checkpointDir.",
    ),
]

MANDATORY_POLICIES = [p.name for p in POLICIES if p.enforcement_level == MANDATORY]
