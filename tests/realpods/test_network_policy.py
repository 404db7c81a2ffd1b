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

from components.live.ready_pods import ready_pod
from components.objects.loading import load_experiment
from components.objects.manifests import namespace as experiment_namespace
from components.objects.manifests import network_policy
from components.plan import labels as L
from tests.realpods.conftest import (
    POD_WAIT_S,
    REAL_SERVERS,
    TRAIN_WAIT_S,
    UNTIL_STOPPED,
    RealCluster,
    scaled_to_real_nodes,
)
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
# Connects to each address given (an IP or a DNS name) on one port, all at once, one line each in
# the order given. A name that does not resolve says so: it is no refusal.
CONNECT = f"""import concurrent.futures, socket, sys, time
def attempt(address):
    try:
        resolved = socket.getaddrinfo(address, None, socket.AF_INET)[0][4][0]
    except OSError as error:
        return f'unresolved 0 {{address}} {{error}}'
    started = time.monotonic()
    try:
        socket.create_connection((resolved, int(sys.argv[1])), timeout={REFUSED_WITHIN_S}).close()
        return f'connected {{time.monotonic() - started:.2f}} {{address}}'
    except OSError as error:
        return f'refused {{time.monotonic() - started:.2f}} {{address}} {{type(error).__name__}} {{error}}'
with concurrent.futures.ThreadPoolExecutor(len(sys.argv) - 2) as pool:
    for line in pool.map(attempt, sys.argv[2:]):
        print(line)
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


def connect_each(
    core: client.CoreV1Api, namespace: str, name: str, addresses: list[str], port: int = TF_PORT
) -> dict[str, str]:
    """What the pod's attempts, made together, to open a connection to each address's `port` say."""
    said = stream(
        core.connect_get_namespaced_pod_exec,
        name,
        namespace,
        command=["python3", "-c", CONNECT, str(port), *addresses],
        stderr=True,
        stdout=True,
        stdin=False,
        tty=False,
    )
    lines = said.strip().splitlines()
    assert len(lines) == len(addresses), f"{name} said: {said}"
    return dict(zip(addresses, lines))


def connect(core: client.CoreV1Api, namespace: str, name: str, address: str, port: int = TF_PORT) -> str:
    """What the pod's attempt to open a connection to `address`'s port (TensorFlow's) says."""
    return connect_each(core, namespace, name, [address], port)[address]


def restricted_namespace(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": {"pod-security.kubernetes.io/enforce": "restricted"}},
    }


def delete_namespaces(core: client.CoreV1Api, *names: str) -> None:
    """Delete them and wait until they are gone, their pods with them."""
    for name in names:
        core.delete_namespace(name)
    wait_for(
        lambda: not set(names) & {n.metadata.name for n in core.list_namespace().items},
        f"namespaces {', '.join(names)} deleted",
        NAMESPACE_GONE_S,
    )


def pod_ready(live: Any) -> bool:
    """Running, with its address, and every container ready."""
    return (
        live.status.phase == "Running"
        and bool(live.status.pod_ip)
        and all(status.ready for status in live.status.container_statuses or [])
    )


def side_pod(core: client.CoreV1Api, namespace: str, stack: str, component: str) -> Any:
    """The ready pod beside the tasks (TensorBoard, the log collector), once its node's agent polices it."""
    found: list[Any] = []

    def ready_and_policed() -> bool:
        name, _ = ready_pod(core, namespace, L.side_pod_labels(stack, component))
        if name is None:
            return False
        found[:] = [core.read_namespaced_pod(name, namespace)]
        return policed(found[0].spec.node_name, found[0].status.pod_ip)

    wait_for(ready_and_policed, f"{component}'s pod ready and policed", POD_WAIT_S)
    return found[0]


def refused_in_time(said: str) -> bool:
    words = said.split()
    return words[:1] == ["refused"] and float(words[1]) <= REFUSED_WITHIN_S + 0.5


def test_only_the_experiments_pods_reach_its_port_and_not_once_the_policy_is_gone(real_cluster: RealCluster):
    stack = write_variant(
        real_cluster.stacks_dir, "scene1-case1", "netpol", scaled_to_real_nodes("servers", "servers", {})
    )
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
            return all(pod_ready(live) for live in running().values())

        wait_for(all_ready, "the four pods Ready", POD_WAIT_S)
        live = running()
        server_ip = live["server"].status.pod_ip
        wait_for(lambda: policed(server_node, server_ip), f"{server_node}'s agent policing the server", POLICY_WAIT_S)
        wait_for(
            lambda: policed(client_node, live["member"].status.pod_ip),
            f"{client_node}'s agent policing the member",
            POLICY_WAIT_S,
        )

        stranger = connect(core, home, "stranger", server_ip)
        foreign = connect(core, OTHER_NAMESPACE, "foreign", server_ip)
        member = connect(core, home, "member", server_ip)
        assert refused_in_time(stranger), f"a pod without the experiment's labels: {stranger}"
        assert refused_in_time(foreign), f"a pod labelled as the experiment's in {OTHER_NAMESPACE}: {foreign}"
        assert member.startswith("connected"), f"the experiment's pod: {member}"

        networking.delete_namespaced_network_policy(policy["metadata"]["name"], home)
        wait_for(
            lambda: not policed(server_node, server_ip), f"{server_node}'s agent letting the server be", POLICY_WAIT_S
        )
        foreign = connect(core, OTHER_NAMESPACE, "foreign", server_ip)
        assert foreign.startswith("connected"), f"without the policy, the pod of {OTHER_NAMESPACE}: {foreign}"
    finally:
        delete_namespaces(core, home, OTHER_NAMESPACE)


def test_the_agents_may_read_pods_namespaces_and_policies_and_nothing_else(real_cluster: RealCluster):
    authorization = client.AuthorizationV1Api(real_cluster.api)

    def allowed(verb: str, resource: str, group: str = "") -> bool:
        review = authorization.create_subject_access_review(
            {
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SubjectAccessReview",
                "spec": {
                    "user": network_policies.USER,
                    "groups": ["tfk8s-local-addons", "system:authenticated"],
                    "resourceAttributes": {"verb": verb, "resource": resource, "group": group},
                },
            }
        )
        return bool(review.status.allowed)

    for resource, group in (("pods", ""), ("namespaces", ""), ("networkpolicies", "networking.k8s.io")):
        assert allowed("list", resource, group) and allowed("watch", resource, group), resource
        assert not allowed("create", resource, group) and not allowed("delete", resource, group), resource
    assert not allowed("list", "secrets") and not allowed("get", "nodes") and not allowed("list", "services")


def test_a_running_experiments_every_task_is_shut_to_other_pods_by_ip_and_by_name(real_cluster: RealCluster, tmp_path):
    """scene2-case1 on the real nodes (its PS on one, its worker on the other: every call crosses
    nodes) trains with its NetworkPolicy enforced; meanwhile a pod of its namespace that is not a task, and
    a pod of another namespace, are refused by every chief, PS and worker on TensorFlow's port, by
    pod IP and by DNS name (the name in TF_CONFIG); with the policy deleted, the same attempts open.
    Then it trains to the end."""
    stack = write_variant(
        real_cluster.stacks_dir,
        "scene2-case1",
        "grpc-shut",
        scaled_to_real_nodes(
            "ps-servers", "worker-servers", {"steps": UNTIL_STOPPED, "checkpointEvery": 0}, ps=1, workers=1
        ),
    )
    experiment = load_experiment(stack)
    core, networking = real_cluster.core, client.NetworkingV1Api(real_cluster.api)
    home = experiment.namespace
    names = [address.rsplit(":", 1)[0] for addresses in experiment.tf_config.cluster.values() for address in addresses]
    outsiders = [
        pod("stranger", home, REAL_SERVERS[0], {}, "import time; time.sleep(3600)"),
        pod(
            "foreign",
            OTHER_NAMESPACE,
            REAL_SERVERS[1],
            L.experiment_selector(experiment.stack),
            "import time; time.sleep(3600)",
        ),
    ]
    core.create_namespace(restricted_namespace(OTHER_NAMESPACE))
    try:
        with real_cluster.running(stack, tmp_path):
            assert {p.spec.node_name for p in real_cluster.pods(stack, "ps")} == {REAL_SERVERS[0]}
            assert {p.spec.node_name for p in real_cluster.pods(stack, "worker")} == {REAL_SERVERS[1]}
            for manifest in outsiders:
                core.create_namespaced_pod(manifest["metadata"]["namespace"], manifest)
            wait_for(
                lambda: all(
                    core.read_namespaced_pod(m["metadata"]["name"], m["metadata"]["namespace"]).status.phase
                    == "Running"
                    for m in outsiders
                ),
                "the two outsiders running",
                POD_WAIT_S,
            )
            tasks = [p for role in ("chief", "ps", "worker") for p in real_cluster.pods(stack, role)]
            assert len(tasks) == 3 and len(names) == 3, (names, [p.metadata.name for p in tasks])
            addresses = [p.status.pod_ip for p in tasks]
            wait_for(
                lambda: all(policed(task.spec.node_name, task.status.pod_ip) for task in tasks),
                "each task's node's agent policing it",
                POLICY_WAIT_S,
            )
            # Peers reach each other: the chief trains with the PS and the worker.
            real_cluster.wait_for_log(stack, "chief", "examples/s", TRAIN_WAIT_S)

            for namespace, name in ((home, "stranger"), (OTHER_NAMESPACE, "foreign")):
                said = connect_each(core, namespace, name, addresses + names)
                opened = {address: line for address, line in said.items() if not refused_in_time(line)}
                assert opened == {}, f"{name} in {namespace} reached tasks: {opened}"

            policy = network_policy(experiment)["metadata"]["name"]
            networking.delete_namespaced_network_policy(policy, home)
            wait_for(
                lambda: not any(policed(task.spec.node_name, task.status.pod_ip) for task in tasks),
                "the agents letting the tasks be",
                POLICY_WAIT_S,
            )
            said = connect_each(core, OTHER_NAMESPACE, "foreign", addresses + names)
            closed = {address: line for address, line in said.items() if not line.startswith("connected")}
            assert closed == {}, f"without the policy, the pod of {OTHER_NAMESPACE} still could not reach: {closed}"

            real_cluster.finish(stack)
            summary, _ = real_cluster.chief_summary(stack)
            assert summary["loss_last"] < summary["loss_first"]
    finally:
        delete_namespaces(core, OTHER_NAMESPACE)
