"""tfk8s's objects on a real control plane: admission, scheduling, controllers, label cleanup.

The nodes are kwok's (no kubelet, no containers); everything else is the real
kube-apiserver, kube-scheduler and kube-controller-manager.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections import Counter, defaultdict

import pytest
from kubernetes import client
from kubernetes.dynamic import DynamicClient

from components.cli.main import main as components_main
from components.live.status import read_jobset
from components.objects.loading import load_experiment
from components.plan import labels as L
from tests.cluster.conftest import POD_WAIT_S
from tests.stack_variants import write_variant
from tools.localcluster import paths
from tools.localcluster.experiments import ApplyError, apply_manifest, apply_manifests, delete_manifests
from tools.localcluster.experiment_pods import task_pods, wait_for_pods
from tools.localcluster.nodes import create_fake_nodes

NODE_GONE_WAIT_S = 150.0
ENDPOINTS_WAIT_S = 120.0  # a bound, not a wait: beside the program stage (CI) the controllers run slower


def core(cluster) -> client.CoreV1Api:
    return client.CoreV1Api(cluster.api)


def pods_by_node(cluster, stack: str) -> dict[str, Counter]:
    """Node -> count of PS and workers of the stack, read back from the API server."""
    table: dict[str, Counter] = defaultdict(Counter)
    for pod in task_pods(core(cluster), load_experiment(stack)):
        table[pod.spec.node_name][pod.metadata.labels[L.COMPONENT]] += 1
    return table


def published_names(cluster, namespace: str) -> dict[str, str]:
    """`<host name>.<Service>.<namespace>.svc:2222` -> pod, as the EndpointSlices list them (what DNS serves)."""
    slices = client.DiscoveryV1Api(cluster.api).list_namespaced_endpoint_slice(namespace).items
    return {
        f"{endpoint.hostname}.{slice_.metadata.labels['kubernetes.io/service-name']}.{namespace}.svc:2222":
            endpoint.target_ref.name
        for slice_ in slices
        for endpoint in slice_.endpoints or ()
        if endpoint.hostname
    }


def node_labels(cluster, names) -> dict[str, dict[str, str]]:
    nodes = {n.metadata.name: n for n in core(cluster).list_node().items}
    return {name: dict(nodes[name].metadata.labels) for name in names}


def read_back(cluster, manifest):
    dynamic = DynamicClient(cluster.api)
    resource = dynamic.resources.get(api_version=manifest["apiVersion"], kind=manifest["kind"])
    metadata = manifest["metadata"]
    return dynamic.get(resource, name=metadata["name"], namespace=metadata.get("namespace"))


def written_version(obj) -> tuple:
    """What changes when someone writes the object: its resourceVersion; for the JobSet and the
    nodes, whose status their controller and kwok's heartbeats keep updating (a node's changed
    between two applies in a CI run), its generation and the time of each manager's last apply."""
    if obj.kind not in ("JobSet", "Node"):
        return (obj.metadata.resourceVersion,)
    writes = sorted((f.manager, f.time) for f in obj.metadata.managedFields if f.operation == "Apply")
    return (obj.metadata.generation, tuple(writes))


def jobset_not_ready(cluster, stack: str) -> list[str]:
    """What keeps the experiment's JobSet from ready: each Job short of ready pods, and each
    replicated Job the JobSet's status does not count ready; empty once all are."""
    experiment = load_experiment(stack)
    jobs = client.BatchV1Api(cluster.api).list_namespaced_job(experiment.namespace).items
    jobset = read_jobset(cluster.api, experiment)
    replicated = {r["name"]: r for r in (jobset.get("status") or {}).get("replicatedJobsStatus") or []}
    waiting = [] if jobs else ["no Job yet"]
    waiting += [
        f"Job {job.metadata.name}: {job.status.ready or 0}/{job.spec.parallelism} pods ready"
        for job in jobs
        if (job.status.ready or 0) != job.spec.parallelism
    ]
    waiting += [
        f"JobSet status of {spec['name']}: {replicated.get(spec['name'], {}).get('ready', 0)} ready"
        for spec in jobset["spec"]["replicatedJobs"]
        if replicated.get(spec["name"], {}).get("ready") != 1
    ]
    return waiting


def status_of(stack: str, cluster, capsys) -> tuple[int, str]:
    code = components_main(["status", stack, "--kubeconfig", str(cluster.kubeconfig)])
    return code, capsys.readouterr().out


def test_scene1_case2_admitted_placed_and_removed(local_cluster, tmp_path, capsys):
    servers = [f"srv-0{i}" for i in range(5)]
    labels_before = node_labels(local_cluster, servers)
    manifests = local_cluster.apply("scene1-case2", tmp_path)

    # Every object was admitted and reads back, the namespace enforcing `restricted`.
    for manifest in manifests:
        assert read_back(local_cluster, manifest).metadata.name == manifest["metadata"]["name"]
    namespace = core(local_cluster).read_namespace("tf-scene1-case2")
    assert namespace.metadata.labels["pod-security.kubernetes.io/enforce"] == "restricted"

    # The real scheduler put exactly 10 workers and 1 PS on each server.
    assert pods_by_node(local_cluster, "scene1-case2") == {
        server: Counter({"worker": 10, "ps": 1}) for server in servers
    }
    chief = core(local_cluster).list_namespaced_pod(
        "tf-scene1-case2", label_selector=f"{L.COMPONENT}=chief"
    ).items
    assert len(chief) == 1 and chief[0].spec.node_name in servers

    # Every address in TF_CONFIG is the DNS name of the one pod that runs that task: the
    # EndpointSlice controller published `<host name>.tf` for each pod of the JobSet (what cluster
    # DNS serves), and the pod's group and completion index, from which its trainer composes
    # TF_CONFIG's task index, are that task's.
    experiment = load_experiment("scene1-case2")
    cluster = experiment.tf_config.cluster
    expected = {address for addresses in cluster.values() for address in addresses}
    deadline = time.monotonic() + ENDPOINTS_WAIT_S
    while not expected <= set(published := published_names(local_cluster, "tf-scene1-case2")):
        assert time.monotonic() < deadline, f"not published: {sorted(expected - set(published))}"
        time.sleep(0.5)
    assert len(expected) == len(published) == 56
    first_index = {group.name: group.first_index for group in experiment.groups}
    by_name = {pod.metadata.name: pod for pod in core(local_cluster).list_namespaced_pod("tf-scene1-case2").items}
    for role, addresses in cluster.items():
        for index, address in enumerate(addresses):
            pod = by_name[published[address]]
            labels = pod.metadata.labels
            assert labels[L.COMPONENT] == role
            (container,) = pod.spec.containers
            env = {e.name: e.value for e in container.env}
            assert env["TFK8S_TASK_TYPE"] == role
            assert int(env["TFK8S_FIRST_INDEX"]) == first_index[labels[L.WORKLOAD]]
            assert int(env["TFK8S_FIRST_INDEX"]) + int(labels["batch.kubernetes.io/job-completion-index"]) == index
    service = core(local_cluster).read_namespaced_service("tf", "tf-scene1-case2")
    assert service.spec.cluster_ip == "None" and service.spec.publish_not_ready_addresses is True

    # tfk8s's labels went on under the experiment's field manager.
    for name, labels in node_labels(local_cluster, servers).items():
        assert labels[L.node_pool_key("scene1-case2")] == "servers" and labels[L.node_role_key("scene1-case2")] == "mixed"
        assert {k: v for k, v in labels.items() if k in labels_before[name]} == labels_before[name]

    code, table = status_of("scene1-case2", local_cluster, capsys)
    assert code == 0, table
    assert "56/56 tasks running as planned · 0 pending" in table.splitlines()[0]
    assert table.splitlines()[1] == "phase: Running"
    assert components_main(["status", "scene1-case2", "--kubeconfig", str(local_cluster.kubeconfig), "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["phase"] == "Running"
    assert status["asPlanned"] is True and len(status["tasks"]) == 56
    # Each server against its share, and which task indexes the scheduler put there.
    servers = status["servers"]
    assert set(servers) == set(servers_planned := experiment.plan.per_server())
    for server, row in servers.items():
        assert (row["share"], row["ps"], row["worker"]) == ({"ps": "1", "worker": "10"}, 1, 10)
        on_server = {t["task"] for t in status["tasks"] if t["node"] == server}
        assert set(row["tasks"]) == on_server and len(on_server - {"chief-0"}) == 11
    assert servers_planned["srv-00"] == {"ps": 1, "worker": 10}
    code, table = status_of("scene1-case2", local_cluster, capsys)
    assert any(line.split()[:3] == ["srv-00", "1/1", "10/10"] for line in table.splitlines()), table

    local_cluster.delete("scene1-case2", tmp_path)
    with pytest.raises(client.ApiException) as gone:
        core(local_cluster).read_namespace("tf-scene1-case2")
    assert gone.value.status == 404
    # Exactly tfk8s's labels are gone; the servers' own labels stay.
    assert node_labels(local_cluster, servers) == labels_before


def test_scene2_case2_ps_and_worker_servers_are_disjoint(local_cluster, tmp_path):
    local_cluster.apply("scene2-case2", tmp_path)
    try:
        table = pods_by_node(local_cluster, "scene2-case2")
        ps_servers = {node for node, count in table.items() if count["ps"]}
        worker_servers = {node for node, count in table.items() if count["worker"]}
        assert ps_servers == {f"ps-srv-0{i}" for i in range(5)}
        assert worker_servers == {f"wk-srv-0{i}" for i in range(5)}
        assert all(table[node] == Counter({"worker": 10}) for node in worker_servers)
        assert all(table[node] == Counter({"ps": 1}) for node in ps_servers)
    finally:
        local_cluster.delete("scene2-case2", tmp_path)


def test_gpu_workers_land_on_gpu_servers_within_capacity(local_cluster, tmp_path):
    local_cluster.apply("gpu-p40", tmp_path)
    try:
        nodes = {n.metadata.name: n for n in core(local_cluster).list_node().items}
        gpus_used: Counter = Counter()
        for pod in task_pods(core(local_cluster), load_experiment("gpu-p40")):
            role = pod.metadata.labels[L.COMPONENT]
            (container,) = pod.spec.containers
            gpus = int((container.resources.limits or {}).get(L.GPU_RESOURCE, 0))
            node = nodes[pod.spec.node_name]
            if role == "worker":
                # Onto the servers' nvidia.com/gpu NoSchedule taint: the workers tolerate it.
                assert node.metadata.name.startswith("gpu-srv-")
                assert L.GPU_TAINT in [t.key for t in node.spec.taints]
                assert node.metadata.labels[L.TFK8S_GPU_PRODUCT] == "Tesla-P40"
                assert gpus == 1
                gpus_used[node.metadata.name] += gpus
            else:
                assert node.metadata.name.startswith("cpu-srv-") and gpus == 0
        assert sum(gpus_used.values()) == 8
        for name, used in gpus_used.items():
            assert used <= int(nodes[name].status.allocatable[L.GPU_RESOURCE])
            # GPU Feature Discovery's labels are its own still: tfk8s neither wrote nor took them.
            labels = nodes[name].metadata.labels
            assert (labels[L.GPU_PRODUCT], labels["nvidia.com/gpu.count"]) == ("Tesla-P40", "4")
            owners = [f.manager for f in nodes[name].metadata.managed_fields
                      if "f:nvidia.com/gpu.product" in str(f.fields_v1)]
            assert owners == ["tfk8s-local-nodes"], owners
    finally:
        local_cluster.delete("gpu-p40", tmp_path)


def test_applying_twice_changes_nothing(local_cluster, tmp_path):
    manifests = local_cluster.apply("scene2-case2", tmp_path)
    try:
        # The controllers update the JobSet's and its Jobs' status as pods become ready: let it settle.
        # Alone this takes well under a second; beside the program stage's tests (CI) it once took
        # over 60 s, so the bound is the one pods get.
        deadline = time.monotonic() + POD_WAIT_S
        while waiting := jobset_not_ready(local_cluster, "scene2-case2"):
            assert time.monotonic() < deadline, f"the JobSet did not become ready within {POD_WAIT_S:.0f} s: {waiting}"
            time.sleep(0.5)
        versions = {m["metadata"]["name"] + m["kind"]: written_version(read_back(local_cluster, m)) for m in manifests}
        local_cluster.apply("scene2-case2", tmp_path)
        again = {m["metadata"]["name"] + m["kind"]: written_version(read_back(local_cluster, m)) for m in manifests}
        assert again == versions
        # What a user hands to kubectl: the rendered folder shows no difference either.
        diff = subprocess.run(
            [
                str(paths.binary("kubectl")),
                f"--kubeconfig={local_cluster.kubeconfig}",
                f"--cache-dir={local_cluster.kubeconfig.parent / 'kubectl-cache'}",
                "diff",
                "--server-side",
                f"--field-manager={L.field_manager('scene2-case2')}",
                "-f",
                str(tmp_path),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert (diff.returncode, diff.stdout) == (0, ""), diff.stderr
    finally:
        local_cluster.delete("scene2-case2", tmp_path)


def test_an_apply_right_after_a_delete_that_left_its_namespace_terminating_waits_and_lands(local_cluster, tmp_path):
    """A delete that does not wait for the namespace's sweep (the real-pod tests' cleanup) leaves it
    Terminating: an apply into it then waits for its end instead of being refused."""
    experiment = load_experiment("gpu-p40")
    manifests = local_cluster.apply("gpu-p40", tmp_path)
    delete_manifests(local_cluster.api, experiment.stack, manifests, wait_for_namespace=False)
    said: list[str] = []
    try:
        apply_manifests(local_cluster.api, experiment.stack, manifests, said.append)
        assert said[0] == f"waiting for namespace {experiment.namespace} to finish terminating", said
        wait_for_pods(local_cluster.api, experiment, POD_WAIT_S)
    finally:
        local_cluster.delete("gpu-p40", tmp_path)


def test_two_experiments_keep_to_their_own_namespace_and_labels(local_cluster, tmp_path):
    scene1 = [f"srv-0{i}" for i in range(5)]
    local_cluster.apply("scene1-case2", tmp_path / "a")
    scene1_labels = node_labels(local_cluster, scene1)
    local_cluster.apply("scene2-case2", tmp_path / "b")
    try:
        assert node_labels(local_cluster, scene1) == scene1_labels
        for name, labels in node_labels(local_cluster, ["ps-srv-00", "wk-srv-00"]).items():
            assert labels[L.node_pool_key("scene2-case2")] in ("ps-servers", "worker-servers")
        assert {p.metadata.namespace for p in task_pods(core(local_cluster), load_experiment("scene1-case2"))} == {"tf-scene1-case2"}
        local_cluster.delete("scene2-case2", tmp_path / "b")
        assert node_labels(local_cluster, scene1) == scene1_labels
        assert pods_by_node(local_cluster, "scene1-case2") == {s: Counter({"worker": 10, "ps": 1}) for s in scene1}
    finally:
        local_cluster.delete("scene1-case2", tmp_path / "a")


def _own_labels(labels: dict[str, str], stack: str) -> dict[str, str]:
    return {k: v for k, v in labels.items() if k in (L.node_pool_key(stack), L.node_role_key(stack), L.node_server_key(stack))}


def test_experiments_share_servers_and_each_delete_removes_only_its_own_labels(local_cluster, tmp_path):
    """scene1-case2 (srv-00..04) and scene1-case3 (srv-00..09) at once, on the same servers."""
    servers = [f"srv-0{i}" for i in range(10)]
    before = node_labels(local_cluster, servers)
    local_cluster.apply("scene1-case2", tmp_path / "case2")
    try:
        local_cluster.apply("scene1-case3", tmp_path / "case3")
        try:
            # Both scheduled as planned: 1 PS and 10 workers of each on each of its servers.
            assert pods_by_node(local_cluster, "scene1-case2") == {s: Counter({"worker": 10, "ps": 1}) for s in servers[:5]}
            assert pods_by_node(local_cluster, "scene1-case3") == {s: Counter({"worker": 10, "ps": 1}) for s in servers}
            labelled = node_labels(local_cluster, servers)
            for name in servers[:5]:
                assert _own_labels(labelled[name], "scene1-case2") == {
                    "pool.tfk8s.io/scene1-case2": "servers", "role.tfk8s.io/scene1-case2": "mixed",
                    "server.tfk8s.io/scene1-case2": name}
            case3_labels = {name: _own_labels(labels, "scene1-case3") for name, labels in labelled.items()}
            assert all(labels == {"pool.tfk8s.io/scene1-case3": "servers", "role.tfk8s.io/scene1-case3": "mixed",
                                  "server.tfk8s.io/scene1-case3": name} for name, labels in case3_labels.items())
            case3_pods = {p.metadata.uid for p in task_pods(core(local_cluster), load_experiment("scene1-case3"))}

            local_cluster.delete("scene1-case2", tmp_path / "case2")
            after = node_labels(local_cluster, servers)
            assert all(not _own_labels(labels, "scene1-case2") for labels in after.values())
            assert {name: _own_labels(labels, "scene1-case3") for name, labels in after.items()} == case3_labels
            # scene1-case3's pods are the same pods, still where the plan put them.
            assert {p.metadata.uid for p in task_pods(core(local_cluster), load_experiment("scene1-case3"))} == case3_pods
            assert pods_by_node(local_cluster, "scene1-case3") == {s: Counter({"worker": 10, "ps": 1}) for s in servers}
        finally:
            local_cluster.delete("scene1-case3", tmp_path / "case3")
    finally:
        local_cluster.delete("scene1-case2", tmp_path / "case2")
    assert node_labels(local_cluster, servers) == before


def test_the_api_server_refuses_a_privileged_pod_in_the_namespace(local_cluster, tmp_path):
    local_cluster.apply("scene2-case2", tmp_path, wait=False)
    try:
        privileged = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "privileged", "namespace": "tf-scene2-case2"},
            "spec": {
                "containers": [
                    {"name": "c", "image": "tensorflow/tensorflow:2.21.0", "securityContext": {"privileged": True}}
                ]
            },
        }
        with pytest.raises(ApplyError) as refused:
            apply_manifest(DynamicClient(local_cluster.api), privileged, L.field_manager("scene2-case2"))
        message = str(refused.value)
        assert 'violates PodSecurity "restricted:latest"' in message
        assert "privileged" in message
        print(message)
    finally:
        local_cluster.delete("scene2-case2", tmp_path)


def _wait_for(check, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        result = check()
        if result:
            return result
        time.sleep(1.0)
    raise AssertionError(f"not within {timeout_s:.0f} s: {what}")


def test_losing_a_server_strands_strict_tasks_and_moves_preferred_ones(
    local_cluster, loose_stack, tmp_path, capsys
):
    strict, loose = "scene1-case2", loose_stack
    local_cluster.apply(strict, tmp_path / "strict")
    local_cluster.apply(loose, tmp_path / "loose")
    lost = ["srv-03", "loose-srv-03"]
    try:
        for name in lost:
            core(local_cluster).delete_node(name)
        share = load_experiment(strict).plan.per_server()["srv-03"]  # 1 PS, 10 workers

        def strict_stranded():
            # The lost PS restarted the experiment (JobSet); once again running, exactly srv-03's share waits,
            # and no other server took one task more than its own.
            code, table = status_of(strict, local_cluster, capsys)
            pending = [line for line in table.splitlines() if " Pending " in line]
            rest_running = f"{56 - 11}/56 tasks running as planned" in table.splitlines()[0]
            placed = pods_by_node(local_cluster, strict)
            return (code, table, pending, placed) if len(pending) == 11 and rest_running else None

        def loose_moved():
            table = pods_by_node(local_cluster, loose)
            running = sum(1 for p in task_pods(core(local_cluster), load_experiment(loose)) if p.status.phase == "Running")
            return table if "loose-srv-03" not in table and running == 55 else None

        code, table, pending, placed = _wait_for(strict_stranded, NODE_GONE_WAIT_S, "srv-03's share Pending")
        assert code == 1
        # The chief is not pinned: only srv-03's share of PS and workers is stranded.
        assert Counter(line.split()[1].rsplit("-", 1)[0] for line in pending) == Counter(share)
        assert all("didn't match pod topology spread constraints" in line for line in pending), table
        assert placed == {
            **{server: Counter({"ps": 1, "worker": 10}) for server in ("srv-00", "srv-01", "srv-02", "srv-04")},
            None: Counter({"ps": 1, "worker": 10}),  # Pending: on no node
        }
        print(table)

        moved = _wait_for(loose_moved, NODE_GONE_WAIT_S, "loose-srv-03's tasks rescheduled")
        assert set(moved) == {f"loose-srv-0{i}" for i in (0, 1, 2, 4)}
        assert sum(c["worker"] for c in moved.values()) == 50 and sum(c["ps"] for c in moved.values()) == 5
    finally:
        create_fake_nodes(local_cluster.api, [load_experiment(strict).config, load_experiment(loose).config])
        local_cluster.delete(strict, tmp_path / "strict")
        local_cluster.delete(loose, tmp_path / "loose")


def test_the_chief_binds_its_checkpoint_claim_to_a_pre_created_volume(local_cluster, tmp_path):
    # What an operator provides: a volume that keeps its data (Retain) when the experiment goes.
    volume = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": "checkpoints-pv"},
        "spec": {
            "capacity": {"storage": "50Gi"},
            "accessModes": ["ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": "",
            "hostPath": {"path": "/srv/tfk8s-checkpoints"},
        },
    }
    apply_manifest(DynamicClient(local_cluster.api), volume, "operator")
    local_cluster.apply("scene1-case2-durable", tmp_path)
    try:
        namespace = "tf-scene1-case2-durable"

        def bound():
            claim = core(local_cluster).read_namespaced_persistent_volume_claim("tfk8s-checkpoints", namespace)
            return claim if claim.status.phase == "Bound" else None

        claim = _wait_for(bound, 60, "the checkpoint claim Bound")
        assert claim.spec.volume_name == "checkpoints-pv"

        def chief_scheduled():
            pods = core(local_cluster).list_namespaced_pod(namespace, label_selector=f"{L.COMPONENT}=chief").items
            return pods[0] if pods and pods[0].spec.node_name else None

        chief = _wait_for(chief_scheduled, 60, "the chief scheduled")
        claims = [v.persistent_volume_claim.claim_name for v in chief.spec.volumes if v.persistent_volume_claim]
        assert claims == ["tfk8s-checkpoints"] and chief.spec.node_name.startswith("dur-srv-")
    finally:
        local_cluster.delete("scene1-case2-durable", tmp_path)
    # The claim went with the namespace; the volume, and the checkpoints on it, stay.
    released = core(local_cluster).read_persistent_volume("checkpoints-pv")
    assert released.status.phase == "Released"
    core(local_cluster).delete_persistent_volume("checkpoints-pv")


def _small_variant(cluster, name: str, **settings) -> str:
    """scene1-case2's shape on one server (srv-00), with the given tfk8s:cluster settings."""

    def edit(values: dict) -> None:
        values["tfk8s:nodePools"][0]["nodes"] = ["srv-00"]
        cluster_values = values["tfk8s:cluster"]
        cluster_values["workers"]["replicas"] = 2
        cluster_values["ps"] = {"replicas": 1, "pool": "servers"}
        for key, value in settings.items():
            if isinstance(value, dict):
                cluster_values.setdefault(key, {}).update(value)
            else:
                cluster_values[key] = value

    return write_variant(cluster.stacks_dir, "scene1-case2", name, edit)


def test_the_cluster_admits_pods_of_an_existing_priority_class_and_refuses_an_unknown_one(
    local_cluster, tmp_path, capsys
):
    scheduling = client.SchedulingV1Api(local_cluster.api)
    scheduling.create_priority_class(
        client.V1PriorityClass(metadata=client.V1ObjectMeta(name="research-low"), value=100)
    )
    known = _small_variant(local_cluster, "prio-known", priorityClass="research-low")
    unknown = _small_variant(local_cluster, "prio-unknown", priorityClass="no-such-class")
    try:
        local_cluster.apply(known, tmp_path / "known")
        try:
            pods = task_pods(core(local_cluster), load_experiment(known))
            assert len(pods) == 3 and {(p.spec.priority_class_name, p.spec.priority) for p in pods} == {("research-low", 100)}
        finally:
            local_cluster.delete(known, tmp_path / "known")

        local_cluster.apply(unknown, tmp_path / "unknown", wait=False)
        try:
            def refused() -> str:
                code, table = status_of(unknown, local_cluster, capsys)
                return table if "no PriorityClass with name no-such-class was found" in table else ""

            table = _wait_for(refused, 60, "status naming the missing PriorityClass")
            assert task_pods(core(local_cluster), load_experiment(unknown)) == []
            assert "phase: Pending" in table
        finally:
            local_cluster.delete(unknown, tmp_path / "unknown")
    finally:
        scheduling.delete_priority_class("research-low")


def test_a_chief_past_its_deadline_fails_the_experiment(local_cluster, tmp_path, capsys):
    """kwok's pods never finish: a hung chief. Its Job's activeDeadlineSeconds ends the experiment."""
    stack = _small_variant(local_cluster, "chief-deadline", chief={"activeDeadlineSeconds": 10})
    local_cluster.apply(stack, tmp_path)
    try:
        def failed() -> str:
            code, table = status_of(stack, local_cluster, capsys)
            return table if "phase: Failed" in table else ""

        table = _wait_for(failed, 90, "the experiment failing at the chief's deadline")
        assert "DeadlineExceeded" in table, table
    finally:
        local_cluster.delete(stack, tmp_path)


def test_top_on_kwok_servers_says_they_report_no_metrics(local_cluster, tmp_path, capsys):
    stack = _small_variant(local_cluster, "top-kwok")
    local_cluster.apply(stack, tmp_path)
    try:
        assert components_main(["top", stack, "--kubeconfig", str(local_cluster.kubeconfig)]) == 0
        text = capsys.readouterr().out
        assert "srv-00 reports no metrics: a kwok node (no kubelet, so no Summary API)" in text
        rows = [line.split() for line in text.splitlines() if line.startswith(("chief-", "ps-", "worker-"))]
        assert len(rows) == 4 and all(row[1] == "srv-00" and row[2:] == ["no", "metrics", "no", "metrics"] for row in rows)
        assert "0.00" not in text

        assert components_main(["top", stack, "--kubeconfig", str(local_cluster.kubeconfig), "--json"]) == 0
        view = json.loads(capsys.readouterr().out)
        assert view["phase"] == "Running"
        assert [(t["node"], t["cpu_cores"], t["memory_bytes"]) for t in view["tasks"]] == [("srv-00", None, None)] * 4
        assert view["ps_imbalance"] is None and view["progress"]["step"] is None and view["progress"]["steps"] == 1000
    finally:
        local_cluster.delete(stack, tmp_path)
