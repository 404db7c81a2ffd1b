"""Seed experiments train in real pods and survive their faults there.

Every pod has its own filesystem and network namespace, PID 1 is the trainer,
DNS names are served by CoreDNS, and a deleted pod comes back with a new IP:
the conditions `trainer.local` cannot reproduce. Each fault test checks the
timing a user would see (`kubectl delete pod` returns promptly, a replacement
rejoins, training resumes from the checkpoint).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from kubernetes import client
from kubernetes.stream import stream

from components.render import read_rendered, render
from components.stack_files import load_experiment
from tests.realpods.conftest import REAL_SERVERS, RealCluster, scaled_to_real_nodes
from tests.stack_variants import write_variant
from tools.localcluster.experiments import apply_manifests
from trainer.peers import PS_WATCH_GRACE_S

DELETE_WITHIN_S = 5.0
TRAINING_STARTS_WITHIN_S = 5.0
REJOINS_WITHIN_S = 15.0


def _colocated(cluster: RealCluster, name: str, **trainer) -> str:
    """scene1-case1's shape (PS and workers share one server), on srv-00."""
    return write_variant(cluster.stacks_dir, "scene1-case1", name, scaled_to_real_nodes("servers", "servers", trainer))


def _delete_pod(cluster: RealCluster, namespace: str, name: str) -> float:
    """`kubectl delete pod` (waits until the pod is gone); seconds it took."""
    started = time.monotonic()
    cluster.core.delete_namespaced_pod(name, namespace)
    while True:
        try:
            cluster.core.read_namespaced_pod(name, namespace)
        except client.ApiException as error:
            if error.status == 404:
                return time.monotonic() - started
            raise
        pods = [p for p in cluster.core.list_namespaced_pod(namespace).items if p.metadata.name == name]
        if pods and pods[0].metadata.deletion_timestamp is None:
            return time.monotonic() - started  # a StatefulSet already made its replacement
        if time.monotonic() - started > 60:
            pytest.fail(f"pod {name} still there 60 s after its deletion")
        time.sleep(0.1)


def _exec(cluster: RealCluster, namespace: str, pod: str, code: str) -> str:
    return stream(
        cluster.core.connect_get_namespaced_pod_exec,
        pod,
        namespace,
        command=["python", "-c", code],
        stderr=True,
        stdout=True,
        stdin=False,
        tty=False,
    )


def _serving_times(cluster: RealCluster, stack: str, role: str) -> dict[str, float]:
    namespace = load_experiment(stack).namespace
    times = {}
    for pod in cluster.pods(stack, role):
        stamp = cluster.log(namespace, pod.metadata.name).first("serving on")
        if stamp is not None:
            times[pod.metadata.name] = stamp
    return times


def test_a_seed_experiment_trains_to_completion_in_real_pods(real_cluster, tmp_path):
    stack = _colocated(real_cluster, "real-scene1", steps=400, checkpointEvery=100)
    with real_cluster.running(stack, tmp_path) as namespace:
        summary, chief = real_cluster.chief_summary(stack)
        # Checkpoints at 100..400 were written with each PS and the chief in its own pod.
        assert summary["steps"] == 400 and summary["resumed_from_step"] == 0
        assert chief.status.container_statuses[0].restart_count == 0, "the chief never crashed"
        assert summary["loss_last"] < summary["loss_first"]
        assert len(summary["rows_per_shard"]) == 2 and min(summary["rows_per_shard"]) > 0
        assert summary["row_imbalance"] <= 1.05
        assert all(size > 0 for size in summary["bytes_per_ps"])

        # The restricted pod settings, as real runc enforces them.
        ps_pod = real_cluster.pods(stack, "ps")[0].metadata.name
        probe = "import os\ntry:\n open('/probe', 'w')\nexcept OSError as e:\n print(os.getuid(), os.getgid(), e.strerror)"
        assert _exec(real_cluster, namespace, ps_pod, probe).strip() == "1000 1000 Read-only file system"


def test_training_starts_within_seconds_of_ps_that_come_up_late(real_cluster, tmp_path):
    """The chief waits for PS that are not up yet (no DNS name, no server) and is not fooled into
    counting them lost; once the last one serves, training starts without reconnect backoff."""
    stack = _colocated(real_cluster, "real-late-ps", steps=200, checkpointEvery=100)
    experiment = load_experiment(stack)
    render(experiment, tmp_path)
    manifests = read_rendered(tmp_path)
    is_ps = lambda m: m["kind"] == "StatefulSet" and m["metadata"]["name"].startswith("ps-")  # noqa: E731
    namespace = next(m for m in manifests if m["kind"] == "Namespace")
    try:
        apply_manifests(real_cluster.api, experiment.stack, [m for m in manifests if not is_ps(m)])
        real_cluster.wait_for_log(stack, "chief", "waiting")  # the chief runs, and no PS exists
        time.sleep(PS_WATCH_GRACE_S + 5)
        apply_manifests(real_cluster.api, experiment.stack, [namespace, *filter(is_ps, manifests)])
        summary, chief = real_cluster.chief_summary(stack)
        assert summary["steps"] == 200
        assert chief.status.container_statuses[0].restart_count == 0, "a PS that never served is not lost"
        last_ps_serving = max(_serving_times(real_cluster, stack, "ps").values())
        start = real_cluster.log(experiment.namespace, chief.metadata.name).events("start")[0][0]
        assert start - last_ps_serving <= TRAINING_STARTS_WITHIN_S
    finally:
        real_cluster.delete(stack, tmp_path)


def test_a_deleted_ps_pod_restarts_training_from_its_checkpoint(real_cluster, tmp_path):
    stack = _colocated(real_cluster, "real-lost-ps", steps=1600, checkpointEvery=200)
    with real_cluster.running(stack, tmp_path) as namespace:
        checkpoint = real_cluster.wait_for_event(stack, "checkpoint", step=lambda s: s is not None and s >= 200)
        ps_pod = real_cluster.pods(stack, "ps")[1].metadata.name
        assert _delete_pod(real_cluster, namespace, ps_pod) < DELETE_WITHIN_S
        failed = real_cluster.wait_for_restarted_chief_event(stack, "failed")
        assert "ps-1 (" in failed["error"] and "is unreachable" in failed["error"]
        summary, chief = real_cluster.chief_summary(stack)
        assert summary["steps"] == 1600
        assert summary["resumed_from_step"] >= checkpoint["step"], "resumed from the checkpoint, not from 0"
        assert chief.status.container_statuses[0].restart_count >= 1


def test_a_deleted_worker_pod_is_replaced_and_its_replacement_runs_steps(real_cluster, tmp_path):
    stack = _colocated(real_cluster, "real-lost-worker", steps=2400, checkpointEvery=0)
    with real_cluster.running(stack, tmp_path) as namespace:
        real_cluster.wait_for_event(stack, "worker_joined", worker=lambda w: w and w.startswith("worker-1@"))
        time.sleep(5)
        worker = next(p for p in real_cluster.pods(stack, "worker") if p.metadata.labels["apps.kubernetes.io/pod-index"] == "1")
        assert _delete_pod(real_cluster, namespace, worker.metadata.name) < DELETE_WITHIN_S
        summary, chief = real_cluster.chief_summary(stack)
        assert summary["steps"] == 2400
        worker_1 = {name: steps for name, steps in summary["steps_by_worker_process"].items() if name.startswith("worker-1@")}
        assert len(worker_1) == 2 and all(steps > 0 for steps in worker_1.values()), summary["steps_by_worker_process"]
        replacement_serving = real_cluster.log(namespace, worker.metadata.name).first("serving on")
        joined = [
            stamp
            for stamp, event in real_cluster.log(namespace, chief.metadata.name).events("worker_joined")
            if event["worker"].startswith("worker-1@")
        ]
        assert len(joined) == 2 and joined[1] - replacement_serving <= REJOINS_WITHIN_S


@pytest.fixture
def local_volume(real_cluster):
    """A StorageClass and a local PersistentVolume on srv-00, as an administrator would provide."""
    storage = client.StorageV1Api(real_cluster.api)
    folder = Path(real_cluster.kubeconfig).parent / "volumes" / "checkpoints"
    folder.mkdir(parents=True, exist_ok=True)
    storage.create_storage_class(
        {
            "metadata": {"name": "tfk8s-local"},
            "provisioner": "kubernetes.io/no-provisioner",
            "volumeBindingMode": "WaitForFirstConsumer",
            "reclaimPolicy": "Retain",
        }
    )
    real_cluster.core.create_persistent_volume(
        {
            "metadata": {"name": "checkpoints-srv-00"},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"],
                "persistentVolumeReclaimPolicy": "Retain",
                "storageClassName": "tfk8s-local",
                "local": {"path": str(folder)},
                "nodeAffinity": {
                    "required": {
                        "nodeSelectorTerms": [
                            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [REAL_SERVERS[0]]}]}
                        ]
                    }
                },
            },
        }
    )
    yield "tfk8s-local"
    real_cluster.core.delete_persistent_volume("checkpoints-srv-00")
    storage.delete_storage_class("tfk8s-local")


def test_a_replaced_chief_pod_resumes_from_its_checkpoint_volume(real_cluster, local_volume, tmp_path):
    def durable(values):
        scaled_to_real_nodes("servers", "servers", {"steps": 1600, "checkpointEvery": 200})(values)
        values["tfk8s:cluster"]["chief"]["checkpointVolume"] = {"size": "1Gi", "storageClass": local_volume}

    stack = write_variant(real_cluster.stacks_dir, "scene1-case1", "real-durable", durable)
    with real_cluster.running(stack, tmp_path) as namespace:
        checkpoint = real_cluster.wait_for_event(stack, "checkpoint", step=lambda s: s is not None and s >= 200)
        first_chief = real_cluster.pods(stack, "chief")[0].metadata.name
        assert _delete_pod(real_cluster, namespace, first_chief) < DELETE_WITHIN_S
        summary, chief = real_cluster.chief_summary(stack)
        assert chief.metadata.name != first_chief, "a new pod, not a restarted container"
        assert summary["steps"] == 1600
        assert summary["resumed_from_step"] >= checkpoint["step"]


def test_scene2_isolated_ps_and_workers_on_two_real_nodes(real_cluster, tmp_path):
    """scene2-case1's shape: the PS on srv-00, the workers on srv-01; every call crosses nodes."""
    stack = write_variant(
        real_cluster.stacks_dir,
        "scene2-case1",
        "real-scene2",
        scaled_to_real_nodes("ps-servers", "worker-servers", {"steps": 300, "checkpointEvery": 100}),
    )
    with real_cluster.running(stack, tmp_path):
        summary, _ = real_cluster.chief_summary(stack)
        assert summary["steps"] == 300 and summary["loss_last"] < summary["loss_first"]
        assert {p.spec.node_name for p in real_cluster.pods(stack, "ps")} == {REAL_SERVERS[0]}
        assert {p.spec.node_name for p in real_cluster.pods(stack, "worker")} == {REAL_SERVERS[1]}
