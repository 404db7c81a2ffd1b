"""The pods a resource makes, known before they exist: names, DNS names, labels, what their
controller adds (StatefulSets, JobSets and their Indexed Jobs, plain workloads)."""

from __future__ import annotations

import re
from typing import Any, Collection, Iterable, Mapping, Optional

from .facts import COMPLETION_INDEX, COMPLETION_INDEX_ENV, JOBSET_NAME_LABEL, POD_INDEX, TF_PORT
from .props import as_list, get, name_of, namespace_of, number, of_kind, pod_labels, pod_spec

# A pod's fields an env var may take through the downward API that are known before it exists.
PodFields = Mapping[str, str]


class PodIdentity:
    """One pod a workload makes: its name, DNS host name and subdomain, and labels.

    A StatefulSet makes a pod `<name>-<ordinal>` per ordinal from
    `spec.ordinals.start`, whose host name is its name under `serviceName` and
    whose label apps.kubernetes.io/pod-index is the ordinal. A JobSet makes a
    Job `<jobset>-<replicatedJob>-<i>` per replica, whose Indexed pods have the
    host name `<job>-<completion index>` under the JobSet's subdomain. Other
    workloads make pods whose name is not known before, with the host name
    they write.
    """

    def __init__(
        self,
        name: Optional[str],
        hostname: Optional[str],
        subdomain: Optional[str],
        labels: Mapping[str, str],
        controller_env: Optional[Mapping[str, str]] = None,
        annotations: Optional[Mapping[str, str]] = None,
    ) -> None:
        self.name, self.hostname, self.subdomain, self.labels = name, hostname, subdomain, labels
        # Variables the pod's controller adds to its containers (an Indexed Job's JOB_COMPLETION_INDEX).
        self.controller_env = controller_env or {}
        # What the pod's controller annotates it with (an Indexed Job's completion index).
        self.annotations = annotations or {}

    @property
    def fields(self) -> PodFields:
        fields = {f"metadata.labels['{key}']": str(value) for key, value in self.labels.items()}
        fields.update({f"metadata.annotations['{key}']": str(value) for key, value in self.annotations.items()})
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


class PodTemplate:
    """One pod template of a resource: a workload's, or one replicatedJob's of a JobSet."""

    def __init__(
        self, name: Optional[str], spec: Mapping[str, Any], labels: Mapping[str, str], pods: list[PodIdentity]
    ) -> None:
        self.name, self.spec, self.labels, self.pods = name, spec, labels, pods


def pod_templates(kind: str, props: Mapping[str, Any]) -> list[PodTemplate]:
    """The pod templates a resource runs pods from (none for a resource that runs none)."""
    if kind == "JobSet":
        return _replicated_job_templates(props)
    spec = pod_spec(kind, props)
    if spec is None:
        return []
    return [PodTemplate(name_of(props), spec, pod_labels(kind, props), pod_identities(kind, props))]


def _replicated_job_templates(props: Mapping[str, Any]) -> list[PodTemplate]:
    jobset = name_of(props)
    subdomain = jobset_subdomain(props)
    templates = []
    for replicated in as_list(get(props, "spec", "replicatedJobs")):
        job_spec = get(replicated, "template", "spec", default={}) or {}
        spec = get(job_spec, "template", "spec")
        if spec is None:
            continue
        labels = {**(get(job_spec, "template", "metadata", "labels", default={}) or {}), JOBSET_NAME_LABEL: str(jobset)}
        replicas = int(number(get(replicated, "replicas", default=1)) or 0)
        indexed = get(job_spec, "completionMode") == "Indexed"
        completions = int(number(get(job_spec, "completions", default=1)) or 0) if indexed else 0
        pods: list[PodIdentity] = []
        for job_index in range(replicas):
            job = f"{jobset}-{get(replicated, 'name')}-{job_index}"
            pods.extend(
                PodIdentity(
                    None,
                    f"{job}-{completion}",
                    subdomain,
                    {**labels, COMPLETION_INDEX: str(completion)},
                    {COMPLETION_INDEX_ENV: str(completion)},
                    # The Job controller's annotation has the label's key.
                    {COMPLETION_INDEX: str(completion)},
                )
                for completion in range(completions)
            )
        templates.append(PodTemplate(f"{jobset}/{get(replicated, 'name')}", spec, labels, pods))
    return templates


def jobset_subdomain(props: Mapping[str, Any]) -> Optional[str]:
    """The headless Service a JobSet's pods are named under, when it gives them DNS names."""
    if get(props, "spec", "network", "enableDNSHostnames") is not True:
        return None
    return get(props, "spec", "network", "subdomain") or name_of(props)


def jobset_services(resources: Iterable[Any]) -> list[Any]:
    """The headless Service the JobSet controller creates for each JobSet with DNS host names: it
    selects the JobSet's pods and, headless, resolves their names whatever the port."""
    services = []
    for jobset in of_kind(resources, "JobSet"):
        subdomain = jobset_subdomain(jobset.props)
        if subdomain is not None:
            services.append(
                _MadeService(
                    {
                        "metadata": {"name": subdomain, "namespace": namespace_of(jobset.props)},
                        "spec": {
                            "clusterIP": "None",
                            "selector": {JOBSET_NAME_LABEL: name_of(jobset.props)},
                            "ports": [{"port": TF_PORT}],
                        },
                    }
                )
            )
    return services


class _MadeService:
    """A Service a controller makes from a resource of the stack (not itself in the stack)."""

    def __init__(self, props: Mapping[str, Any]) -> None:
        self.props = props


# pulumi-kubernetes previews the replacement of an object whose immutable fields change (a JobSet
# whose spec changed) by a dry-run create under a generated name: the object's name and 5 characters
# of Kubernetes' name generator (its pkg/await/await.go). `up` then creates it under its own name.
PREVIEW_NAME = re.compile(r"^(?P<name>[a-z0-9.-]+)[bcdfghjklmnpqrstvwxz2456789]{5}$")


def previewed_jobsets_named_back(resources: list, named: Collection[tuple[Optional[str], str]]) -> list:
    """`resources`, with each JobSet that preview renamed under its own name again: a JobSet whose
    name no task address names, while the name it was generated from is one that the addresses
    name in its namespace (`named`: (namespace, subdomain) pairs) and no other JobSet has."""
    jobsets = of_kind(resources, "JobSet")
    taken = {(namespace_of(r.props), name_of(r.props)) for r in jobsets}
    named_back: dict[int, Any] = {}
    for jobset in jobsets:
        namespace, name = namespace_of(jobset.props), name_of(jobset.props)
        match = PREVIEW_NAME.match(name or "")
        own = match.group("name") if match else None
        if own and (namespace, name) not in named and (namespace, own) in named and (namespace, own) not in taken:
            named_back[id(jobset)] = _NamedBack(jobset, own)
    return [named_back.get(id(resource), resource) for resource in resources]


class _NamedBack:
    """A resource seen under the name its program gave it (its props otherwise as the engine gave them)."""

    def __init__(self, resource: Any, name: str) -> None:
        self._resource = resource
        self.props = {**resource.props, "metadata": {**resource.props["metadata"], "name": name}}

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self._resource, attribute)
