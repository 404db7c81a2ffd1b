"""NetworkPolicy on the real nodes: one kube-network-policies agent per node (tools/toolchain builds
it, at the version in versions.env, patched for this kernel).

How it fits on this machine, and why:
- the agent puts an nftables table in the host's network namespace that sends the first packet of
  each new connection to or from a pod a NetworkPolicy selects to a netfilter queue, and answers
  each from the policies it reads from the API server: accept or drop. Every real node's pods sit
  on the one bridge in the host's network namespace, so each node's agent owns a table and a queue
  of its own (named after the node) and handles the pods of its node (--hostname-override), as a
  DaemonSet's pod would on a node of its own;
- pods on one bridge talk without being routed: the kernel shows their packets to the inet hooks
  only with net.bridge.bridge-nf-call-iptables=1, which cluster-up sets (host.py records the
  value before and teardown puts it back);
- it runs as user `tfk8s-network-policies` (a client certificate of the cluster's CA, in a group
  nothing is bound to) with upstream's rights (install.yaml, v0.8.0): list and watch Pods,
  Namespaces and NetworkPolicies, nothing else;
- it listens for its metrics on 127.0.0.1 only; without NRI (the real nodes' containerd 1.6 has
  none) it learns pod addresses from the API server;
- it is started once the nodes are Ready, before any experiment, and cluster-up goes on once its
  table is in place and it listens on its queue. Stopped (SIGTERM) it removes its table itself, and
  the kernel unbinds its queue as it exits; a table an agent killed outright left behind is removed
  by teardown (host.py, netfilter.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from kubernetes import client
from kubernetes.config import ConfigException
from kubernetes.dynamic import DynamicClient
from urllib3.exceptions import HTTPError

from trainer.ports import CLUSTER, free_port

from . import host, netfilter, paths
from .addons import LOCAL_FIELD_MANAGER
from .client import api_client
from .experiments import apply_manifest
from .node_files import kubeconfig_for
from .pki import Pki, issue_client_certificate
from .processes import ClusterError, Launcher, wait_until

NAME = "kube-network-policies"
USER = "tfk8s-network-policies"
ROLE = USER  # its ClusterRole and ClusterRoleBinding
# Queue numbers of the agents, one per real node: far from 100, upstream's default, which another
# agent on the machine would take. Tables and queues are the host's, whichever cluster made them.
FIRST_QUEUE = 7700
TABLE_PREFIX = "tfk8s-netpol-"
REQUEST_TIMEOUT_S = 5


def _dir(where: paths.ClusterDir) -> Path:
    return where.root / NAME


def process_name(node: str) -> str:
    return f"{NAME}-{node}"


def table(node: str) -> netfilter.Table:
    return netfilter.Table(netfilter.FAMILY_INET, TABLE_PREFIX + node)


def queue(index: int) -> int:
    return FIRST_QUEUE + index


def objects() -> list[dict[str, Any]]:
    """The agents' rights: upstream's ClusterRole, bound to their user."""
    return [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": ROLE},
            "rules": [
                {"apiGroups": [""], "resources": ["pods", "namespaces"], "verbs": ["list", "watch"]},
                {"apiGroups": ["networking.k8s.io"], "resources": ["networkpolicies"], "verbs": ["list", "watch"]},
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": ROLE},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": ROLE},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": USER}],
        },
    ]


def arguments(kubeconfig: Path, node: str, index: int, metrics_port: int) -> list[str]:
    return [
        f"--kubeconfig={kubeconfig}",
        f"--hostname-override={node}",
        f"--nftables-table-name={table(node).name}",
        f"--nfqueue-id={queue(index)}",
        f"--metrics-bind-address=127.0.0.1:{metrics_port}",
        # The kernel fixed the race this works around in 6.12 (see upstream's flag); the workaround
        # adds a prerouting chain that queues every pod's DNS query.
        "--netfilter-bug-1766-fix=false",
        "--v=2",  # a line per queued packet with its verdict: the log says what was refused and why
    ]


def start(where: paths.ClusterDir, pki: Pki, server: str, nodes: list[str], launcher: Launcher) -> None:
    """Start an agent for each of `nodes` (their indexes give the queues); return once each enforces.
    Their PIDs are in `launcher.processes`; the tables they will make must already be recorded for
    teardown (host.HostState.nft_tables)."""
    taken = netfilter.bound_queues() & {queue(index) for index in range(len(nodes))}
    if taken:
        raise ClusterError(f"nfqueue {', '.join(map(str, sorted(taken)))} is held by another program")
    files = _dir(where)
    files.mkdir(parents=True, exist_ok=True)
    cert, key, kubeconfig = files / "client.crt", files / "client.key", files / "kubeconfig"
    issue_client_certificate(pki, USER, "tfk8s-local-addons", cert, key)
    kubeconfig.write_text(yaml.safe_dump(kubeconfig_for(server, pki.serving_cert, cert, key, USER)))
    dynamic = DynamicClient(api_client(where.kubeconfig))
    for manifest in objects():
        apply_manifest(dynamic, manifest, LOCAL_FIELD_MANAGER)
    for index, node in enumerate(nodes):
        launcher.start(
            process_name(node), arguments(kubeconfig, node, index, free_port(CLUSTER)), executable=paths.binary(NAME)
        )
    wait_until(lambda: _enforcing(nodes), f"{NAME} on {', '.join(nodes)}", launcher)


def _enforcing(nodes: list[str]) -> bool:
    """Each agent's table is in place (its rules load all at once, or none do) and it reads its queue."""
    tables = set(netfilter.tables())
    queues = netfilter.bound_queues()
    return all(table(node) in tables and queue(index) in queues for index, node in enumerate(nodes))


def unregister(where: paths.ClusterDir) -> None:
    """Delete the agents' rights from the API server (where it still answers) and their files."""
    if where.kubeconfig.exists():
        try:
            api = api_client(where.kubeconfig)
            api.configuration.retries = False
            rbac = client.RbacAuthorizationV1Api(api)
            for delete in (rbac.delete_cluster_role_binding, rbac.delete_cluster_role):
                try:
                    delete(ROLE, _request_timeout=REQUEST_TIMEOUT_S)
                except client.ApiException as error:
                    if error.status != 404:
                        raise
        except (client.ApiException, ConfigException, HTTPError, OSError):
            pass  # no API server: nothing registered is left to delete
    host.remove_tree(_dir(where))
