"""Kubernetes API access for the local-cluster tools (the official Python client)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

from kubernetes import client, config
from kubernetes.dynamic.exceptions import ApiException

from . import paths

# Parallel requests, as the Pulumi engine issues its resource operations.
PARALLEL_REQUESTS = 16


def api_client(kubeconfig: Optional[Path] = None) -> client.ApiClient:
    configuration = client.Configuration()
    config.load_kube_config(config_file=str(kubeconfig or paths.KUBECONFIG), client_configuration=configuration)
    configuration.connection_pool_maxsize = PARALLEL_REQUESTS
    return client.ApiClient(configuration)


def server_message(error: ApiException) -> str:
    """The API server's own message for a refused request."""
    try:
        return json.loads(error.body)["message"]
    except (TypeError, ValueError, KeyError):
        return str(error.body or error.reason)


def is_not_found(error: Any) -> bool:
    return isinstance(error, ApiException) and error.status == 404
