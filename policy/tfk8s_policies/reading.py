"""Reading the engine's resources as pods: workloads, their pod templates, TF_CONFIG with
environment references expanded as the kubelet does, trainer settings, experiments.

Props arrive as the engine delivers them: read-only mappings, numbers as floats,
camelCase Kubernetes fields. Everything here reads them defensively: a missing
property is a violation where a rule requires it, never a crash."""

from __future__ import annotations

import json
import re
from typing import Any, Iterable, Iterator, Mapping, Optional

from .facts import COMPONENT, INSTANCE, POD_INDEX, QUANTITY_SUFFIX, SETTINGS_ENV, TF_PORT, WORKLOAD_KINDS


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
