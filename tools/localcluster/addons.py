"""JobSet and Kueue on the local cluster: their CRDs, their controllers on the host, their webhooks.

Both controllers run as host processes against the loopback API server, like
the rest of the control plane. Each serves its admission webhooks on a
127.0.0.1 port with a certificate from the cluster's CA, and the webhook
configurations call them by URL; their own certificate management (which
expects an in-cluster Service) is off. Only the webhooks for JobSets and
Kueue's own kinds are registered: JobSet's pod webhooks serve exclusive
placement, which tfk8s does not use, and Kueue's for other frameworks would
stop every Pod, Job or StatefulSet while their integrations are off.

Kueue manages JobSets only (`integrations.frameworks`), and only those that
name a queue. The cluster gets ResourceFlavor `default` and ClusterQueue
`tfk8s-local`, whose quota is what its nodes can allocate.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any, Iterable

import yaml
from kubernetes import client
from kubernetes.dynamic import DynamicClient

from components.spec.quantities import quantity_value

from . import paths
from .client import always_set
from .experiments import apply_manifest
from .pki import Pki, issue_serving_certificate

ADDONS_DIR = paths.PROJECT_ROOT / ".tools" / "addons"
LOCAL_CLUSTER_QUEUE = "tfk8s-local"
RESOURCE_FLAVOR = "default"
# The resources the local ClusterQueue covers: what tfk8s's pods request (the chief asks
# for ephemeral-storage: room for its checkpoints).
QUEUED_RESOURCES = ("cpu", "memory", "ephemeral-storage", "nvidia.com/gpu")
# Webhooks the local cluster registers: those for these API groups only.
WEBHOOK_GROUPS = {"jobset": {"jobset.x-k8s.io"}, "kueue": {"jobset.x-k8s.io", "kueue.x-k8s.io"}}
CONTROLLERS = {"jobset": "jobset-controller", "kueue": "kueue-controller"}
UNSHARE = "/usr/bin/unshare"
LOCAL_FIELD_MANAGER = "tfk8s-local"


def kwok_stages() -> str:
    """kwok's pod stages without the one that completes Job pods at once (tools/toolchain/build.sh):
    on the local cluster a PS, a worker and a chief run until deleted, as training pods do."""
    files = sorted((ADDONS_DIR / "kwok" / "stages").glob("*.yaml"))
    if not files:
        raise FileNotFoundError(f"no kwok stages in {ADDONS_DIR}: run `make toolchain` first")
    return "---\n".join(path.read_text() for path in files)


def crds(ports: dict[str, int], ca_bundle: bytes) -> list[dict[str, Any]]:
    """Both addons' CRDs; those the addon converts between API versions call its webhook by URL."""
    documents = []
    for addon in CONTROLLERS:
        files = sorted((ADDONS_DIR / addon / "crds").glob("*.yaml"))
        if not files:
            raise FileNotFoundError(f"no {addon} CRDs in {ADDONS_DIR}: run `make toolchain` first")
        converted = _converted_crds(addon)
        for path in files:
            crd = yaml.safe_load(path.read_text())
            if crd["metadata"]["name"] in converted:
                crd["spec"]["conversion"] = {
                    "strategy": "Webhook",
                    "webhook": {
                        "conversionReviewVersions": ["v1"],
                        "clientConfig": _url(ports[f"{addon}-webhook"], "/convert", ca_bundle),
                    },
                }
            documents.append(crd)
    return documents


def _converted_crds(addon: str) -> set[str]:
    """The CRDs the addon's own kustomization gives a conversion webhook (its `webhook_in_*` patches)."""
    kustomization = yaml.safe_load((ADDONS_DIR / addon / "crd-kustomization.yaml").read_text())
    names = set()
    for patch in kustomization.get("patches") or []:
        document = yaml.safe_load((ADDONS_DIR / addon / "crd-patches" / Path(patch["path"]).name).read_text())
        if document.get("spec", {}).get("conversion", {}).get("strategy") == "Webhook":
            names.add(document["metadata"]["name"])
    return names


def controller_config(addon: str, ports: dict[str, int], cert_dir: Path) -> dict[str, Any]:
    """The controller's Configuration file: webhooks, metrics and probes on loopback, no leader election."""
    common: dict[str, Any] = {
        "leaderElection": {"leaderElect": False},
        "webhook": {"host": "127.0.0.1", "port": ports[f"{addon}-webhook"], "certDir": str(cert_dir)},
        "metrics": {"bindAddress": f"127.0.0.1:{ports[f'{addon}-metrics']}"},
        "health": {"healthProbeBindAddress": f"127.0.0.1:{ports[f'{addon}-health']}"},
        "internalCertManagement": {"enable": False},
        "clientConnection": {"qps": 500, "burst": 1000},
    }
    if addon == "jobset":
        return {"apiVersion": "config.jobset.x-k8s.io/v1alpha1", "kind": "Configuration", **common}
    return {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        **common,
        "manageJobsWithoutQueueName": False,
        "integrations": {"frameworks": ["jobset.x-k8s.io/jobset"]},
    }


# Kueue reads its metrics certificate from a fixed path when it does not manage
# certificates itself. It runs in a mount namespace of its own where /etc is an
# overlay holding that file; the host's /etc is not touched, and the mounts end
# with the process.
_KUEUE_ETC = """set -e
mount -t tmpfs tfk8s-kueue "$TFK8S_ETC"
mkdir -p "$TFK8S_ETC/upper/kueue/metrics/certs" "$TFK8S_ETC/work"
cp "$TFK8S_CERTS/tls.crt" "$TFK8S_CERTS/tls.key" "$TFK8S_ETC/upper/kueue/metrics/certs/"
mount -t overlay tfk8s-kueue -o "lowerdir=/etc,upperdir=$TFK8S_ETC/upper,workdir=$TFK8S_ETC/work" /etc
exec "$@"
"""


def controller_command(
    addon: str, binary: Path, kubeconfig: Path, config_file: Path, cert_dir: Path, scratch: Path
) -> tuple[Path, list[str], dict[str, str]]:
    """The executable, arguments and extra environment that start the addon's controller."""
    args = [f"--kubeconfig={kubeconfig}", f"--config={config_file}"]
    if addon == "jobset":
        return binary, args, {}
    # Its visibility API server would listen on every interface.
    args.append("--feature-gates=VisibilityOnDemand=false")
    scratch.mkdir(parents=True, exist_ok=True)
    wrapper = ["--mount", "--propagation", "private", "sh", "-c", _KUEUE_ETC, "kueue", str(binary), *args]
    return Path(UNSHARE), wrapper, {"TFK8S_ETC": str(scratch), "TFK8S_CERTS": str(cert_dir)}


def webhook_configurations(addon: str, port: int, ca_bundle: bytes) -> list[dict[str, Any]]:
    """The addon's webhook configurations, calling https://127.0.0.1:<port> instead of its Service."""
    source = ADDONS_DIR / addon / "webhooks.yaml"
    configurations = []
    for document in yaml.safe_load_all(source.read_text()):
        if not document:
            continue
        webhooks = [
            _by_url(webhook, port, ca_bundle)
            for webhook in document["webhooks"]
            if _groups(webhook) <= WEBHOOK_GROUPS[addon]
        ]
        if webhooks:
            kind = document["kind"]
            name = f"tfk8s-local-{addon}-{'mutating' if kind.startswith('Mutating') else 'validating'}"
            configurations.append(
                {"apiVersion": document["apiVersion"], "kind": kind, "metadata": {"name": name}, "webhooks": webhooks}
            )
    return configurations


def _groups(webhook: dict[str, Any]) -> set[str]:
    return {group for rule in webhook.get("rules", []) for group in rule.get("apiGroups", [])}


def _by_url(webhook: dict[str, Any], port: int, ca_bundle: bytes) -> dict[str, Any]:
    return {**webhook, "clientConfig": _url(port, webhook["clientConfig"]["service"]["path"], ca_bundle)}


def _url(port: int, path: str, ca_bundle: bytes) -> dict[str, str]:
    return {"url": f"https://127.0.0.1:{port}{path}", "caBundle": base64.b64encode(ca_bundle).decode()}


def write_certificate(pki: Pki, cert_dir: Path) -> None:
    """`tls.crt` and `tls.key` for 127.0.0.1, where controller-runtime's webhook server looks."""
    cert_dir.mkdir(parents=True, exist_ok=True)
    issue_serving_certificate(pki, "tfk8s-local-webhooks", cert_dir / "tls.crt", cert_dir / "tls.key")


def cluster_queue_objects(allocatable: Iterable[dict[str, str]]) -> list[dict[str, Any]]:
    """ResourceFlavor `default` and ClusterQueue `tfk8s-local` with the nodes' allocatable sum as quota."""
    totals = {resource: 0.0 for resource in QUEUED_RESOURCES}
    for node in allocatable:
        for resource in QUEUED_RESOURCES:
            totals[resource] += quantity_value(node.get(resource, "0"))
    quotas = [{"name": resource, "nominalQuota": _quantity(resource, amount)} for resource, amount in totals.items()]
    return [
        {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ResourceFlavor", "metadata": {"name": RESOURCE_FLAVOR}},
        {
            "apiVersion": "kueue.x-k8s.io/v1beta1",
            "kind": "ClusterQueue",
            "metadata": {"name": LOCAL_CLUSTER_QUEUE},
            "spec": {
                "namespaceSelector": {},  # every namespace's LocalQueue may point here
                "resourceGroups": [
                    {
                        "coveredResources": list(QUEUED_RESOURCES),
                        "flavors": [{"name": RESOURCE_FLAVOR, "resources": quotas}],
                    }
                ],
            },
        },
    ]


def _quantity(resource: str, amount: float) -> str:
    if resource in ("memory", "ephemeral-storage"):
        return f"{int(amount) // 2**20}Mi"
    if resource == "cpu":
        return f"{int(round(amount * 1000))}m"
    return str(int(amount))


def _allocatable(node: client.V1Node) -> dict[str, str]:
    status = always_set(node.status)
    return status.allocatable or status.capacity or {}


def create_cluster_queue(api: client.ApiClient) -> dict[str, str]:
    """Kueue's ResourceFlavor and ClusterQueue for the cluster's nodes as they are now; the quota."""
    nodes = client.CoreV1Api(api).list_node().items
    objects = cluster_queue_objects(_allocatable(node) for node in nodes)
    dynamic = DynamicClient(api)
    for manifest in objects:
        apply_manifest(dynamic, manifest, LOCAL_FIELD_MANAGER)
    flavor = objects[1]["spec"]["resourceGroups"][0]["flavors"][0]
    return {quota["name"]: quota["nominalQuota"] for quota in flavor["resources"]}
