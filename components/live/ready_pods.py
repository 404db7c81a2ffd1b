"""The ready pod of a pod beside the tasks (TensorBoard, the log collector), as the commands that
reach it through a port-forward look it up."""

from __future__ import annotations

from typing import Any, Optional


def ready_pod(core: Any, namespace: str, labels: dict[str, str]) -> tuple[Optional[str], str]:
    """The name of a ready pod with `labels` that is not being deleted (None if there is none), and
    each such pod's phase, to say what is waited for."""
    selector = ",".join(f"{key}={value}" for key, value in labels.items())
    pods = core.list_namespaced_pod(namespace, label_selector=selector).items
    for pod in pods:
        ready = any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or ())
        if ready and pod.metadata.deletion_timestamp is None:
            return str(pod.metadata.name), ""
    return None, ", ".join(f"{pod.metadata.name} {pod.status.phase}" for pod in pods) or "no pod yet"
