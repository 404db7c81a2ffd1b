"""`make cluster-user NAME=<user> NAMESPACE=<ns>`: a team member of the local cluster who holds
exactly the RBAC docs/shared-cluster.md documents, and no more.

As the cluster's admin: the team's namespace (created if missing, as a platform team would), the
ClusterRoles of docs/rbac/ applied as written there, `tfk8s-experimenter` bound to the user in that
namespace by a RoleBinding, and, with `--label-nodes`, `tfk8s-node-labeller` bound cluster-wide
(stacks that keep placeBy: labels need it). The user's identity is a client certificate signed by
the cluster's CA (common name: the user's name; group `tfk8s-users`, which nothing is bound to),
written with the cluster's address into `.cluster/users/<user>.kubeconfig`, for
`make preview|up|destroy STACK=<s> KUBECONFIG=<file>` and
`python -m components status|top <s> --kubeconfig <file>`.
"""

from __future__ import annotations

import base64
import re
import tempfile
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client
from kubernetes.dynamic import DynamicClient
from urllib3.exceptions import MaxRetryError

from components.spec.atomic_files import write_text_atomic

from . import paths
from .client import api_client, is_not_found, server_message
from .pki import issue_client_certificate, load_pki

RBAC_DIR = paths.PROJECT_ROOT / "docs" / "rbac"
EXPERIMENTER_ROLE = "tfk8s-experimenter"
NODE_LABELLER_ROLE = "tfk8s-node-labeller"
FIELD_MANAGER = "tfk8s-cluster-user"
USERS_GROUP = "tfk8s-users"  # a certificate names a group: one that holds no rights
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


class UserError(ValueError):
    """The user cannot be minted: the message says why."""


def users_dir(where: paths.ClusterDir) -> Path:
    return where.root / "users"


def user_kubeconfig(where: paths.ClusterDir, name: str) -> Path:
    return users_dir(where) / f"{name}.kubeconfig"


def cluster_roles() -> list[dict[str, Any]]:
    """The documented ClusterRoles, as docs/rbac/ writes them."""
    return [yaml.safe_load(path.read_text(encoding="utf-8")) for path in sorted(RBAC_DIR.glob("*.yaml"))]


def bindings(name: str, namespace: str, label_nodes: bool) -> list[dict[str, Any]]:
    """The user's bindings, as docs/shared-cluster.md shows them."""
    subject = [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": name}]
    role_binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": f"{EXPERIMENTER_ROLE}-{name}", "namespace": namespace},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": EXPERIMENTER_ROLE},
        "subjects": subject,
    }
    if not label_nodes:
        return [role_binding]
    return [
        role_binding,
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": f"{NODE_LABELLER_ROLE}-{name}"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": NODE_LABELLER_ROLE},
            "subjects": subject,
        },
    ]


def mint_user(
    name: str, namespace: str, label_nodes: bool = False, where: paths.ClusterDir = paths.DEFAULT_CLUSTER
) -> Path:
    """Create the user's namespace, roles and bindings, and write its kubeconfig; its path."""
    for value, what in ((name, "NAME"), (namespace, "NAMESPACE")):
        if not DNS_LABEL.match(value):
            raise UserError(f"{what} '{value}' must be a DNS label (lower-case letters, digits and '-')")
    if not where.kubeconfig.is_file():
        raise UserError(f"no local cluster runs ({where.kubeconfig} is missing): `make cluster-up` first")
    api = api_client(where.kubeconfig)
    try:
        _ensure_namespace(api, namespace)
        dynamic = DynamicClient(api)
        for manifest in [*cluster_roles(), *bindings(name, namespace, label_nodes)]:
            resource = dynamic.resources.get(api_version=manifest["apiVersion"], kind=manifest["kind"])
            dynamic.server_side_apply(
                resource, body=manifest, namespace=manifest["metadata"].get("namespace"), field_manager=FIELD_MANAGER
            )
    except MaxRetryError:
        raise UserError(f"no local cluster answers at {api.configuration.host}: `make cluster-up` first") from None
    except client.ApiException as error:
        raise UserError(f"the local cluster refused: {server_message(error)}") from None
    path = user_kubeconfig(where, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, yaml.safe_dump(_kubeconfig(where, name, namespace), sort_keys=False), mode=0o600)
    return path


def _ensure_namespace(api: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api)
    try:
        core.read_namespace(namespace)
    except client.ApiException as error:
        if not is_not_found(error):
            raise
        core.create_namespace(
            client.V1Namespace(api_version="v1", kind="Namespace", metadata=client.V1ObjectMeta(name=namespace))
        )


def _kubeconfig(where: paths.ClusterDir, name: str, namespace: str) -> dict[str, Any]:
    admin = yaml.safe_load(where.kubeconfig.read_text(encoding="utf-8"))
    cluster = admin["clusters"][0]
    with tempfile.TemporaryDirectory() as scratch:
        cert, key = Path(scratch) / "user.crt", Path(scratch) / "user.key"
        issue_client_certificate(load_pki(where.pki_dir), name, USERS_GROUP, cert, key)
        credentials = {
            "client-certificate-data": base64.b64encode(cert.read_bytes()).decode(),
            "client-key-data": base64.b64encode(key.read_bytes()).decode(),
        }
    context = f"{name}@{cluster['name']}"
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [cluster],
        "users": [{"name": name, "user": credentials}],
        "contexts": [{"name": context, "context": {"cluster": cluster["name"], "user": name, "namespace": namespace}}],
        "current-context": context,
    }
