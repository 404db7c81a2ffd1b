"""metrics-server for a local cluster with real nodes: the metrics.k8s.io API that `top` and
`kubectl top` read (tools/toolchain builds it, at the version in versions.env).

How it fits on this machine, and why:
- it runs on the host and listens on 127.0.0.1 only, as user `tfk8s-metrics-server` (a client
  certificate of the cluster's CA) holding the rights of upstream's manifests/base/rbac.yaml
  (v0.8.0): read Nodes, Pods and `nodes/metrics`; delegate authentication and authorization to the
  API server (`system:auth-delegator`, and the `extension-apiserver-authentication` ConfigMap, from
  which it learns the front proxy's CA: control_plane.py);
- the API server reaches it through the APIService `v1beta1.metrics.k8s.io`, whose Service is of
  type ExternalName `localhost`: the aggregator, without `--enable-aggregator-routing`, dials an
  ExternalName Service's name at the APIService's port, so every request stays on loopback. (An
  Endpoints or EndpointSlice may not hold a 127.0.0.0/8 address, and a ClusterIP would need
  kube-proxy, which the local cluster has not.) The aggregator checks metrics-server's serving
  certificate, made for `metrics-server.kube-system.svc`, against the cluster's CA;
- it reads the real nodes only (the label each kubelet registers with: kwok nodes have no kubelet,
  and the address kwok gives them would lead off the machine), at their addresses on the pod
  bridge, and checks each kubelet's serving certificate against the cluster's CA (realnodes.py
  issues them), so it needs no `--kubelet-insecure-tls`;
- it starts once the real nodes are Ready; its APIService is registered once it answers, and
  `start` returns once the API server finds it available. Teardown deletes the APIService first (an
  aggregated API whose server is gone leaves discovery incomplete, and the namespace controller
  then cannot delete a namespace), then everything else it created.
"""

from __future__ import annotations

import base64
import ssl
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client
from kubernetes.config import ConfigException
from kubernetes.dynamic import DynamicClient
from urllib3.exceptions import HTTPError

from trainer.ports import CLUSTER, free_port

from . import host, paths
from .addons import LOCAL_FIELD_MANAGER
from .client import api_client
from .experiments import apply_manifest
from .node_files import REAL_NODE_LABEL, REAL_NODE_LABEL_VALUE, kubeconfig_for
from .pki import Pki, issue_client_certificate, issue_serving_certificate
from .processes import Launcher, wait_until

NAME = "metrics-server"
NAMESPACE = "kube-system"
USER = "tfk8s-metrics-server"
API_SERVICE = "v1beta1.metrics.k8s.io"
# How often it reads the kubelets: its least (upstream's manifests say 15 s), so that `top` has a
# figure soon after a pod starts. It must exceed the timeout of one kubelet request (10 s by
# default); a kubelet on this machine's bridge answers within milliseconds.
RESOLUTION = "10s"
KUBELET_REQUEST_TIMEOUT = "5s"
REQUEST_TIMEOUT_S = 5


def _dir(where: paths.ClusterDir) -> Path:
    return where.root / NAME


def objects(port: int, ca_bundle: bytes) -> list[dict[str, Any]]:
    """What the API server needs to know of metrics-server: its rights, its Service and, last, its APIService."""
    user = [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": USER}]

    def binding(kind: str, name: str, role_kind: str, role: str, namespace: str = "") -> dict[str, Any]:
        metadata = {"name": name, **({"namespace": namespace} if namespace else {})}
        return {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": kind,
            "metadata": metadata,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
            "subjects": user,
        }

    return [
        # Namespaces' view, edit and admin roles take this in: `top` needs no more than a namespace's rights.
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {
                "name": "system:aggregated-metrics-reader",
                "labels": {
                    f"rbac.authorization.k8s.io/aggregate-to-{role}": "true" for role in ("view", "edit", "admin")
                },
            },
            "rules": [
                {"apiGroups": ["metrics.k8s.io"], "resources": ["pods", "nodes"], "verbs": ["get", "list", "watch"]}
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "system:metrics-server"},
            "rules": [
                {"apiGroups": [""], "resources": ["nodes/metrics"], "verbs": ["get"]},
                {"apiGroups": [""], "resources": ["pods", "nodes"], "verbs": ["get", "list", "watch"]},
            ],
        },
        binding("ClusterRoleBinding", "system:metrics-server", "ClusterRole", "system:metrics-server"),
        binding("ClusterRoleBinding", "metrics-server:system:auth-delegator", "ClusterRole", "system:auth-delegator"),
        binding(
            "RoleBinding", "metrics-server-auth-reader", "Role", "extension-apiserver-authentication-reader", NAMESPACE
        ),
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": NAME, "namespace": NAMESPACE},
            "spec": {"type": "ExternalName", "externalName": "localhost"},
        },
        {
            "apiVersion": "apiregistration.k8s.io/v1",
            "kind": "APIService",
            "metadata": {"name": API_SERVICE},
            "spec": {
                "service": {"name": NAME, "namespace": NAMESPACE, "port": port},
                "group": "metrics.k8s.io",
                "version": "v1beta1",
                "caBundle": base64.b64encode(ca_bundle).decode(),
                "groupPriorityMinimum": 100,
                "versionPriority": 100,
            },
        },
    ]


def arguments(where: paths.ClusterDir, port: int, ca_file: Path) -> list[str]:
    files = _dir(where)
    kubeconfig = files / "kubeconfig"
    return [
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        f"--tls-cert-file={files / 'serving.crt'}",
        f"--tls-private-key-file={files / 'serving.key'}",
        # A real node's kubelet listens on its address on the pod bridge (node_files.kubelet_config).
        "--kubelet-preferred-address-types=InternalIP",
        "--kubelet-use-node-status-port",
        f"--kubelet-certificate-authority={ca_file}",
        f"--node-selector={REAL_NODE_LABEL}={REAL_NODE_LABEL_VALUE}",
        f"--metric-resolution={RESOLUTION}",
        f"--kubelet-request-timeout={KUBELET_REQUEST_TIMEOUT}",
    ]


def start(where: paths.ClusterDir, server: str, pki: Pki, launcher: Launcher) -> int:
    """Start metrics-server for the running cluster in `where` and register its API; return once the
    API server finds it available. Its PID is in `launcher.processes`, as NAME."""
    files = _dir(where)
    files.mkdir(parents=True, exist_ok=True)
    cert, key = files / "client.crt", files / "client.key"
    issue_client_certificate(pki, USER, "tfk8s-local-addons", cert, key)
    (files / "kubeconfig").write_text(yaml.safe_dump(kubeconfig_for(server, pki.serving_cert, cert, key, USER)))
    issue_serving_certificate(
        pki, NAME, files / "serving.crt", files / "serving.key", dns_names=(f"{NAME}.{NAMESPACE}.svc",)
    )
    port = free_port(CLUSTER)
    api = api_client(where.kubeconfig)
    dynamic = DynamicClient(api)
    *rights_and_service, api_service = objects(port, pki.serving_cert.read_bytes())
    for manifest in rights_and_service:  # it reads the front proxy's CA with them as it starts
        apply_manifest(dynamic, manifest, LOCAL_FIELD_MANAGER)
    pid = launcher.start(NAME, arguments(where, port, pki.serving_cert))
    wait_until(lambda: _answers(f"https://127.0.0.1:{port}/livez", pki.serving_cert), NAME, launcher)
    apply_manifest(dynamic, api_service, LOCAL_FIELD_MANAGER)
    registration = client.ApiregistrationV1Api(api)
    wait_until(lambda: _available(registration), f"the APIService {API_SERVICE}", launcher)
    return pid


def _answers(url: str, ca_file: Path) -> bool:
    context = ssl.create_default_context(cafile=str(ca_file))
    try:
        with urllib.request.urlopen(url, context=context, timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def _available(registration: client.ApiregistrationV1Api) -> bool:
    status = registration.read_api_service(API_SERVICE).status
    conditions = (status.conditions if status is not None else None) or ()
    return any(c.type == "Available" and c.status == "True" for c in conditions)


def unregister(where: paths.ClusterDir) -> None:
    """Delete what `start` created in the API server, the APIService first (where the API server still
    answers: after a killed run it is gone, and so is all of it), and metrics-server's files."""
    if where.kubeconfig.exists():
        try:
            api = api_client(where.kubeconfig)
            api.configuration.retries = False
            _delete_all(api)
        except (client.ApiException, ConfigException, HTTPError, OSError):
            pass  # no API server: nothing registered is left to delete
    host.remove_tree(_dir(where))


def _delete_all(api: client.ApiClient) -> None:
    rbac = client.RbacAuthorizationV1Api(api)
    deletions = [
        lambda: client.ApiregistrationV1Api(api).delete_api_service(API_SERVICE, _request_timeout=REQUEST_TIMEOUT_S),
        lambda: client.CoreV1Api(api).delete_namespaced_service(NAME, NAMESPACE, _request_timeout=REQUEST_TIMEOUT_S),
        lambda: rbac.delete_namespaced_role_binding(
            "metrics-server-auth-reader", NAMESPACE, _request_timeout=REQUEST_TIMEOUT_S
        ),
        lambda: rbac.delete_cluster_role_binding(
            "metrics-server:system:auth-delegator", _request_timeout=REQUEST_TIMEOUT_S
        ),
        lambda: rbac.delete_cluster_role_binding("system:metrics-server", _request_timeout=REQUEST_TIMEOUT_S),
        lambda: rbac.delete_cluster_role("system:metrics-server", _request_timeout=REQUEST_TIMEOUT_S),
        lambda: rbac.delete_cluster_role("system:aggregated-metrics-reader", _request_timeout=REQUEST_TIMEOUT_S),
    ]
    for delete in deletions:
        try:
            delete()
        except client.ApiException as error:
            if error.status != 404:
                raise
