"""The pods a registered experiment's workloads make, as their controllers make them.

The StatefulSet controller names a pod `<set>-<ordinal>` for each ordinal from
`spec.ordinals.start`, makes that name its host name under `serviceName`, and
labels it `apps.kubernetes.io/pod-index: <ordinal>`; a Job's pod takes its
template as written. The JobSet controller makes one Job `<jobset>-<replicatedJob>-<i>`
per replica; an Indexed Job's pod for completion index c has the host name
`<job>-<c>` under the JobSet's subdomain, and the Job controller sets its
JOB_COMPLETION_INDEX. The end-to-end tests (tests/cluster, tests/realpods)
check the same against the real controllers; here they give every task's pod
without one.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from trainer.cluster import CLUSTER_ENV, CLUSTER_FILE_ENV, COMPLETION_INDEX_ENV, FIRST_INDEX_ENV, composed_tf_config
from trainer.kubelet_expansion import expand

# Kubernetes' own names, written here apart from trainer/shared_names.py on purpose: these fakes
# play the controllers, so a wrong name in tfk8s's definition fails the tests instead of agreeing.
POD_INDEX = "apps.kubernetes.io/pod-index"
FIELD_REF = re.compile(r"^metadata\.(labels|annotations)\['([^']+)'\]$")
COMPLETION_INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"


def expanded(text: str, variables: Mapping[str, str]) -> str:
    """`text` as the kubelet expands it, where every reference must resolve (else the kubelet would
    pass it on as literal text, which no task could use)."""
    value, unresolved = expand(text, variables)
    assert not unresolved, f"{text!r} refers to {unresolved}, which the pod's environment lacks"
    return value


@dataclass(frozen=True)
class Pod:
    workload: Any  # the registered StatefulSet or Job resource
    name: str
    hostname: str
    subdomain: str
    labels: Mapping[str, str]
    spec: Mapping[str, Any]
    # What the pod's controller adds to its environment (JOB_COMPLETION_INDEX).
    controller_env: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)  # the controller's, on the pod

    @property
    def container(self) -> Mapping[str, Any]:
        (only,) = self.spec["containers"]
        return only

    @property
    def program_argv(self) -> list[str]:
        """The command line the program runs with: the arguments of the shell that starts it
        (`/bin/sh -c <script> <name> argv...`), else the container's command and args."""
        command, args = self.container.get("command", []), self.container.get("args", [])
        if command[:2] == ["/bin/sh", "-c"]:
            return list(args)
        return [*command, *args]

    def env(self, config_maps: Mapping[str, Mapping[str, str]]) -> dict[str, str]:
        """The environment as the kubelet builds it: envFrom ConfigMaps, then env with $(VAR) expanded."""
        variables: dict[str, str] = dict(self.controller_env)
        for source in self.container.get("envFrom", []):
            variables.update(config_maps[source["configMapRef"]["name"]])
        for item in self.container.get("env", []):
            if "value" in item:
                # A reference the kubelet could not resolve would stay literal: fail on it here.
                variables[item["name"]] = expanded(item["value"], variables)
            elif "secretKeyRef" in item["valueFrom"]:
                secret = item["valueFrom"]["secretKeyRef"]
                variables[item["name"]] = f"<secret {secret['name']} key {secret['key']}>"
            elif item["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name":
                variables[item["name"]] = self.name
            else:
                where, key = FIELD_REF.match(item["valueFrom"]["fieldRef"]["fieldPath"]).groups()
                variables[item["name"]] = (self.labels if where == "labels" else self.annotations)[key]
        return variables

    def tf_config(self, config_maps: Mapping[str, Mapping[str, str]]) -> dict:
        """TF_CONFIG as the trainer reads it: set in the pod, or composed from a JobSet pod's pieces."""
        env = self.env(config_maps)
        if CLUSTER_FILE_ENV in env:
            env[CLUSTER_ENV] = self.mounted_file(env.pop(CLUSTER_FILE_ENV), config_maps)
        return json.loads(env.get("TF_CONFIG") or composed_tf_config(env))

    def mounted_file(self, path: str, config_maps: Mapping[str, Mapping[str, str]]) -> str:
        """A file of a ConfigMap volume the container mounts (every key a file, no items)."""
        volumes = {volume["name"]: volume for volume in self.spec["volumes"]}
        for mount in self.container["volumeMounts"]:
            config_map = volumes[mount["name"]].get("configMap")
            if config_map and path.startswith(mount["mountPath"] + "/"):
                return config_maps[config_map["name"]][path[len(mount["mountPath"]) + 1:]]
        raise AssertionError(f"{self.name}: nothing mounted at {path}")

    @property
    def task(self) -> str:
        """The task the pod runs, as TF_CONFIG names it (type-index), read from its labels and env."""
        role = self.labels["app.kubernetes.io/component"]
        if COMPLETION_INDEX_ENV in self.controller_env:
            # The trainer's pods name their group's first index; a program's role is one group.
            first = next((e["value"] for e in self.container["env"] if e["name"] == FIRST_INDEX_ENV), "0")
            return f"{role}-{int(first) + int(self.controller_env[COMPLETION_INDEX_ENV])}"
        return f"{role}-{self.labels.get(POD_INDEX, '0')}"


def pods_of(run) -> list[Pod]:
    pods = []
    for workload in run.of_kind("StatefulSet"):
        spec = workload.manifest["spec"]
        start = spec.get("ordinals", {}).get("start", 0)
        for ordinal in range(start, start + spec["replicas"]):
            name = f"{workload.manifest['metadata']['name']}-{ordinal}"
            labels = {**spec["template"]["metadata"]["labels"], POD_INDEX: str(ordinal)}
            pods.append(Pod(workload, name, name, spec["serviceName"], labels, spec["template"]["spec"]))
    for workload in run.of_kind("Job"):
        template = workload.manifest["spec"]["template"]
        spec = template["spec"]
        name = f"{workload.manifest['metadata']['name']}-pod"
        pods.append(Pod(workload, name, spec.get("hostname", name), spec.get("subdomain", ""),
                        template["metadata"]["labels"], spec))
    for jobset in run.of_kind("JobSet"):
        pods.extend(jobset_pods(jobset))
    return pods


def jobset_pods(jobset) -> list[Pod]:
    manifest = jobset.manifest
    name = manifest["metadata"]["name"]
    subdomain = manifest["spec"].get("network", {}).get("subdomain") or name
    pods = []
    for replicated in manifest["spec"]["replicatedJobs"]:
        job_spec = replicated["template"]["spec"]
        template = job_spec["template"]
        for job_index in range(replicated.get("replicas", 1)):
            job = f"{name}-{replicated['name']}-{job_index}"
            for completion in range(job_spec["completions"]):
                hostname = f"{job}-{completion}"
                labels = {**template["metadata"]["labels"], COMPLETION_INDEX_ANNOTATION: str(completion),
                          "jobset.sigs.k8s.io/jobset-name": name}
                pods.append(Pod(jobset, hostname, hostname, subdomain, labels, template["spec"],
                                {COMPLETION_INDEX_ENV: str(completion)},
                                {COMPLETION_INDEX_ANNOTATION: str(completion)}))
    return pods


def config_maps_of(run) -> dict[str, Mapping[str, str]]:
    return {c.manifest["metadata"]["name"]: c.manifest.get("data", {}) for c in run.of_kind("ConfigMap")}


@dataclass(frozen=True)
class ReplicatedJob:
    """A task group of a JobSet, read like a workload: `manifest` is the Job it makes for the group."""

    jobset: Any
    manifest: Mapping[str, Any]

    @property
    def urn(self) -> str:
        return self.jobset.urn

    @property
    def dependencies(self):
        return self.jobset.dependencies


def replicated_jobs(run) -> list[ReplicatedJob]:
    views = []
    for jobset in run.of_kind("JobSet"):
        for replicated in jobset.manifest["spec"]["replicatedJobs"]:
            template = replicated["template"]
            views.append(ReplicatedJob(jobset, {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {"name": replicated["name"], "namespace": jobset.manifest["metadata"]["namespace"],
                             "labels": template["metadata"]["labels"]},
                "spec": template["spec"],
            }))
    return views
