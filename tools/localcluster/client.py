"""Kubernetes API access for the local-cluster tools (the official Python client)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional, Protocol, TypeVar

from kubernetes import client, config
from kubernetes.dynamic.exceptions import ApiException

from . import paths

# Parallel requests, as the Pulumi engine issues its resource operations.
PARALLEL_REQUESTS = 16

T = TypeVar("T")


class ApiObject(Protocol):
    @property
    def metadata(self) -> Optional[client.V1ObjectMeta]: ...


def api_client(kubeconfig: Optional[Path] = None) -> client.ApiClient:
    configuration = client.Configuration()
    config.load_kube_config(config_file=str(kubeconfig or paths.KUBECONFIG), client_configuration=configuration)
    configuration.connection_pool_maxsize = PARALLEL_REQUESTS
    return client.ApiClient(configuration)


def server_message(error: ApiException) -> str:
    """The API server's own message for a refused request."""
    if error.body is None:
        return str(error.reason)
    try:
        return json.loads(error.body)["message"]
    except (TypeError, ValueError, KeyError):
        return str(error.body or error.reason)


def is_not_found(error: Any) -> bool:
    return isinstance(error, ApiException) and error.status == 404


def always_set(value: Optional[T]) -> T:
    """A field the client's types leave optional but that the API server (or the kubelet) always
    fills in on what it returns: an object's metadata, name and creation time, a pod's or node's
    status, a reported container's state and its times."""
    assert value is not None, "the API server returned an object without a field it always sets"
    return value


def name_of(obj: ApiObject) -> str:
    """The name of an object the API server returned."""
    return always_set(always_set(obj.metadata).name)


def crds_established(kubeconfig: Path, names: list[str]) -> bool:
    """The API server serves each of these CRDs (their Established condition). Polled rather than
    `kubectl wait`: right after an apply a CRD may have no conditions yet, which kubectl takes for
    an error (`.status.conditions accessor error`), and a cluster's start failed on it."""
    listed = client.ApiextensionsV1Api(api_client(kubeconfig)).list_custom_resource_definition().items
    established = {
        name_of(crd)
        for crd in listed
        if any(c.type == "Established" and c.status == "True" for c in always_set(crd.status).conditions or [])
    }
    return set(names) <= established
