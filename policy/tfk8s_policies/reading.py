"""Reading the engine's resources as tasks: environments with references expanded as the
kubelet does, TF_CONFIG, trainer settings, workloads and the experiments they form.

Props arrive as the engine delivers them: read-only mappings, numbers as floats,
camelCase Kubernetes fields. Everything here reads them defensively: a missing
property is a violation where a rule requires it, never a crash. The accessors
(props.py) and the pods a resource makes (pods.py) are re-exported here for the rules."""

from __future__ import annotations

import functools
import json
from typing import Any, Iterable, Iterator, Mapping, Optional

from pulumi_policy import StackValidationArgs

from .expansion import expand, references
from .facts import (
    CLUSTER_ENV,
    CLUSTER_FILE_ENV,
    COMPLETION_INDEX_ENV,
    COMPONENT,
    FIRST_INDEX_ENV,
    INSTANCE,
    PRODUCTION,
    PROGRAM,
    SETTINGS_ENV,
    TASK_TYPE_ENV,
    TF_PORT,
    TRAINER_PROGRAM,
    WORKLOAD_KINDS,
    role_by_load,
)
from .pods import (  # noqa: F401 (re-exported for the rules)
    PodFields,
    PodIdentity,
    PodTemplate,
    jobset_services,
    jobset_subdomain,
    pod_identities,
    pod_templates,
)
from .props import (  # noqa: F401 (re-exported for the rules)
    api_version_of,
    as_list,
    get,
    kind_of,
    labels_match,
    name_of,
    namespace_of,
    number,
    of_kind,
    pod_labels,
    pod_spec,
    quantity_bytes,
)


def containers(spec: Optional[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return as_list(get(spec, "containers")) + as_list(get(spec, "initContainers"))


def env_value(container: Mapping[str, Any], name: str) -> Optional[str]:
    for item in as_list(get(container, "env")):
        if get(item, "name") == name:
            return get(item, "value")
    return None


ConfigMaps = Mapping[tuple, Mapping[str, Any]]  # (namespace, name) -> data


def config_map_data(resources: Iterable[Any]) -> dict[tuple, Mapping[str, Any]]:
    return {
        (namespace_of(r.props), name_of(r.props)): get(r.props, "data", default={}) or {}
        for r in of_kind(resources, "ConfigMap")
    }


def container_env(
    container: Mapping[str, Any],
    namespace: Optional[str],
    config_maps: ConfigMaps,
    pod_fields: Optional[PodFields] = None,
    controller_env: Optional[Mapping[str, str]] = None,
) -> tuple[dict[str, str], dict[str, list[str]]]:
    """The environment kubelet would give the container; per variable, the references left unresolved.

    `pod_fields`: the pod's fields known beforehand (its name, its labels), for downward-API variables;
    `controller_env`: what the pod's controller adds (an Indexed Job's JOB_COMPLETION_INDEX).
    """
    variables: dict[str, str] = dict(controller_env or {})
    known_fields: PodFields = pod_fields or {}
    for source in as_list(get(container, "envFrom")):
        data = config_maps.get((namespace, get(source, "configMapRef", "name")), {})
        prefix = get(source, "prefix", default="") or ""
        variables.update({f"{prefix}{key}": str(value) for key, value in data.items()})
    unresolved: dict[str, list[str]] = {}
    for item in as_list(get(container, "env")):
        name, value = get(item, "name"), get(item, "value")
        field = get(item, "valueFrom", "fieldRef", "fieldPath")
        if isinstance(name, str) and isinstance(value, str):
            # The kubelet's rules: `$(NAME)` of a variable defined before it, `$$` a literal `$`.
            variables[name], missing = expand(value, variables)
            if missing:
                unresolved[name] = missing
        elif isinstance(name, str) and field in known_fields:
            variables[name] = known_fields[field]
    return variables, unresolved


def tf_config_of(
    spec: Optional[Mapping[str, Any]],
    namespace: Optional[str] = None,
    config_maps: Optional[ConfigMaps] = None,
    pod: Optional[PodIdentity] = None,
) -> Optional[dict]:
    """A task's TF_CONFIG as its process sees it.

    tfk8s writes the shared cluster once, in a ConfigMap. A StatefulSet task's
    TF_CONFIG refers to it and to the pod's index (its ordinal); a JobSet
    task's is composed by the trainer from the cluster, its role, its group's
    first index and its Job completion index (`_composed`). A stack check
    passes the stack's ConfigMaps and the pod; a check of one resource has
    none, and reads what it cannot know as unknown (null).
    """
    pod_fields = pod.fields if pod is not None else None
    controller_env = pod.controller_env if pod is not None else None
    for container in containers(spec):
        if env_value(container, "TF_CONFIG") is None:
            if env_value(container, TASK_TYPE_ENV) is not None:
                variables, _ = container_env(container, namespace, config_maps or {}, pod_fields, controller_env)
                if CLUSTER_ENV not in variables and CLUSTER_FILE_ENV in variables:
                    cluster = mounted_file(spec, container, variables[CLUSTER_FILE_ENV], namespace, config_maps or {})
                    if cluster is not None:
                        variables[CLUSTER_ENV] = cluster
                return _composed(variables, known=config_maps is not None)
            continue
        variables, unresolved = container_env(container, namespace, config_maps or {}, pod_fields, controller_env)
        raw = variables["TF_CONFIG"]
        if unresolved.get("TF_CONFIG"):
            if config_maps is not None:
                return {"_malformed": raw, "_unresolved": unresolved["TF_CONFIG"]}
            raw, _ = expand(raw, {name: "null" for name in references(raw)})
        try:
            parsed = json.loads(raw)
        except ValueError:
            return {"_malformed": raw}
        return parsed if isinstance(parsed, dict) else {"_malformed": raw}
    return None


def mounted_file(
    spec: Optional[Mapping[str, Any]],
    container: Mapping[str, Any],
    path: str,
    namespace: Optional[str],
    config_maps: ConfigMaps,
) -> Optional[str]:
    """The text of a file the container reads from a mounted ConfigMap key; None where unknown."""
    volumes = {get(v, "name"): v for v in as_list(get(spec, "volumes"))}
    for mount in as_list(get(container, "volumeMounts")):
        root = str(get(mount, "mountPath") or "").rstrip("/")
        config_map = get(volumes.get(get(mount, "name")), "configMap", "name")
        if config_map is None or not path.startswith(f"{root}/"):
            continue
        relative = path[len(root) + 1 :]
        keys = {
            get(item, "path"): get(item, "key")
            for item in as_list(get(volumes[get(mount, "name")], "configMap", "items"))
        }
        data = config_maps.get((namespace, config_map), {})
        key = keys.get(relative, relative) if keys else relative
        if key in data:
            return str(data[key])
    return None


@functools.lru_cache(maxsize=16)
def parsed_json(text: str) -> Any:
    """JSON every pod of an experiment shares (the cluster), parsed once: read it, never change it.
    Parsed per pod, an experiment's check would grow with the square of its tasks."""
    return json.loads(text)


def _composed(variables: Mapping[str, str], known: bool) -> dict:
    """A JobSet task's TF_CONFIG as the trainer composes it (trainer/cluster.py); null what is unknown."""
    try:
        cluster = parsed_json(variables[CLUSTER_ENV]) if CLUSTER_ENV in variables else None
    except ValueError:
        return {"_malformed": variables[CLUSTER_ENV]}
    first, completion = number(variables.get(FIRST_INDEX_ENV)), number(variables.get(COMPLETION_INDEX_ENV))
    if known and (cluster is None or first is None or completion is None):
        missing = [name for name in (CLUSTER_ENV, FIRST_INDEX_ENV, COMPLETION_INDEX_ENV) if name not in variables]
        return {"_malformed": "", "_unresolved": missing or [FIRST_INDEX_ENV]}
    index = int(first + completion) if first is not None and completion is not None else None
    return {"cluster": cluster, "task": {"type": variables[TASK_TYPE_ENV], "index": index}}


def serves_tf(spec: Optional[Mapping[str, Any]]) -> bool:
    if tf_config_of(spec) is not None:
        return True
    return any(
        number(get(port, "containerPort")) == TF_PORT
        for container in containers(spec)
        for port in as_list(get(container, "ports"))
    )


class Workload:
    """One pod template of a resource that runs pods, as a stack validation sees it: a workload,
    or one replicatedJob of a JobSet."""

    def __init__(self, resource: Any, template: PodTemplate, config_maps: ConfigMaps) -> None:
        self.resource = resource
        self.kind = kind_of(resource.resource_type)
        self.spec = template.spec
        self.labels = template.labels
        self.namespace = namespace_of(resource.props)
        self.name = template.name
        self.pods = template.pods
        # Each pod's TF_CONFIG (they differ in the task index only); None where the pods have none.
        self.tf_configs = [tf_config_of(self.spec, self.namespace, config_maps, pod) for pod in self.pods]
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
            for template in pod_templates(kind_of(resource.resource_type), resource.props):
                yield Workload(resource, template, config_maps)


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
    # The coordinator (the chief) builds the model: found by its load in the role table, not by name.
    chiefs = [w for w in group if task_type_of(w) == role_by_load("coordination").name]
    return (chiefs or group)[0].settings


def embedding_shards(settings: Mapping[str, Any], ps_count: int) -> int:
    """The trainer's rule (trainer/settings.py): one shard per PS in TF_CONFIG; one with partition none."""
    return 1 if settings.get("partition") == "none" else max(ps_count, 1)


def runs_tfk8s_trainer(group: list[Workload]) -> bool:
    """The experiment's tasks run tfk8s's own trainer, whose model the settings describe; a team's
    own program (tfk8s:program) has a model the pack cannot know.

    Known by the mark tfk8s puts on the trainer's task pods, never by their command: the command is
    how a task is started, which changes (with tfk8s:logs the trainer is the argument of a shell)
    while the rules must not go silent. One marked task is enough: a task stripped of the mark
    (a transform, a hand edit) still belongs to the experiment its others run."""
    return any(workload.labels.get(PROGRAM) == TRAINER_PROGRAM for workload in group)


def clusters(resources: list) -> dict[tuple, list[Workload]]:
    """TF workloads grouped by (namespace, experiment instance)."""
    groups: dict[tuple, list[Workload]] = {}
    for workload in workloads(resources):
        if workload.tf_config is not None:
            key = (workload.namespace, workload.labels.get(INSTANCE))
            groups.setdefault(key, []).append(workload)
    return groups


def trainer_clusters(resources: list) -> dict[tuple, list[Workload]]:
    """The experiments whose tasks run tfk8s's own trainer: those the model-derived rules check."""
    return {key: group for key, group in clusters(resources).items() if runs_tfk8s_trainer(group)}


def production_workloads(args: StackValidationArgs) -> list[Workload]:
    """The workloads of a production experiment: the stack tagged production=true, its namespace
    labelled so, or its pods (in a team's namespace, which tfk8s does not label, only they say so)."""
    everything = str(args.stack_tags.get("production", "")).lower() in ("true", "yes", "1") or any(
        get(ns.props, "metadata", "labels", PRODUCTION) == "true" for ns in of_kind(args.resources, "Namespace")
    )
    return [w for w in workloads(args.resources) if everything or w.labels.get(PRODUCTION) == "true"]
