"""Starts and stops the local control plane: etcd, kube-apiserver, controller-manager, scheduler, kwok.

Every process runs in its own process group and is recorded in
`.cluster/state.json`, so `down` stops exactly what `up` started, by group.
A start that fails stops what it had started before raising. A process
started with `tie_to_parent` also dies with the Python process that started it
(the tests' case: an interrupted test leaves nothing behind).
"""

from __future__ import annotations

import base64
import functools
import json
import shutil
import ssl
import subprocess
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import yaml

from components.spec.atomic_files import write_text_atomic
from trainer.ports import CLUSTER, free_port

from . import addons, paths, training_operator
from .client import crds_established
from .pki import FRONT_PROXY_CLIENT, FrontProxy, Pki, create_front_proxy, create_pki, issue_client_certificate
from .processes import ClusterError, Launcher, group_alive, is_ours, stop_processes, wait_until

# Pod IPs for kwok: a /16, because its default /24 runs out at 254 pods.
POD_CIDR = "10.244.0.1/16"
SERVICE_CIDR = "10.96.0.0/16"
# The annotation that hands a node to kwok (see nodes.py).
KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"
KWOK_NODE_VALUE = "fake"
# Client rate limits of the controllers. The defaults (20 to 50 requests/s) are
# sized for shared production API servers; on a private loopback API server
# they would make the StatefulSet controller, not Kubernetes, the bottleneck of
# a 2,000-pod experiment.
CLIENT_QPS = "500"
CLIENT_BURST = "1000"

KUBELET_CLIENT_CERT = "apiserver-kubelet-client.crt"
KUBELET_CLIENT_KEY = "apiserver-kubelet-client.key"


@dataclass
class ControlPlane:
    """A running local cluster: its processes (name -> PID = process group) and ports."""

    processes: dict[str, int] = field(default_factory=dict)
    ports: dict[str, int] = field(default_factory=dict)

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.ports['apiserver']}"

    def save(self, where: paths.ClusterDir) -> None:
        write_text_atomic(where.state_file, json.dumps({"processes": self.processes, "ports": self.ports}, indent=2))

    @classmethod
    def load(cls, where: paths.ClusterDir) -> Optional["ControlPlane"]:
        if not where.state_file.exists():
            return None
        state = json.loads(where.state_file.read_text())
        return cls(processes=state["processes"], ports=state["ports"])


def write_kubeconfig(path: Path, server: str, pki: Pki) -> None:
    ca = base64.b64encode(pki.serving_cert.read_bytes()).decode()
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "tfk8s-local", "cluster": {"server": server, "certificate-authority-data": ca}}],
        "users": [{"name": "tfk8s-admin", "user": {"token": pki.admin_token}}],
        "contexts": [{"name": "tfk8s-local", "context": {"cluster": "tfk8s-local", "user": "tfk8s-admin"}}],
        "current-context": "tfk8s-local",
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    path.chmod(0o600)


def _https_ok(url: str, token: str, cafile: Path) -> bool:
    context = ssl.create_default_context(cafile=str(cafile))
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, context=context, timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def up(
    where: paths.ClusterDir = paths.DEFAULT_CLUSTER,
    tie_to_parent: bool = False,
    node_grace: Optional[str] = None,
    tfjob: bool = False,
) -> ControlPlane:
    """Start a fresh cluster in `where` and wait until it serves; raise ClusterError if not.

    `node_grace`: how long a node may miss its heartbeats before it is NotReady and its pods are
    evicted (Kubernetes' default: 50 s). kwok keeps up the heartbeats of a thousand fake nodes on
    two cores only while the cluster is idle; under the load of 11,000 pods they lapse, and every
    pod would be evicted. A benchmark of that size gives more.

    `tfjob`: Kubeflow's TFJob too (tools/localcluster/training_operator.py).
    """
    existing = ControlPlane.load(where)
    if existing is not None and any(group_alive(pid) and is_ours(pid) for pid in existing.processes.values()):
        raise ClusterError("a local cluster is already running: `make cluster-down` first")
    for name in (*paths.BINARIES, *([training_operator.NAME] if tfjob else [])):
        paths.binary(name)
    for old in where.owned_paths():
        if old.is_dir():
            shutil.rmtree(old)
        elif old.exists():
            old.unlink()
    where.log_dir.mkdir(parents=True)
    pki = create_pki(where.pki_dir)
    issue_client_certificate(
        pki,
        "kube-apiserver-kubelet-client",
        "system:masters",
        where.pki_dir / KUBELET_CLIENT_CERT,
        where.pki_dir / KUBELET_CLIENT_KEY,
    )
    front = create_front_proxy(where.pki_dir)
    ports = {
        name: free_port(CLUSTER)
        for name in (
            "etcd",
            "etcd-peer",
            "apiserver",
            "controller-manager",
            "scheduler",
            "kwok",
            *(f"{addon}-{use}" for addon in addons.CONTROLLERS for use in ("webhook", "metrics", "health")),
            *(training_operator.PORTS if tfjob else ()),
        )
    }
    plane = ControlPlane(ports=ports)
    launcher = Launcher(where, tie_to_parent, record=lambda started: ControlPlane(started, ports).save(where))
    try:
        _start_all(launcher, plane, pki, front, node_grace)
        if tfjob:
            _start_training_operator(launcher, plane, pki)
    except BaseException:
        stop_processes(launcher.processes)
        raise
    finally:
        plane.processes = launcher.processes
        plane.save(where)
    return plane


def _start_all(launcher: Launcher, plane: ControlPlane, pki: Pki, front: FrontProxy, node_grace: Optional[str]) -> None:
    where = launcher.where
    ports = plane.ports
    etcd_url = f"http://127.0.0.1:{ports['etcd']}"
    peer_url = f"http://127.0.0.1:{ports['etcd-peer']}"
    launcher.start(
        "etcd",
        [
            "--name=local",
            f"--data-dir={where.etcd_dir}",
            f"--listen-client-urls={etcd_url}",
            f"--advertise-client-urls={etcd_url}",
            f"--listen-peer-urls={peer_url}",
            f"--initial-advertise-peer-urls={peer_url}",
            f"--initial-cluster=local={peer_url}",
            "--listen-metrics-urls=",
            # A throw-away cluster: an fsync per write would only slow the tests.
            "--unsafe-no-fsync",
            "--log-level=warn",
        ],
    )
    wait_until(lambda: _http_ok(f"{etcd_url}/health"), "etcd", launcher)

    launcher.start(
        "kube-apiserver",
        [
            f"--etcd-servers={etcd_url}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={ports['apiserver']}",
            # No other API server endpoints to reconcile on loopback.
            "--endpoint-reconciler-type=none",
            f"--tls-cert-file={pki.serving_cert}",
            f"--tls-private-key-file={pki.serving_key}",
            f"--cert-dir={where.pki_dir}",
            f"--token-auth-file={pki.token_file}",
            # Real nodes' kubelets authenticate with certificates from the cluster's CA,
            # and the Node authorizer lets each read only what its pods need.
            f"--client-ca-file={pki.serving_cert}",
            "--authorization-mode=Node,RBAC",
            # For logs and exec: the API server's identity towards kubelets.
            f"--kubelet-client-certificate={where.pki_dir / KUBELET_CLIENT_CERT}",
            f"--kubelet-client-key={where.pki_dir / KUBELET_CLIENT_KEY}",
            # Node names (srv-00) are not host names this machine resolves.
            "--kubelet-preferred-address-types=InternalIP",
            # The aggregation layer, for metrics.k8s.io (metrics-server, with real nodes:
            # tools/localcluster/metrics_server.py): requests for it go out with the front proxy's
            # client certificate and the user in headers, believed only from that certificate.
            f"--requestheader-client-ca-file={front.ca_cert}",
            f"--requestheader-allowed-names={FRONT_PROXY_CLIENT}",
            "--requestheader-username-headers=X-Remote-User",
            "--requestheader-group-headers=X-Remote-Group",
            "--requestheader-extra-headers-prefix=X-Remote-Extra-",
            f"--proxy-client-cert-file={front.client_cert}",
            f"--proxy-client-key-file={front.client_key}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={pki.service_account_public_key}",
            f"--service-account-signing-key-file={pki.service_account_key}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            # Like a real cluster, whose kubelets allow privileged pods: what
            # refuses them in tfk8s's namespaces is Pod Security admission.
            "--allow-privileged=true",
            "--max-requests-inflight=1000",
            "--max-mutating-requests-inflight=500",
        ],
    )
    write_kubeconfig(where.kubeconfig, plane.server, pki)
    wait_until(
        lambda: _https_ok(f"{plane.server}/readyz", pki.admin_token, pki.serving_cert),
        "kube-apiserver",
        launcher,
    )

    kubeconfig = str(where.kubeconfig)
    delegated = [
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--bind-address=127.0.0.1",
        "--leader-elect=false",
        f"--kube-api-qps={CLIENT_QPS}",
        f"--kube-api-burst={CLIENT_BURST}",
    ]
    launcher.start(
        "kube-controller-manager",
        [
            *delegated,
            f"--secure-port={ports['controller-manager']}",
            f"--cert-dir={where.pki_dir / 'controller-manager'}",
            f"--service-account-private-key-file={pki.service_account_key}",
            f"--root-ca-file={pki.serving_cert}",
            f"--flex-volume-plugin-dir={where.root / 'flexvolume'}",
            # Nothing reads the Endpoints API (deprecated since v1.33: CoreDNS and tfk8s read
            # EndpointSlices), and its controller rewrote a 1,000-address Endpoints object on every
            # pod change of a large experiment: a third of the controller-manager's time at x50.
            "--controllers=*,-endpoints-controller",
            # Statefulset and Job pods are created in bursts of thousands.
            "--concurrent-statefulset-syncs=20",
            *([f"--node-monitor-grace-period={node_grace}"] if node_grace else []),
        ],
    )
    launcher.start(
        "kube-scheduler",
        [
            *delegated,
            f"--secure-port={ports['scheduler']}",
            f"--cert-dir={where.pki_dir / 'scheduler'}",
        ],
    )
    where.addons_dir.mkdir(parents=True, exist_ok=True)
    kwok_config = where.addons_dir / "kwok.yaml"
    kwok_config.write_text(addons.kwok_stages())
    launcher.start(
        "kwok",
        [
            f"--config={kwok_config}",
            f"--kubeconfig={kubeconfig}",
            "--manage-all-nodes=false",
            f"--manage-nodes-with-annotation-selector={KWOK_NODE_ANNOTATION}={KWOK_NODE_VALUE}",
            f"--cidr={POD_CIDR}",
            "--node-ip=10.244.0.1",
            f"--server-address=127.0.0.1:{ports['kwok']}",
        ],
    )
    wait_until(
        lambda: _https_ok(
            f"{plane.server}/api/v1/namespaces/default/serviceaccounts/default", pki.admin_token, pki.serving_cert
        ),
        "the controllers (default service account)",
        launcher,
    )
    _start_addons(launcher, plane, pki)


def _start_addons(launcher: Launcher, plane: ControlPlane, pki: Pki) -> None:
    """JobSet and Kueue (tools/localcluster/addons.py): CRDs, controllers, then their webhooks."""
    where = launcher.where
    kubectl = [str(paths.binary("kubectl")), f"--kubeconfig={where.kubeconfig}"]
    ca_bundle = pki.serving_cert.read_bytes()
    cert_dir = where.addons_dir / "certs"
    addons.write_certificate(pki, cert_dir)
    crd_file = where.addons_dir / "crds.yaml"
    crds = addons.crds(plane.ports, ca_bundle)
    crd_file.write_text(yaml.safe_dump_all(crds))
    _run(
        where,
        [*kubectl, "apply", "--server-side", f"--field-manager={addons.LOCAL_FIELD_MANAGER}", "-f", str(crd_file)],
    )
    crd_names = [crd["metadata"]["name"] for crd in crds]
    wait_until(functools.partial(crds_established, where.kubeconfig, crd_names), "the addons' CRDs", launcher)
    for addon, binary in addons.CONTROLLERS.items():
        config_file = where.addons_dir / f"{addon}.yaml"
        config_file.write_text(yaml.safe_dump(addons.controller_config(addon, plane.ports, cert_dir)))
        executable, args, env = addons.controller_command(
            addon, paths.binary(binary), where.kubeconfig, config_file, cert_dir, where.addons_dir / f"{addon}-etc"
        )
        launcher.start(binary, args, executable, env)
    for addon, binary in addons.CONTROLLERS.items():
        health = f"http://127.0.0.1:{plane.ports[f'{addon}-health']}/readyz"
        wait_until(functools.partial(_http_ok, health), binary, launcher)
    webhooks = [
        configuration
        for addon in addons.CONTROLLERS
        for configuration in addons.webhook_configurations(addon, plane.ports[f"{addon}-webhook"], ca_bundle)
    ]
    webhook_file = where.addons_dir / "webhooks.yaml"
    webhook_file.write_text(yaml.safe_dump_all(webhooks))
    _run(
        where,
        [*kubectl, "apply", "--server-side", f"--field-manager={addons.LOCAL_FIELD_MANAGER}", "-f", str(webhook_file)],
    )


def _start_training_operator(launcher: Launcher, plane: ControlPlane, pki: Pki) -> None:
    """The TFJob CRD, then the operator (its caches need the CRD), then its webhook configuration
    once the webhook serves (before, a TFJob would be refused: the webhook fails closed)."""
    where = launcher.where
    kubectl = [str(paths.binary("kubectl")), f"--kubeconfig={where.kubeconfig}"]
    apply = [*kubectl, "apply", "--server-side", f"--field-manager={addons.LOCAL_FIELD_MANAGER}", "-f"]
    crd_file = where.addons_dir / "tfjob-crd.yaml"
    crd_file.write_text(yaml.safe_dump(training_operator.tfjob_crd()))
    _run(where, [*apply, str(crd_file)])
    wait_until(
        functools.partial(crds_established, where.kubeconfig, [training_operator.TFJOB_CRD]),
        training_operator.TFJOB_CRD,
        launcher,
    )
    cert_dir = where.addons_dir / "certs"  # the webhooks' certificate, written with JobSet's and Kueue's
    launcher.start(training_operator.NAME, training_operator.operator_args(where.kubeconfig, plane.ports, cert_dir))
    webhook_port = plane.ports[f"{training_operator.NAME}-webhook"]
    wait_until(functools.partial(training_operator.serving, webhook_port), training_operator.NAME, launcher)
    webhook_file = where.addons_dir / "tfjob-webhook.yaml"
    configuration = training_operator.webhook_configuration(webhook_port, pki.serving_cert.read_bytes())
    webhook_file.write_text(yaml.safe_dump(configuration))
    _run(where, [*apply, str(webhook_file)])


def _run(where: paths.ClusterDir, command: list[str]) -> None:
    result = subprocess.run(command, capture_output=True, text=True, cwd=where.root)
    if result.returncode != 0:
        raise ClusterError(
            f"{' '.join(command[:1] + command[2:4])} failed: {result.stderr.strip() or result.stdout.strip()}"
        )


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def down(where: paths.ClusterDir = paths.DEFAULT_CLUSTER) -> list[str]:
    """Stop every process of the cluster; the names of those that were running."""
    plane = ControlPlane.load(where)
    if plane is None:
        return []
    stopped = stop_processes(plane.processes)
    plane.processes = {}
    plane.save(where)
    return stopped
