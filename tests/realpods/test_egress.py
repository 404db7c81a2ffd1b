"""tfk8s:cluster.egress enforced between real pods: an experiment's task reaches its peer and
nothing unlisted; once listed, the same address opens, so the refusal was the policy's.

The pods are the experiment's as its NetworkPolicies see them (its labels, its namespace): a peer
serving TensorFlow's port, a task that connects, and a server in another namespace, the address
outside the list. (Traffic to the host, where this cluster's DNS runs, does not pass the agents'
hook: the test's addresses are pods'.) Every wait is for an event: the pods Ready, the agents
policing the task, a connection's outcome.
"""

from __future__ import annotations

import time
from typing import Any

from kubernetes import client

from components.objects.loading import load_experiment
from components.objects.manifests import egress_policy, network_policy
from components.objects.manifests import namespace as experiment_namespace
from components.plan import labels as L
from tests.realpods.conftest import POD_WAIT_S, REAL_SERVERS, RealCluster, scaled_to_real_nodes
from tests.realpods.test_network_policy import POLICY_WAIT_S, delete_namespaces, pod, policed, refused_in_time
from tests.realpods.test_network_policy import connect as connect_from
from tests.realpods.test_network_policy import restricted_namespace, wait_for
from tests.stack_variants import write_variant
from trainer.shared_names import TF_PORT

OTHER_NAMESPACE = "egress-elsewhere"
OUTSIDE_PORT = 8080
SERVE = "import socket, sys\ns = socket.create_server(('', int(sys.argv[1])))\nwhile True:\n    s.accept()[0].close()\n"


def serving(name: str, namespace: str, node: str, labels: dict[str, str], port: int) -> dict[str, Any]:
    manifest = pod(name, namespace, node, labels, SERVE, serves=True)
    container = manifest["spec"]["containers"][0]
    container["command"] += [str(port)]
    container["readinessProbe"]["tcpSocket"]["port"] = port
    return manifest


def test_a_task_reaches_its_peers_and_the_listed_addresses_only(real_cluster: RealCluster):
    def edit(values: dict[str, Any]) -> None:
        scaled_to_real_nodes("servers", "servers", {})(values)
        values["tfk8s:cluster"]["egress"] = []

    experiment = load_experiment(write_variant(real_cluster.stacks_dir, "scene1-case1", "egress", edit))
    core, networking = real_cluster.core, client.NetworkingV1Api(real_cluster.api)
    home, members = experiment.namespace, L.experiment_selector(experiment.stack)
    peer_node, task_node = REAL_SERVERS
    egress = egress_policy(experiment)
    assert egress is not None
    pods = [
        serving("peer", home, peer_node, members, TF_PORT),
        pod("task", home, task_node, members, "import time; time.sleep(3600)"),
        serving("outside", OTHER_NAMESPACE, peer_node, {}, OUTSIDE_PORT),
    ]

    def connect(address: str, port: int) -> str:
        return connect_from(core, home, "task", address, port)

    def eventually(address: str, port: int, outcome: str) -> str:
        """The connection's outcome once the agents read the policies as they now are."""
        deadline = time.monotonic() + POLICY_WAIT_S
        said = connect(address, port)
        while not said.startswith(outcome) and time.monotonic() < deadline:
            time.sleep(0.5)
            said = connect(address, port)
        return said

    core.create_namespace(experiment_namespace(experiment))
    core.create_namespace(restricted_namespace(OTHER_NAMESPACE))
    try:
        networking.create_namespaced_network_policy(home, network_policy(experiment))
        networking.create_namespaced_network_policy(home, egress)
        for manifest in pods:
            core.create_namespaced_pod(manifest["metadata"]["namespace"], manifest)

        def live() -> dict[str, Any]:
            return {m["metadata"]["name"]: core.read_namespaced_pod(m["metadata"]["name"], m["metadata"]["namespace"])
                    for m in pods}

        wait_for(lambda: all(p.status.phase == "Running" and all(s.ready for s in p.status.container_statuses or [])
                             for p in live().values()), "the three pods Ready", POD_WAIT_S)
        addresses = {name: p.status.pod_ip for name, p in live().items()}
        wait_for(lambda: policed(task_node, addresses["task"]), f"{task_node}'s agent policing the task",
                 POLICY_WAIT_S)

        said = connect(addresses["peer"], TF_PORT)
        assert said.startswith("connected"), f"the task to its peer: {said}"
        said = connect(addresses["outside"], OUTSIDE_PORT)
        assert refused_in_time(said), f"the task to {OTHER_NAMESPACE}: {said}"

        # The stack lists that address and port, as tfk8s writes it: the same connection opens.
        def listing(values: dict[str, Any]) -> None:
            edit(values)
            values["tfk8s:cluster"]["egress"] = [{"cidr": f"{addresses['outside']}/32", "ports": [OUTSIDE_PORT]}]

        listed = egress_policy(load_experiment(write_variant(real_cluster.stacks_dir, "scene1-case1", "egress",
                                                             listing)))
        networking.replace_namespaced_network_policy(egress["metadata"]["name"], home, listed)
        said = eventually(addresses["outside"], OUTSIDE_PORT, "connected")
        assert said.startswith("connected"), f"the task to a listed address: {said}"
        said = connect(addresses["peer"], TF_PORT)
        assert said.startswith("connected"), f"the task to its peer, with a list: {said}"
    finally:
        delete_namespaces(core, home, OTHER_NAMESPACE)
