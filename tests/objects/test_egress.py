"""tfk8s:cluster.egress: where an experiment's pods may connect, enforced by a NetworkPolicy."""

from __future__ import annotations

import copy

import pytest

from components.objects.experiment_objects import experiment_objects
from components.objects.loading import load_experiment_values
from components.plan.trainer_bundle import load_trainer_bundle
from components.spec.models import StackConfigError
from components.spec.stack_files import PROJECT_ROOT, read_stack_values

INGRESS = {
    "podSelector": {"matchLabels": {"app.kubernetes.io/instance": "scene1-case1", "app.kubernetes.io/part-of": "tfk8s"}},
    "policyTypes": ["Ingress"],
    "ingress": [
        {
            "from": [{"podSelector": {"matchLabels": {"app.kubernetes.io/instance": "scene1-case1", "app.kubernetes.io/part-of": "tfk8s"}}}],
            "ports": [{"protocol": "TCP", "port": 2222}],
        }
    ],
}


def network_policies(stack: str = "scene1-case1", **cluster) -> dict[str, dict]:
    name, values = read_stack_values(stack)
    values = copy.deepcopy(values)
    values["tfk8s:cluster"].update(cluster)
    experiment = load_experiment_values(name, values, load_trainer_bundle(PROJECT_ROOT))
    return {
        o.manifest["metadata"]["name"]: o.manifest for o in experiment_objects(experiment) if o.kind == "NetworkPolicy"
    }


def test_without_egress_every_destination_stays_open_and_the_grpc_policy_is_as_before():
    policies = network_policies()
    assert list(policies) == ["tf-grpc-from-experiment-only"]
    assert policies["tf-grpc-from-experiment-only"]["spec"] == INGRESS


def test_with_egress_the_pods_reach_each_other_dns_and_the_listed_addresses_only():
    policies = network_policies(
        egress=[{"cidr": "10.20.0.0/16", "ports": [8020, 9000]}, {"cidr": "203.0.113.7/32"}]
    )
    assert policies["tf-grpc-from-experiment-only"]["spec"] == INGRESS
    egress = policies["tf-egress-to-listed-only"]
    assert egress["metadata"]["namespace"] == "tf-scene1-case1"
    assert egress["spec"] == {
        "podSelector": {"matchLabels": {"app.kubernetes.io/instance": "scene1-case1", "app.kubernetes.io/part-of": "tfk8s"}},
        "policyTypes": ["Egress"],
        "egress": [
            {"to": [{"podSelector": {"matchLabels": {"app.kubernetes.io/instance": "scene1-case1", "app.kubernetes.io/part-of": "tfk8s"}}}]},
            {
                "to": [{
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
                    "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
                }],
                "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}],
            },
            {"to": [{"ipBlock": {"cidr": "10.20.0.0/16"}}], "ports": [
                {"protocol": "TCP", "port": 8020}, {"protocol": "TCP", "port": 9000}]},
            {"to": [{"ipBlock": {"cidr": "203.0.113.7/32"}}], "ports": [{"protocol": "TCP"}]},
        ],
    }


def test_an_empty_list_leaves_only_the_peers_and_dns():
    (egress,) = [p for name, p in network_policies(egress=[]).items() if name == "tf-egress-to-listed-only"]
    assert [list(rule["to"][0]) for rule in egress["spec"]["egress"]] == [
        ["podSelector"], ["namespaceSelector", "podSelector"]]


def test_a_rule_keeps_to_its_protocol_and_a_netmask_is_read_as_its_prefix():
    egress = network_policies(egress=[{"cidr": "10.0.0.0/255.0.0.0", "protocol": "UDP"}])["tf-egress-to-listed-only"]
    assert egress["spec"]["egress"][-1] == {"to": [{"ipBlock": {"cidr": "10.0.0.0/8"}}], "ports": [{"protocol": "UDP"}]}


def test_in_a_teams_namespace_the_policy_is_named_after_the_stack():
    policies = network_policies(namespace={"name": "team-a", "existing": True}, egress=[{"cidr": "10.0.0.0/8"}])
    assert sorted(policies) == ["scene1-case1-tf-egress-to-listed-only", "scene1-case1-tf-grpc-from-experiment-only"]


@pytest.mark.parametrize("egress, said", [
    ([{"cidr": "10.0.0.1/8"}], r"egress\[0\]\.cidr: '10\.0\.0\.1/8' is not a CIDR such as 10\.20\.0\.0/16 \(10\.0\.0\.1/8 has host bits set\)"),
    ([{"cidr": "10.0.0.1"}], r"egress\[0\]\.cidr: '10\.0\.0\.1' has no prefix length: write 10\.0\.0\.1/32"),
    ([{"cidr": "10.0.0.0/8", "ports": [0]}], r"egress\[0\]\.ports\[0\]: Input should be greater than or equal to 1"),
    ([{"cidr": "10.0.0.0/8", "protocol": "ICMP"}], r"egress\[0\]\.protocol: Input should be 'TCP', 'UDP' or 'SCTP'"),
    ([{"cidr": "10.0.0.0/8", "port": 443}], r"egress\[0\]\.port: unknown key \(did you mean .ports.\?\); allowed: cidr, ports, protocol"),
    ("10.0.0.0/8", r"tfk8s:cluster\.egress: should be a list \(got .10\.0\.0\.0/8.\)"),
])
def test_a_bad_rule_is_refused_naming_its_field(egress, said):
    with pytest.raises(StackConfigError, match=said):
        network_policies(egress=egress)
