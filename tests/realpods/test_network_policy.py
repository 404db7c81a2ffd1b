"""NetworkPolicy is enforced between real pods (tools/localcluster/network_policies.py).

An experiment's own NetworkPolicy (only its pods may reach TensorFlow's port) in its namespace, a
server listening on that port there, and three clients: a pod labelled as the experiment's pods
are, one without those labels in the same namespace, and one labelled the same in another
namespace. The two others are refused within 3 s, the experiment's pod connects; once the policy
is deleted the pod of the other namespace connects too, so the refusals were the policy's. The
pods sit on both nodes, so both agents decide: the server's node's for what reaches it, the
clients' nodes' for what leaves them.

Nothing races a sleep: the test waits for the pods to run, the server to be ready, and for each
agent to hold the server's address in its table's set (it polices the pods a policy selects there)
before it connects; after the deletion, for the address to leave the set.
"""

from __future__ import annotations

import ipaddress
import time
from typing import Any, Callable

import pytest
from kubernetes import client
from kubernetes.stream import stream

from components.objects.loading import load_experiment
from components.objects.manifests import namespace as experiment_namespace
from components.objects.manifests import network_policy
from components.plan import labels as L
from tests.realpods.conftest import POD_WAIT_S, REAL_SERVERS, RealCluster, scaled_to_real_nodes
from tests.stack_variants import write_variant
from tools.localcluster import netfilter, network_policies
from tools.nodeimage.images import tensorflow_image
from trainer.shared_names import TF_PORT

REFUSED_WITHIN_S = 3.0
POLICY_WAIT_S = 30.0
NAMESPACE_GONE_S = 120.0
# The set in which upstream's agent keeps the IPv4 addresses of its node's pods that a policy selects.
POLICED_PODS_SET = "podips-v4"
OTHER_NAMESPACE = "netpol-elsewhere"
SERVE = f"import socket\ns = socket.create_server(('', {TF_PORT}))\nwhile True:\n    s.accept()[0].close()\n"
CONNECT = f"""import socket, sys, time
started = time.monotonic()
try:
    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout={REFUSED_WITHIN_S}).close()
    print('connected', time.monotonic() - started)
except OSError as error:
    print('refused', time.monotonic() - started, type(error).__name__, error)
"""


def pod(name: str, namespace: str, node: str, labels: dict[str, str], script: str, serves: bool = False) -> dict:
    """A pod of the nodes' image running a Python script, as Pod Security's `restricted` level wants it."""
    container: dict[str, Any] = {
        "name": "main",
        "image": tensorflow_image().reference,
        "command": ["python3", "-c", script],
        "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "128Mi"}},
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
    }
    if serves:  # kubelet probes from the host, which the agents let through (upstream: root's traffic)
        container["readinessProbe"] = {"tcpSocket": {"port": TF_PORT}, "periodSeconds": 1}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "nodeName": node,
            "terminationGracePeriodSeconds": 1,
            "securityContext": {
                "runAsNonRoot": True,
                "runAsUser": 1000,
                "runAsGroup": 1000,
                "seccompProfile": {"type": "RuntimeDefault"},
            },
            "containers": [container],
        },
    }


def wait_for(check: Callable[[], bool], what: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    pytest.fail(f"{what} not within {timeout_s:.0f} s")


def policed(node: str, address: str) -> bool:
    """`node`'s agent sends new connections to or from the pod at `address` to its queue."""
    try:
        keys = netfilter.set_elements(network_policies.table(node), POLICED_PODS_SET)
    except netfilter.NetfilterError:
        return False  # the agent is replacing its table
    return ipaddress.ip_address(address).packed in keys


def connect(core: client.CoreV1Api, namespace: str, name: str, address: str, port: int = TF_PORT) -> str:
    """What the pod's attempt to open a connection to `address`'s port (TensorFlow's) says."""
    said = stream(
        core.connect_get_namespaced_pod_exec, name, namespace,
        command=["python3", "-c", CONNECT, address, str(port)], stderr=True, stdout=True, stdin=False, tty=False,
    )
    return said.strip()


def restricted_namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {
        "name": name, "labels": {"pod-security.kubernetes.io/enforce": "restricted"}}}


def delete_namespaces(core: client.CoreV1Api, *names: str) -> None:
    """Delete them and wait until they are gone, their pods with them."""
    for name in names:
        core.delete_namespace(name)
    wait_for(lambda: not set(names) & {n.metadata.name for n in core.list_namespace().items},
             f"namespaces {', '.join(names)} deleted", NAMESPACE_GONE_S)


def refused_in_time(said: str) -> bool:
    words = said.split()
    return words[:1] == ["refused"] and float(words[1]) <= REFUSED_WITHIN_S + 0.5


def test_only_the_experiments_pods_reach_its_port_and_not_once_the_policy_is_gone(real_cluster: RealCluster):
    stack = write_variant(real_cluster.stacks_dir, "scene1-case1", "netpol",
                          scaled_to_real_nodes("servers", "servers", {}))
    experiment = load_experiment(stack)
    core, networking = real_cluster.core, client.NetworkingV1Api(real_cluster.api)
    home, members = experiment.namespace, L.experiment_selector(experiment.stack)
    server_node, client_node = REAL_SERVERS
    policy = network_policy(experiment)
    pods = [
        pod("server", home, server_node, members, SERVE, serves=True),
        pod("member", home, client_node, members, "import time; time.sleep(3600)"),
        pod("stranger", home, server_node, {}, "import time; time.sleep(3600)"),
        pod("foreign", OTHER_NAMESPACE, client_node, members, "import time; time.sleep(3600)"),
    ]
    core.create_namespace(experiment_namespace(experiment))
    core.create_namespace(restricted_namespace(OTHER_NAMESPACE))
    try:
        networking.create_namespaced_network_policy(home, policy)
        for manifest in pods:
            core.create_namespaced_pod(manifest["metadata"]["namespace"], manifest)

        def running() -> dict[str, Any]:
            found = {}
            for manifest in pods:
                live = core.read_namespaced_pod(manifest["metadata"]["name"], manifest["metadata"]["namespace"])
                found[live.metadata.name] = live
            return found

        def all_ready() -> bool:
            return all(
                live.status.phase == "Running" and live.status.pod_ip
                and all(status.ready for status in live.status.container_statuses or [])
                for live in running().values()
            )

        wait_for(all_ready, "the four pods Ready", POD_WAIT_S)
        live = running()
        server_ip = live["server"].status.pod_ip
        wait_for(lambda: policed(server_node, server_ip), f"{server_node}'s agent policing the server", POLICY_WAIT_S)
        wait_for(lambda: policed(client_node, live["member"].status.pod_ip),
                 f"{client_node}'s agent policing the member", POLICY_WAIT_S)

        stranger = connect(core, home, "stranger", server_ip)
        foreign = connect(core, OTHER_NAMESPACE, "foreign", server_ip)
        member = connect(core, home, "member", server_ip)
        assert refused_in_time(stranger), f"a pod without the experiment's labels: {stranger}"
        assert refused_in_time(foreign), f"a pod labelled as the experiment's in {OTHER_NAMESPACE}: {foreign}"
        assert member.startswith("connected"), f"the experiment's pod: {member}"

        networking.delete_namespaced_network_policy(policy["metadata"]["name"], home)
        wait_for(lambda: not policed(server_node, server_ip), f"{server_node}'s agent letting the server be",
                 POLICY_WAIT_S)
        foreign = connect(core, OTHER_NAMESPACE, "foreign", server_ip)
        assert foreign.startswith("connected"), f"without the policy, the pod of {OTHER_NAMESPACE}: {foreign}"
    finally:
        delete_namespaces(core, home, OTHER_NAMESPACE)


def test_the_agents_may_read_pods_namespaces_and_policies_and_nothing_else(real_cluster: RealCluster):
    authorization = client.AuthorizationV1Api(real_cluster.api)

    def allowed(verb: str, resource: str, group: str = "") -> bool:
        review = authorization.create_subject_access_review({
            "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {"user": network_policies.USER, "groups": ["tfk8s-local-addons", "system:authenticated"],
                     "resourceAttributes": {"verb": verb, "resource": resource, "group": group}},
        })
        return bool(review.status.allowed)

    for resource, group in (("pods", ""), ("namespaces", ""), ("networkpolicies", "networking.k8s.io")):
        assert allowed("list", resource, group) and allowed("watch", resource, group), resource
        assert not allowed("create", resource, group) and not allowed("delete", resource, group), resource
    assert not allowed("list", "secrets") and not allowed("get", "nodes") and not allowed("list", "services")
