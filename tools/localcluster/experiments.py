"""Apply and delete an experiment's rendered objects, as `pulumi up` and `pulumi destroy` would.

Every object goes in by server-side apply under the experiment's own field
manager (the one the program gives its NodePatches). Deleting releases the
node labels the way the provider deletes a NodePatch: it applies the bare node
under that field manager, which takes exactly its fields back, and leaves any
label that another manager set.
"""

from __future__ import annotations

import functools
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

from kubernetes import client
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import ApiException, ResourceNotFoundError
from kubernetes.dynamic.resource import Resource

from components.live.status import no_jobset_message, read_jobset
from components.objects.manifests import Manifest
from components.objects.node_labels import is_node, node_label_patches
from components.objects.render import read_rendered
from components.plan import labels as L
from components.plan.experiment import Experiment

from .client import PARALLEL_REQUESTS, always_set, is_not_found, name_of, server_message

Progress = Callable[[str], None]
WAIT_POLL_S = 0.5
ADMISSION_GRACE_S = 10.0


# What the tasks share in the namespace: applied before any task.
SHARED_KINDS = ("NetworkPolicy", "ConfigMap", "PersistentVolumeClaim", "LocalQueue")


class ApplyError(RuntimeError):
    pass


class ExperimentNotRunning(Exception):
    """The experiment's pods will not all run now: Kueue holds it, or it already ended."""

    def __init__(self, stack: str, state: str) -> None:
        self.stack, self.state = stack, state
        if state == "queued":
            text = "queued: Kueue admits it when its whole request fits; `status` shows its phase"
        else:
            text = (
                f"already ended ({state}); an unchanged stack does not train again: change the stack, "
                "or delete and apply it"
            )
        super().__init__(f"stack '{stack}' is {text}")


def quiet(_: str) -> None:
    pass


def _resource(dynamic: DynamicClient, manifest: Manifest) -> Resource:
    try:
        return dynamic.resources.get(api_version=manifest["apiVersion"], kind=manifest["kind"])
    except ResourceNotFoundError:
        if manifest["kind"] == "JobSet":
            raise ApplyError(no_jobset_message(manifest["metadata"]["labels"][L.INSTANCE])) from None
        raise ApplyError(f"the cluster does not serve {manifest['apiVersion']} {manifest['kind']}") from None


def _describe(manifest: Manifest) -> str:
    metadata = manifest["metadata"]
    where = f" in namespace {metadata['namespace']}" if metadata.get("namespace") else ""
    return f"{manifest['kind']} {metadata['name']}{where}"


def apply_manifest(dynamic: DynamicClient, manifest: Manifest, field_manager: str) -> None:
    try:
        # serialize=False: the applied object comes back, but wrapping it is costly and unused.
        dynamic.server_side_apply(
            _resource(dynamic, manifest), body=manifest, field_manager=field_manager, serialize=False
        )
    except ApiException as error:
        if manifest["kind"] == "JobSet" and "immutable" in server_message(error):
            _replace(dynamic, manifest, field_manager)
            return
        raise ApplyError(f"the API server refused {_describe(manifest)}: {server_message(error)}") from None


JOBSET_GONE_TIMEOUT_S = 60.0
# Foreground deletion waits for every pod: a 2,200-pod experiment took more than a minute.
JOBSET_GONE_PER_POD_S = 0.1


def _gone_timeout(jobset: Manifest) -> float:
    pods = sum(
        job.get("replicas", 1) * job["template"]["spec"].get("completions", 1)
        for job in jobset["spec"]["replicatedJobs"]
    )
    return JOBSET_GONE_TIMEOUT_S + JOBSET_GONE_PER_POD_S * pods


def _replace(dynamic: DynamicClient, manifest: Manifest, field_manager: str) -> None:
    """A changed experiment is a new JobSet (its replicated Jobs cannot change): delete the old one
    with its pods, then create it again, as `pulumi up` does (replaceOnChanges, deleteBeforeReplace)."""
    _delete_dependents_first(dynamic, manifest)
    dynamic.server_side_apply(_resource(dynamic, manifest), body=manifest, field_manager=field_manager, serialize=False)


def _delete_dependents_first(dynamic: DynamicClient, manifest: Manifest) -> None:
    """Delete an object after everything it owns (foreground, as `pulumi destroy` deletes), and wait.

    For a JobSet that is its Jobs, pods and Kueue Workload: Kueue lets the experiments its queue
    holds back in when a Workload goes, but only while the Workload's LocalQueue still exists."""
    resource, metadata = _resource(dynamic, manifest), manifest["metadata"]
    try:
        dynamic.delete(
            resource, name=metadata["name"], namespace=metadata["namespace"], body={"propagationPolicy": "Foreground"}
        )
    except ApiException as error:
        if is_not_found(error):
            return
        raise
    _wait_gone(
        lambda: dynamic.get(resource, name=metadata["name"], namespace=metadata["namespace"]),
        f"{_describe(manifest)} still being deleted",
        _gone_timeout(manifest),
    )


def jobset_state(api: client.ApiClient, experiment: Experiment) -> Optional[str]:
    """'queued' while Kueue holds the experiment's JobSet, its terminal state once it ended, else None."""
    if experiment.workload != "jobset":
        return None
    jobset = read_jobset(api, experiment)
    if jobset is None:
        return None
    if (jobset.get("status") or {}).get("terminalState"):
        return jobset["status"]["terminalState"]
    return "queued" if (jobset.get("spec") or {}).get("suspend") else None


def _apply_all(dynamic: DynamicClient, manifests: list[Manifest], field_manager: str) -> None:
    with ThreadPoolExecutor(PARALLEL_REQUESTS) as pool:
        for _ in pool.map(lambda m: apply_manifest(dynamic, m, field_manager), manifests):
            pass


def missing_nodes(core: client.CoreV1Api, names: Iterable[str]) -> list[str]:
    existing = {name_of(node) for node in core.list_node().items}
    return [name for name in names if name not in existing]


def rendered_objects(experiment: Experiment, out_dir: Path) -> list[Manifest]:
    """What the local cluster applies for an experiment rendered into `out_dir`, as `pulumi up`
    would: the node label patches (render writes them as scripts, never as a Node) and the folder's
    objects, in apply order."""
    return [*node_label_patches(experiment), *read_rendered(out_dir)]


def apply_manifests(api: client.ApiClient, stack: str, manifests: list[Manifest], progress: Progress = quiet) -> None:
    """Apply a rendered experiment (`manifests` in render order) under the stack's field manager.

    Node labels first (a label patch never creates a node: servers missing
    from the cluster are an error), then the namespace, what every task
    shares, and the tasks in parallel.
    """
    dynamic = DynamicClient(api)
    field_manager = L.field_manager(stack)
    core = client.CoreV1Api(api)
    nodes = [m for m in manifests if m["kind"] == "Node"]
    absent = missing_nodes(core, [m["metadata"]["name"] for m in nodes])
    if absent:
        raise ApplyError(f"stack '{stack}' names servers the cluster does not have: {', '.join(absent)}")
    namespaces = [m for m in manifests if m["kind"] == "Namespace"]  # none in a team's namespace
    for namespace in namespaces:
        # An earlier delete that did not wait: nothing can be created in it until it is gone.
        if _terminating(core, namespace["metadata"]["name"]):
            progress(f"waiting for namespace {namespace['metadata']['name']} to finish terminating")
            _wait_namespace_gone(core, namespace["metadata"]["name"])
    shared = [m for m in manifests if m["kind"] in SHARED_KINDS]
    tasks = [m for m in manifests if not is_node(m) and m not in namespaces and m not in shared]
    done = 0
    for stage, batch in (("node labels", nodes), ("namespace", namespaces), ("shared", shared), ("tasks", tasks)):
        _apply_all(dynamic, batch, field_manager)
        done += len(batch)
        progress(f"applied {done}/{len(manifests)} objects ({stage})")


def delete_manifests(
    api: client.ApiClient,
    stack: str,
    manifests: list[Manifest],
    progress: Progress = quiet,
    wait_for_namespace: bool = True,
) -> None:
    """Delete a rendered experiment's objects, newest first, and release exactly its node labels.

    The experiment's pods are gone when it returns; its namespace too unless `wait_for_namespace`
    is off (the namespace controller's sweep then goes on: an apply into it waits for its end)."""
    dynamic = DynamicClient(api)
    core = client.CoreV1Api(api)
    namespaced = [m for m in manifests if m["kind"] not in ("Node", "Namespace")]

    def delete(manifest: Manifest) -> None:
        metadata = manifest["metadata"]
        try:
            dynamic.delete(
                _resource(dynamic, manifest),
                name=metadata["name"],
                namespace=metadata.get("namespace"),
                body={"propagationPolicy": "Background"},
            )
        except ApiException as error:
            if not is_not_found(error):
                raise ApplyError(f"could not delete {_describe(manifest)}: {server_message(error)}") from None

    for jobset in (m for m in namespaced if m["kind"] == "JobSet"):
        _delete_dependents_first(dynamic, jobset)
    with ThreadPoolExecutor(PARALLEL_REQUESTS) as pool:
        list(pool.map(delete, reversed([m for m in namespaced if m["kind"] != "JobSet"])))
    # The JobSet's pods went with it; a StatefulSet's and the side pods' go after their owners.
    objects_namespace = namespaced[0]["metadata"]["namespace"]
    _wait_pods_gone(core, objects_namespace, L.selector_text(stack))
    progress(f"deleted {len(namespaced)} objects in namespace {objects_namespace}")
    # A team's namespace is not the experiment's: there is no Namespace to delete.
    for namespace in (m for m in manifests if m["kind"] == "Namespace"):
        namespace_name = namespace["metadata"]["name"]
        delete(namespace)
        if wait_for_namespace:
            _wait_namespace_gone(core, namespace_name)
            progress(f"deleted namespace {namespace_name}")

    field_manager = L.field_manager(stack)
    node_names = [m["metadata"]["name"] for m in manifests if m["kind"] == "Node"]
    absent = set(missing_nodes(core, node_names))
    for name in node_names:
        if name in absent:  # applying to a missing node would create it
            continue
        # The bare object under the same manager: the manager's labels go, nothing else.
        bare = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}
        try:
            dynamic.server_side_apply(_resource(dynamic, bare), body=bare, field_manager=field_manager)
        except ApiException as error:
            raise ApplyError(f"could not release the labels of node {name}: {server_message(error)}") from None
    progress(f"released tfk8s's labels on {len(node_names) - len(absent)} nodes")


NAMESPACE_GONE_TIMEOUT_S = 120.0


def _wait_namespace_gone(core: client.CoreV1Api, name: str) -> None:
    still_there = f"namespace {name} still terminating"
    _wait_gone(functools.partial(core.read_namespace, name), still_there, NAMESPACE_GONE_TIMEOUT_S)


def _wait_pods_gone(core: client.CoreV1Api, namespace: str, selector: str) -> None:
    deadline = time.monotonic() + NAMESPACE_GONE_TIMEOUT_S
    while left := core.list_namespaced_pod(namespace, label_selector=selector).items:
        if time.monotonic() >= deadline:
            names = ", ".join(name_of(pod) for pod in left)
            raise ApplyError(f"pods {names} still there {NAMESPACE_GONE_TIMEOUT_S:.0f} s after their owners' delete")
        time.sleep(WAIT_POLL_S)


def _terminating(core: client.CoreV1Api, name: str) -> bool:
    try:
        return always_set(core.read_namespace(name).metadata).deletion_timestamp is not None
    except ApiException as error:
        if is_not_found(error):
            return False
        raise


def _wait_gone(read: Callable[[], Any], still_there: str, timeout_s: float) -> None:
    """Poll `read` until the API server answers that the object is not found."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            read()
        except ApiException as error:
            if is_not_found(error):
                return
            raise
        time.sleep(WAIT_POLL_S)
    raise ApplyError(f"{still_there} after {timeout_s:.0f} s")
