"""Before anything is registered in a team's namespace: the namespace and the Secrets and claims
the stack names, read from the default provider's cluster (components/resources/provider_cluster.py);
what to make of them is components/objects/team_namespace.py's."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Optional

import pulumi

from ..objects.api_errors import api_error_text
from ..objects.team_namespace import Forbidden, Unreadable, team_namespace_findings
from ..plan.experiment import Experiment
from ..spec.models import StackConfigError
from .provider_cluster import (
    READ_TIMEOUT_S,
    ClusterReader,
    ClusterUnreadable,
)

if TYPE_CHECKING:
    from kubernetes.client import V1Namespace, V1PersistentVolumeClaim, V1Secret


def check_team_namespace(experiment: Experiment, cluster: ClusterReader) -> None:
    """StackConfigError naming what the stack needs and the team's namespace lacks, read from
    `cluster`; warnings for what could not be read; the namespace's Pod Security level shown."""
    if not experiment.shares_namespace:
        return
    try:
        api = cluster.api_client()
    except ClusterUnreadable as error:
        pulumi.log.warn(
            f"stack '{experiment.stack}': namespace {experiment.namespace} and what the stack names "
            f"there are not checked: {error}"
        )
        return
    if api is None:
        return
    with api:
        findings = team_namespace_findings(experiment, lambda kind, name: _read(api, experiment.namespace, kind, name))
    for note in findings.notes:
        pulumi.log.info(note)
    for warning in findings.warnings:
        pulumi.log.warn(warning)
    if findings.errors:
        raise StackConfigError.listing(experiment.stack, findings.errors)


def _read(api: Any, namespace: str, kind: str, name: str) -> Optional[dict[str, Any]]:
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    core = client.CoreV1Api(api)
    readers: dict[str, Callable[[], V1Namespace | V1Secret | V1PersistentVolumeClaim]] = {
        "Namespace": lambda: core.read_namespace(name, _request_timeout=READ_TIMEOUT_S),
        "Secret": lambda: core.read_namespaced_secret(name, namespace, _request_timeout=READ_TIMEOUT_S),
        "PersistentVolumeClaim": lambda: core.read_namespaced_persistent_volume_claim(
            name, namespace, _request_timeout=READ_TIMEOUT_S
        ),
    }
    read = readers[kind]
    try:
        found = read()
    except ApiException as error:
        if error.status == 404:
            return None
        text = api_error_text(error.status, error.reason, error.body)
        raise (Forbidden if error.status == 403 else Unreadable)(text) from None
    except (HTTPError, OSError) as error:
        raise Unreadable(f"the API server does not answer ({error})") from None
    # The API server writes the metadata of every object it returns.
    metadata = found.metadata
    assert metadata is not None
    # Only the metadata is looked at: a Secret's data is never kept.
    return {"metadata": {"name": metadata.name, "labels": dict(metadata.labels or {})}}
