"""A team on a shared cluster, on the local control plane: experiments in the team's namespace, run
through the real Pulumi engine by a team member who holds only the documented RBAC
(docs/rbac/, minted as `make cluster-user` mints one), and placement by host name."""

from __future__ import annotations

import json
import time
from collections import Counter
from typing import Any

import pytest
from kubernetes import client

from components.cli.main import main as components_main
from components.objects.loading import load_experiment
from components.plan import labels as L
from tests.cluster.conftest import TEST_CLUSTER
from tests.cluster.test_cluster import _wait_for, core, node_labels, pods_by_node
from tests.cluster.test_engine import engine
from tests.stack_variants import write_variant
from tools.localcluster.client import api_client
from tools.localcluster.experiment_pods import task_pods, wait_for_pods
from tools.localcluster.nodes import create_fake_nodes
from tools.localcluster.users import mint_user

TEAM = "ml-team"
SERVERS = [f"srv-0{i}" for i in range(5)]
POD_WAIT_S = 120.0
NODE_GONE_WAIT_S = 120.0


def _in_team_namespace(values: dict[str, Any]) -> None:
    values["tfk8s:cluster"].update(namespace={"name": TEAM, "existing": True}, placeBy="hostname",
                                   imagePullSecrets=["team-registry"])


def _by_host_name(values: dict[str, Any]) -> None:
    values["tfk8s:cluster"]["placeBy"] = "hostname"


def uids(api: client.CoreV1Api, namespace: str) -> dict[tuple[str, str], str]:
    """The team's own objects: kind and name -> uid."""
    found = {("Secret", s.metadata.name): s.metadata.uid for s in api.list_namespaced_secret(namespace).items}
    found.update({("PersistentVolumeClaim", c.metadata.name): c.metadata.uid
                  for c in api.list_namespaced_persistent_volume_claim(namespace).items})
    found.update({("ConfigMap", c.metadata.name): c.metadata.uid for c in api.list_namespaced_config_map(namespace).items
                  if c.metadata.name != "kube-root-ca.crt"})
    return found


def team_objects(admin: client.CoreV1Api) -> dict[tuple[str, str], str]:
    """What the team keeps in its namespace before any experiment: a pull Secret, a data claim, a ConfigMap."""
    meta = lambda name: {"name": name, "namespace": TEAM}  # noqa: E731
    admin.create_namespaced_secret(TEAM, {"metadata": meta("team-registry"), "type": "kubernetes.io/dockerconfigjson",
                                          "stringData": {".dockerconfigjson": '{"auths": {}}'}})
    admin.create_namespaced_persistent_volume_claim(TEAM, {"metadata": meta("training-data"), "spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})
    admin.create_namespaced_config_map(TEAM, {"metadata": meta("team-settings"), "data": {"owner": "ml-team"}})
    return uids(admin, TEAM)


def forbidden(call) -> bool:
    try:
        call()
    except client.ApiException as error:
        return error.status == 403
    return False


def test_a_team_member_with_only_the_documented_rbac_runs_two_experiments_in_the_teams_namespace(
    local_cluster, tmp_path, capsys
):
    kubeconfig = mint_user("alice", TEAM, where=TEST_CLUSTER)
    alice = client.CoreV1Api(api_client(kubeconfig))
    admin = core(local_cluster)
    team = team_objects(admin)
    stacks = {name: write_variant(tmp_path, "scene1-case1", name, _in_team_namespace)
              for name in ("ranking-a", "ranking-b")}
    state = tmp_path / "engine"
    labels_before = node_labels(local_cluster, SERVERS[:1])
    try:
        for name, stack in stacks.items():
            up = engine("up", stack, kubeconfig, state)
            assert not up.failed, up.tail
            assert f"namespace {TEAM} enforces no Pod Security level" in up.text
            wait_for_pods(local_cluster.api, load_experiment(stack), POD_WAIT_S)
        assert node_labels(local_cluster, SERVERS[:1]) == labels_before, "placeBy: hostname writes no label"
        b_pods = {p.metadata.name: p.metadata.uid for p in task_pods(admin, load_experiment(stacks["ranking-b"]))}
        assert len(b_pods) == 1 + 10

        destroy = engine("destroy", stacks["ranking-a"], kubeconfig, state)
        assert not destroy.failed, destroy.tail
        assert not task_pods(admin, load_experiment(stacks["ranking-a"]))
        assert not [c.metadata.name for c in admin.list_namespaced_config_map(TEAM).items
                    if c.metadata.name.startswith("ranking-a-")]
        # The other experiment, the team's objects and the namespace are as they were.
        assert {p.metadata.name: p.metadata.uid for p in task_pods(admin, load_experiment(stacks["ranking-b"]))} == b_pods
        assert {key: uid for key, uid in uids(admin, TEAM).items() if not key[1].startswith("ranking-b-")} == team
        assert admin.read_namespace(TEAM).status.phase == "Active"

        # status as Alice: the experiment in full, and the Nodes it may not read named, not an error.
        code = components_main(["status", stacks["ranking-b"], "--kubeconfig", str(kubeconfig), "--json"])
        seen = json.loads(capsys.readouterr().out)
        assert (code, seen["phase"], len(seen["tasks"])) == (0, "Running", 1 + 1 + 10)  # chief, PS, workers
        assert [line.split(" (")[0] for line in seen["notRead"]] == ["not read: Nodes"]

        # Alice could not have created a namespace, nor read another team's.
        assert forbidden(lambda: alice.create_namespace({"metadata": {"name": "alice-own"}}))
        assert forbidden(lambda: alice.list_namespaced_pod("default"))
        assert forbidden(lambda: alice.list_namespaced_secret("kube-system"))
    finally:
        for stack in stacks.values():
            engine("destroy", stack, kubeconfig, state)


def test_preview_in_the_teams_namespace_refuses_a_secret_it_lacks(local_cluster, tmp_path):
    kubeconfig = mint_user("carol", TEAM, where=TEST_CLUSTER)

    def missing_secret(values):
        _in_team_namespace(values)
        values["tfk8s:cluster"]["imagePullSecrets"] = ["no-such-secret"]

    stack = write_variant(tmp_path, "scene1-case1", "ranking-c", missing_secret)
    preview = engine("preview", stack, kubeconfig, tmp_path / "engine")
    assert preview.failed
    assert ("tfk8s:cluster.imagePullSecrets: Secret 'no-such-secret' does not exist in namespace 'ml-team'; "
            "create it there before pulumi up") in preview.text


def test_the_node_labeller_role_is_all_a_labelling_stack_needs(local_cluster, tmp_path):
    kubeconfig = mint_user("bob", "bob-team", label_nodes=True, where=TEST_CLUSTER)

    def labelled(values):
        values["tfk8s:cluster"]["namespace"] = {"name": "bob-team", "existing": True}

    stack = write_variant(tmp_path, "scene1-case1", "bob-exp", labelled)
    state = tmp_path / "engine"
    try:
        up = engine("up", stack, kubeconfig, state)
        assert not up.failed, up.tail
        labels = node_labels(local_cluster, ["srv-00"])["srv-00"]
        assert labels[L.node_pool_key("bob-exp")] == "servers"
    finally:
        destroy = engine("destroy", stack, kubeconfig, state)
    assert not destroy.failed, destroy.tail
    assert L.node_pool_key("bob-exp") not in node_labels(local_cluster, ["srv-00"])["srv-00"]


def test_placed_by_host_name_each_server_holds_its_share_and_a_lost_servers_share_waits(local_cluster, tmp_path):
    stack = write_variant(tmp_path, "scene1-case2", "scene1-host", _by_host_name)
    before = node_labels(local_cluster, SERVERS)
    local_cluster.apply(stack, tmp_path / "out")
    try:
        assert pods_by_node(local_cluster, stack) == {server: Counter({"worker": 10, "ps": 1}) for server in SERVERS}
        assert node_labels(local_cluster, SERVERS) == before, "no node label is written"
        core(local_cluster).delete_node("srv-03")
        # The lost PS restarts the experiment; then every other server holds its share again and srv-03's
        # share waits (Pending, on no node). At no time does a server hold a task more than its share.
        share = Counter({"ps": 1, "worker": 10})
        expected = {**{server: share for server in SERVERS if server != "srv-03"}, None: share}
        deadline = time.monotonic() + NODE_GONE_WAIT_S
        while (placed := pods_by_node(local_cluster, stack)) != expected:
            over = {server: counts for server, counts in placed.items()
                    if server is not None and (counts["ps"] > 1 or counts["worker"] > 10)}
            assert not over, f"servers past their share: {over}"
            assert time.monotonic() < deadline, f"srv-03's share not Pending within {NODE_GONE_WAIT_S:.0f} s: {placed}"
            time.sleep(1.0)
    finally:
        create_fake_nodes(local_cluster.api, [load_experiment("scene1-case2").config])
        local_cluster.delete(stack, tmp_path / "out")


@pytest.fixture(autouse=True)
def _team_namespace_kept_apart():
    """Each test's experiments go; the team's namespace and what the test put there go with the test."""
    yield
    admin = client.CoreV1Api(api_client(TEST_CLUSTER.kubeconfig))
    for namespace in (TEAM, "bob-team"):
        try:
            admin.delete_namespace(namespace)
        except client.ApiException as error:
            if error.status != 404:
                raise
    _wait_for(lambda: not [n for n in admin.list_namespace().items if n.metadata.name in (TEAM, "bob-team")],
              120.0, "the team namespaces gone")

