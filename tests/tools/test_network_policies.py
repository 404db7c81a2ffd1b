"""The NetworkPolicy agents' rights and settings."""

from __future__ import annotations

from pathlib import Path

from tools.localcluster import network_policies


def test_the_agents_hold_upstreams_rights_list_and_watch_pods_namespaces_and_policies():
    role, binding = network_policies.objects()
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["pods", "namespaces"], "verbs": ["list", "watch"]},
        {"apiGroups": ["networking.k8s.io"], "resources": ["networkpolicies"], "verbs": ["list", "watch"]},
    ]
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "tfk8s-network-policies"}]


def test_two_agents_in_one_network_namespace_own_a_table_and_a_queue_each_and_listen_on_loopback():
    kubeconfig = Path("/cluster/kube-network-policies/kubeconfig")
    first, second = (network_policies.arguments(kubeconfig, node, index, 10_000 + index)
                     for index, node in enumerate(("srv-00", "srv-01")))

    def flag(arguments: list[str], name: str) -> str:
        (value,) = [argument.split("=", 1)[1] for argument in arguments if argument.startswith(f"--{name}=")]
        return value

    assert flag(first, "nftables-table-name") == "tfk8s-netpol-srv-00" != flag(second, "nftables-table-name")
    assert flag(first, "nfqueue-id") == "7700" and flag(second, "nfqueue-id") == "7701"
    assert flag(first, "hostname-override") == "srv-00" and flag(second, "hostname-override") == "srv-01"
    assert flag(first, "metrics-bind-address") == "127.0.0.1:10000"
    assert flag(first, "netfilter-bug-1766-fix") == "false"
