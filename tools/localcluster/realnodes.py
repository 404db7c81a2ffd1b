"""Real nodes beside the kwok ones: a kubelet with its own containerd and runc per server.

What a real node needs on this machine, and why:
- containerd with its own root, state, socket and runc root, and
  `restrict_oom_score_adj` (root here lacks CAP_SYS_RESOURCE, so runc could not
  lower a container's OOM score and every sandbox failed);
- the sandbox ("pause") and TensorFlow images imported into it, since no
  registry is reachable (tools/nodeimage builds them), and kept unpacked in
  the cache between runs (image_store.py);
- a kubelet with its own root dir, node IP on the pod bridge, cgroup root,
  client certificate (`system:node:<name>`) and pod log folder;
- pod networking: one CNI bridge for every node (so pod IPs never collide),
  host-local addresses, no gateway and no masquerade: pods reach each other and
  cluster DNS, nothing off the machine;
- NetworkPolicy: a kube-network-policies agent per node on the host, deciding each new
  connection between pods from the policies (network_policies.py);
- cluster DNS: CoreDNS on the host at the bridge's gateway address, serving the
  headless Services' names from the API server (no kube-proxy: tfk8s uses
  headless Services only);
- resource metrics: metrics-server on the host's loopback, reading the real
  kubelets and serving metrics.k8s.io through the API server (metrics_server.py).

Everything lives under the cluster's folder; what is changed on the host
(bridge, cgroups, sysctls, iptables chains, nftables tables) is recorded first
(realnodes_record.py, host.py) and put back by `teardown` (realnodes_teardown.py).
This module starts the nodes and imports images into their containerd, also into
running nodes (`import_archive`, for `make image`).
"""

from __future__ import annotations

import json
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml
from kubernetes import client

from tools.nodeimage.images import pause_image, program_image_archives, tensorflow_image
from trainer.ports import CLUSTER, free_port

from . import host, host_claim, image_store, metrics_server, network_policies, paths
from .client import always_set, api_client, name_of
from .experiments import Progress, quiet
from .node_files import (
    CRI_NAMESPACE,
    REAL_NODE_LABEL,
    REAL_NODE_LABEL_VALUE,
    NodeDir,
    cgroup_name,
    cni_config,
    cni_dir,
    containerd_config,
    corefile,
    kubeconfig_for,
    kubelet_config,
    nodes_dir,
)
from .pki import Pki, issue_client_certificate, issue_serving_certificate, load_pki
from .processes import ClusterError, Launcher, wait_until
from .realnodes_record import RealNodes
from .realnodes_teardown import teardown

NODE_READY_TIMEOUT_S = 120.0


def missing_prerequisites() -> list[str]:
    """What a real node needs that this machine lacks, each with how to get it."""
    missing = []
    for name in paths.REAL_NODE_BINARIES:
        if not (paths.TOOLS_BIN / name).is_file():
            missing.append(f"{name} (make toolchain)")
    for name, binary in paths.SYSTEM_BINARIES.items():
        if not Path(binary).is_file():
            missing.append(f"{binary} (make toolchain installs Debian's {name})")
    for plugin in ("bridge", "host-local", "loopback"):
        if not (paths.CNI_PLUGIN_DIR / plugin).is_file():
            missing.append(f"{paths.CNI_PLUGIN_DIR / plugin} (make toolchain installs containernetworking-plugins)")
    for image in (pause_image(), tensorflow_image()):
        if not image.archive.is_file():
            missing.append(f"{image.reference} (make node-image)")
    return missing


# -- start ------------------------------------------------------------------------


def start(
    where: paths.ClusterDir,
    server: str,
    names: list[str],
    tie_to_parent: bool = False,
    say: Progress = quiet,
) -> RealNodes:
    """Make `names` real nodes of the running cluster in `where`; wait until each is Ready.

    What an earlier run left must be torn down first (lifecycle.up does). A
    start that fails tears down what it had done before raising.
    """
    host.require_root()
    missing = missing_prerequisites()
    if missing:
        raise ClusterError("real nodes need: " + "; ".join(missing))
    real = RealNodes(host_state=host.record())
    real.nodes = {name: host.node_address(index) for index, name in enumerate(names)}
    real.save(where)  # from here on, teardown knows what to put back
    host_claim.take(where.root)

    def record(started: dict[str, int]) -> None:
        real.processes.update(started)
        real.save(where)

    launcher = Launcher(where, tie_to_parent, record)
    try:
        _start_all(where, server, real, launcher, say)
    except BaseException:
        teardown(where, say)
        raise
    return real


def _start_all(where: paths.ClusterDir, server: str, real: RealNodes, launcher: Launcher, say: Progress) -> None:
    pki = load_pki(where.pki_dir)
    host_state = real.host_state
    assert host_state is not None  # start() records it before it starts anything
    host.create_bridge(host_state, real.nodes.values())
    host.enable_bridge_netfilter()
    real.save(where)
    (cni_dir(where) / "net.d").mkdir(parents=True, exist_ok=True)
    (cni_dir(where) / "net.d" / "10-tfk8s.conflist").write_text(json.dumps(cni_config(where), indent=2))
    _start_dns(where, server, pki, launcher)

    images = [pause_image().archive, tensorflow_image().archive, *program_image_archives()]
    node_dirs = {name: NodeDir(nodes_dir(where) / name) for name in real.nodes}
    to_import = {}
    for name, node in node_dirs.items():
        node.root.mkdir(parents=True, exist_ok=True)
        to_import[name] = image_store.take(name, node.containerd_root, images)
        host.create_cgroup(host_state, cgroup_name(name))
        real.save(where)
        _start_containerd(node, where, name, launcher)
    started = time.monotonic()

    def import_images(name: str) -> None:
        # Each node's containerd unpacks its own copy of the images (gigabytes): all nodes at once.
        for archive in to_import[name]:
            _import_recorded(node_dirs[name], archive)

    with ThreadPoolExecutor(len(node_dirs)) as pool:
        list(pool.map(import_images, node_dirs))  # raises the first node's error
    kept = sorted({archive.stem for archive in images} - {a.stem for archives in to_import.values() for a in archives})
    say(
        f"{', '.join(node_dirs)}: containerd with {', '.join(archive.stem for archive in images)} in "
        f"{time.monotonic() - started:.0f} s" + (f" (kept from the last run: {', '.join(kept)})" if kept else "")
    )
    for name, address in real.nodes.items():
        _start_kubelet(node_dirs[name], name, address, server, pki, where, launcher)
    _wait_ready(where, list(real.nodes), launcher, say)
    host_state.nft_tables = [network_policies.table(name).name for name in real.nodes]
    real.save(where)  # before the agents make them: teardown removes what a killed agent left
    started = time.monotonic()
    network_policies.start(where, pki, server, list(real.nodes), launcher)
    say(f"{network_policies.NAME} enforcing NetworkPolicy on each node in {time.monotonic() - started:.1f} s")
    started = time.monotonic()
    metrics_server.start(where, server, pki, launcher)
    say(f"metrics-server serving {metrics_server.API_SERVICE} in {time.monotonic() - started:.1f} s")


def _start_dns(where: paths.ClusterDir, server: str, pki: Pki, launcher: Launcher) -> None:
    dns_dir = where.root / "dns"
    dns_dir.mkdir(parents=True, exist_ok=True)
    kubeconfig = dns_dir / "kubeconfig"
    cert, key = dns_dir / "coredns.crt", dns_dir / "coredns.key"
    # CoreDNS lists Services and EndpointSlices cluster-wide; a system:masters client keeps this local setup short.
    issue_client_certificate(pki, "tfk8s-coredns", "system:masters", cert, key)
    kubeconfig.write_text(yaml.safe_dump(kubeconfig_for(server, pki.serving_cert, cert, key, "coredns")))
    (dns_dir / "Corefile").write_text(corefile(kubeconfig))
    launcher.start("coredns", ["-conf", str(dns_dir / "Corefile")])


def _start_containerd(node: NodeDir, where: paths.ClusterDir, name: str, launcher: Launcher) -> None:
    node.containerd_config.write_text(containerd_config(node, where))
    launcher.start(
        f"containerd-{name}",
        ["--config", str(node.containerd_config)],
        executable=Path(paths.SYSTEM_BINARIES["containerd"]),
    )
    wait_until(lambda: _ctr(node, "version", check=False).returncode == 0, f"containerd of {name}", launcher)


def _ctr(node: NodeDir, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(
        [paths.SYSTEM_BINARIES["ctr"], "--address", str(node.containerd_socket), "--namespace", CRI_NAMESPACE, *args],
        check=check,
        capture_output=True,
        text=True,
    )


def _import_archive(node: NodeDir, archive: Path) -> None:
    try:
        _ctr(node, "images", "import", str(archive))
    except subprocess.CalledProcessError as error:
        raise ClusterError(f"could not load {archive} into {node.root.name}: {error.stderr.strip()}") from None


def _import_recorded(node: NodeDir, archive: Path) -> None:
    """Import `archive` and record it in the node's kept store (image_store.py)."""
    _import_archive(node, archive)
    image_store.imported(node.containerd_root, [archive])


def node_images(where: paths.ClusterDir, name: str) -> list[str]:
    """The image references a real node's containerd holds."""
    return _ctr(NodeDir(nodes_dir(where) / name), "images", "ls", "-q").stdout.split()


def import_archive(where: paths.ClusterDir, archive: Path, *, keyed: bool = False) -> list[str]:
    """Import an image archive into every real node of the cluster running in `where`; their names
    (none when no such cluster runs).

    A keyed archive's file name carries a key of everything that went into it (`make image`'s): a
    node whose kept images came from it already is skipped, as at a start (image_store.py), since
    an import reads the whole archive, gigabytes of TensorFlow, to find nothing new."""
    real = RealNodes.load(where)
    if real is None:
        return []
    names = []
    for name in real.nodes:
        node = NodeDir(nodes_dir(where) / name)
        if not node.containerd_socket.exists():
            continue
        if not keyed:
            _import_archive(node, archive)
        elif archive.name not in image_store.held(node.containerd_root):
            _import_recorded(node, archive)
        names.append(name)
    return names


def _start_kubelet(
    node: NodeDir, name: str, address: str, server: str, pki: Pki, where: paths.ClusterDir, launcher: Launcher
) -> None:
    cert, key = node.root / "kubelet-client.crt", node.root / "kubelet-client.key"
    issue_client_certificate(pki, f"system:node:{name}", "system:nodes", cert, key)
    node.kubelet_kubeconfig.write_text(
        yaml.safe_dump(kubeconfig_for(server, pki.serving_cert, cert, key, f"system:node:{name}"))
    )
    issue_serving_certificate(
        pki,
        f"kubelet-{name}",
        node.kubelet_serving_cert,
        node.kubelet_serving_key,
        addresses=(address,),
        dns_names=(name,),
    )
    healthz_port = free_port(CLUSTER)
    node.kubelet_config.write_text(yaml.safe_dump(kubelet_config(node, address, pki.serving_cert, healthz_port)))
    launcher.start(
        f"kubelet-{name}",
        [
            f"--config={node.kubelet_config}",
            f"--kubeconfig={node.kubelet_kubeconfig}",
            f"--root-dir={node.root / 'kubelet'}",
            f"--cert-dir={node.root / 'kubelet-pki'}",
            f"--hostname-override={name}",
            f"--node-ip={address}",
            f"--node-labels={REAL_NODE_LABEL}={REAL_NODE_LABEL_VALUE}",
            "--v=1",
        ],
        executable=paths.binary("kubelet"),
    )


def _wait_ready(where: paths.ClusterDir, names: list[str], launcher: Launcher, say: Progress) -> None:
    core = client.CoreV1Api(api_client(where.kubeconfig))
    started = time.monotonic()

    def all_ready() -> bool:
        ready = set()
        for node in core.list_node().items:
            name = name_of(node)
            if name in names:
                conditions = {c.type: c.status for c in always_set(node.status).conditions or []}
                if conditions.get("Ready") == "True":
                    ready.add(name)
        return ready == set(names)

    wait_until(all_ready, f"real nodes {', '.join(names)}", launcher, timeout_s=NODE_READY_TIMEOUT_S)
    say(f"real nodes {', '.join(names)} Ready in {time.monotonic() - started:.1f} s")
