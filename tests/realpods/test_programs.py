"""The team's own program (`tfk8s:program`) in real pods: not tfk8s's trainer, but a program
written the way teams write theirs, shipped from the project and run in the nodes' image.

Each test checks what a user would: the experiment succeeds (or fails, naming the task), the
program's own output, the servers freed, a deleted pod gone within seconds.
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path
from typing import Any, Callable, Optional

import pytest
import yaml
from kubernetes import client

from components.cli.main import main as components_main
from tests.realpods.conftest import REAL_CLUSTER, REAL_SERVERS, UNTIL_STOPPED, RealCluster, scaled_to_real_nodes
from tests.stack_variants import write_variant
from tools.localcluster import realnodes
from tools.nodeimage.archive import ImageConfig, write_image_archive
from tools.nodeimage.program_images import build_program_image, keep_archive

PROJECT_ROOT = Path(__file__).resolve().parents[2]

TF2_SOURCE = "tests/team_programs/tf2-ps"
ENDS_WITHIN_S = 30.0
DELETE_WITHIN_S = 5.0
FAIL_WITHIN_S = 180.0


def program_stack(
    cluster: RealCluster,
    name: str,
    program: dict[str, Any],
    edit: Callable[[dict], None] = lambda c: None,
    *,
    ps: int = 2,
    workers: int = 2,
) -> str:
    """scene1-case1's shape on srv-00 (`ps` PS, `workers` workers), running `program`."""

    def to_program(values: dict[str, Any]) -> None:
        scaled_to_real_nodes("servers", "servers", {}, ps=ps, workers=workers)(values)
        del values["tfk8s:trainer"]
        values["tfk8s:program"] = program
        values["tfk8s:cluster"]["ps"]["memory"] = "1Gi"
        if program.get("done", "chief") != "chief":
            del values["tfk8s:cluster"]["chief"]  # there is no chief task
        edit(values["tfk8s:cluster"])

    return write_variant(cluster.stacks_dir, "scene1-case1", name, to_program)


def status_of(stack: str, cluster: RealCluster, capsys) -> dict:
    components_main(["status", stack, "--kubeconfig", str(cluster.kubeconfig), "--json"])
    return json.loads(capsys.readouterr().out)


def wait_for_phase(stack: str, cluster: RealCluster, capsys, phase: str, timeout_s: float) -> dict:
    deadline = time.monotonic() + timeout_s
    while (status := status_of(stack, cluster, capsys))["phase"] != phase:
        assert status["phase"] not in ("Succeeded", "Failed"), f"ended {status['phase']}: {status['phaseDetail']}"
        assert time.monotonic() < deadline, f"not {phase} within {timeout_s:.0f} s: {status['phase']} {status['phaseDetail']}"
        time.sleep(1)
    return status


def test_a_teams_tf2_parameter_server_program_runs_to_succeeded(real_cluster, tmp_path, capsys):
    program = {"source": TF2_SOURCE, "command": ["python", "train.py"], "args": ["--steps", "300"]}
    stack = program_stack(real_cluster, "real-tf2-program", program, ps=1, workers=1)
    with real_cluster.running(stack, tmp_path) as namespace:
        wait_for_phase(stack, real_cluster, capsys, "Succeeded", FAIL_WITHIN_S)
        completed = time.monotonic()
        (chief,) = real_cluster.pods(stack, "chief")
        assert chief.status.phase == "Succeeded"
        said = real_cluster.log(namespace, chief.metadata.name).lines
        line = next(text for _, text in said if text.startswith("chief: 300 steps"))
        loss = float(line.rsplit("loss ", 1)[1])
        assert loss < 0.6, f"the program's model learned nothing: {line}"
        # JobSet ends the PS and workers with the chief: the server is free again.
        while real_cluster.pods(stack, "ps") + real_cluster.pods(stack, "worker"):
            assert time.monotonic() - completed < ENDS_WITHIN_S, "PS and workers still there after the chief"
            time.sleep(0.5)


def test_a_program_that_ignores_sigterm_leaves_within_seconds_of_its_pod_deletion(real_cluster, tmp_path):
    """`sleep` sets no SIGTERM handler; as a container's first process the kernel would drop the
    signal, and the pod would wait out its 30 s grace period."""
    stack = program_stack(real_cluster, "real-sigterm", {"command": ["sleep", "3600"]})
    with real_cluster.running(stack, tmp_path) as namespace:
        pod = real_cluster.task_pod(stack, "worker", 0)
        started = time.monotonic()
        real_cluster.core.delete_namespaced_pod(pod.metadata.name, namespace)
        while True:
            try:
                current = real_cluster.core.read_namespaced_pod(pod.metadata.name, namespace)
            except client.ApiException as error:
                assert error.status == 404
                break
            statuses = current.status.container_statuses or []
            if statuses and statuses[0].state.terminated is not None:
                break
            assert time.monotonic() - started < DELETE_WITHIN_S, "the program still runs after its pod's deletion"
            time.sleep(0.1)


def test_a_program_that_exits_1_ends_failed_after_its_restarts_naming_the_task(real_cluster, tmp_path, capsys):
    failing = ["python", "-c", "import sys; print('loading the model', flush=True); "
               "sys.exit('cannot open /data/vocabulary.txt')"]
    stack = program_stack(
        real_cluster, "real-program-fails",
        {"command": ["sleep", "3600"], "roles": {"chief": {"command": failing}}},
        lambda cluster: cluster.update(chief={"cpu": "300m", "memory": "1Gi", "restarts": 1}),
    )
    with real_cluster.running(stack, tmp_path):
        status = wait_for_phase(stack, real_cluster, capsys, "Failed", FAIL_WITHIN_S)
        detail = status["phaseDetail"]
        # Its last lines, whichever of stdout and stderr reached the log first.
        assert "chief-0 exited 1: " in detail and "cannot open /data/vocabulary.txt" in detail, detail
        failed = time.monotonic()
        while real_cluster.pods(stack, "ps") + real_cluster.pods(stack, "worker"):
            assert time.monotonic() - failed < ENDS_WITHIN_S, "a failed experiment still holds its servers"
            time.sleep(0.5)


TF1_SOURCE = "tests/team_programs/tf1-between-graph"
SEED_RUN_SH = ["$(PS_HOSTS)", "$(WORKER_HOSTS)", "$(JOB_NAME)", "$(TASK_INDEX)", "$(PS_REPLICAS)", "$(WORKER_REPLICAS)"]
CPU_FIGURES_WITHIN_S = 120.0
CPU_SAMPLES = 3


def tf1_program(*extra: str) -> dict[str, Any]:
    """The seed's call: `sh ./run.sh <ps_hosts> <worker_hosts> <job> <index> <ps_n> <worker_n>`."""
    return {"source": TF1_SOURCE, "command": ["sh", "run.sh"], "args": [*SEED_RUN_SH, *extra], "done": "workers"}


def test_a_tf1_between_graph_program_started_through_run_sh_succeeds_when_every_worker_is_done(
    real_cluster, tmp_path, capsys
):
    # Two workers: the run succeeds when each of them is done.
    stack = program_stack(real_cluster, "real-tf1-program", tf1_program("--steps", "600"), ps=1)
    with real_cluster.running(stack, tmp_path) as namespace:
        assert real_cluster.pods(stack, "chief") == [], "done: workers runs no chief task"
        wait_for_phase(stack, real_cluster, capsys, "Succeeded", FAIL_WITHIN_S)
        for worker in real_cluster.pods(stack, "worker"):
            assert worker.status.phase == "Succeeded"
            said = " ".join(text for _, text in real_cluster.log(namespace, worker.metadata.name).lines)
            assert "steps to global step" in said, said[-500:]


def _ps_cpu(cluster: RealCluster, stack: str, capsys) -> Optional[list[float]]:
    assert components_main(["top", stack, "--kubeconfig", str(cluster.kubeconfig), "--json"]) == 0
    view = json.loads(capsys.readouterr().out)
    assert view["progress"] is None, "the program prints no progress line"
    # The local cluster's metrics-server serves the metrics API: top reads no kubelet through the node proxy.
    assert view["metrics_source"] == "metrics.k8s.io" and view["metrics_unreadable"] is None, view
    cpu = [task["cpu_cores"] for task in view["tasks"] if task["task"].startswith("ps-")]
    return cpu if cpu and None not in cpu else None


@pytest.mark.oversubscribed(
    "2.8 CPUs asked, 1.4 on each server (two 300m PS, two 400m workers), 8 GiB: the two programs side by"
    " side share the host's 2 cores. Each asserts a ratio between its own PS, which a share of the cores"
    " scales alike: the unpartitioned PS's peers stay idle, the partitioned PS are given alike"
)
def test_top_shows_one_hot_ps_for_an_unpartitioned_tf1_program_and_level_ps_with_a_partitioner(
    real_cluster, tmp_path, capsys
):
    """The seed's finding for the team's own model: a variable without a partitioner lives on one PS."""
    stacks = {}
    for server, partitioned in zip(REAL_SERVERS, (False, True)):
        extra = ("--steps", str(UNTIL_STOPPED), *(("--partitioned",) if partitioned else ()))

        name = f"real-tf1-{'partitioned' if partitioned else 'unpartitioned'}"
        stacks[partitioned] = program_stack(real_cluster, name, tf1_program(*extra))
        _move_to(stacks[partitioned], server)
    try:
        for stack in stacks.values():
            real_cluster.apply(stack, tmp_path / Path(stack).stem)
        for stack in stacks.values():
            real_cluster.wait_for_log(stack, "worker", "worker-0: training")
        # metrics-server's CPU rates cover its last 10 s: the first new one after training started
        # still holds the PS's start (TensorFlow's import keeps both PS busy alike).
        samples: dict[bool, list[list[float]]] = {False: [], True: []}
        seen: dict[bool, Optional[list[float]]] = {False: None, True: None}
        deadline = time.monotonic() + CPU_FIGURES_WITHIN_S + CPU_SAMPLES * 15
        while min(len(found) for found in samples.values()) < CPU_SAMPLES + 1:
            assert time.monotonic() < deadline, f"no PS CPU figures from top: {samples}"
            for partitioned, stack in stacks.items():
                cpu = _ps_cpu(real_cluster, stack, capsys)
                if cpu is not None and cpu != seen[partitioned]:
                    seen[partitioned] = cpu
                    samples[partitioned].append(cpu)
            time.sleep(3)
        components_main(["top", stacks[False], "--kubeconfig", str(real_cluster.kubeconfig)])
        unpartitioned_text = capsys.readouterr().out
    finally:
        for stack in stacks.values():
            real_cluster.delete(stack, tmp_path / Path(stack).stem)
    hot = [max(cpu) / (sum(cpu) / len(cpu)) for cpu in samples[False][1:]]
    level = [max(cpu) / (sum(cpu) / len(cpu)) for cpu in samples[True][1:]]
    assert statistics.median(hot) >= 1.5, f"unpartitioned, one PS should do most of the work: {samples[False]}"
    assert statistics.median(level) < 1.3, f"partitioned, the PS should share the work: {samples[True]}"
    # The PS top names is the one that held the table in the samples: the busiest in most of them.
    busiest = [max(range(len(cpu)), key=cpu.__getitem__) for cpu in samples[False][1:]]
    hot = statistics.mode(busiest)
    assert f"ps-{hot} does most of the PS work; the usual cause is a variable that is not partitioned" in unpartitioned_text, (
        unpartitioned_text)
    assert "CPU and memory from the metrics API (metrics.k8s.io, metrics-server)" in unpartitioned_text


def _move_to(stack_file: str, server: str) -> None:
    """Put the stack's one pool on `server` (the two runs side by side, each on its own server)."""
    path = Path(stack_file)
    document = yaml.safe_load(path.read_text())
    for pool in document["config"]["tfk8s:nodePools"]:
        pool["nodes"] = [server]
    path.write_text(yaml.safe_dump(document, sort_keys=False))


KERAS_PROGRAM = PROJECT_ROOT / "tests" / "team_programs" / "tf-keras"


def test_a_program_in_an_image_from_make_image_runs_with_its_extra_package(real_cluster, tmp_path, capsys):
    """tf-keras is not in the nodes' TensorFlow image: the program runs only in the image built with it."""
    image = build_program_image("tfk8s-keras", KERAS_PROGRAM / "requirements.txt")
    assert realnodes.import_archive(REAL_CLUSTER, image.archive, keyed=True) == list(REAL_SERVERS)
    capsys.readouterr()  # what the build said; `status --json` comes next
    stack = program_stack(
        real_cluster, "real-keras-program",
        {"source": "tests/team_programs/tf-keras", "command": ["sleep", "3600"],
         "roles": {"chief": {"command": ["python", "fit.py"]}}},
        lambda cluster: cluster.update(image=image.reference),
    )
    with real_cluster.running(stack, tmp_path) as namespace:
        wait_for_phase(stack, real_cluster, capsys, "Succeeded", FAIL_WITHIN_S)
        (chief,) = real_cluster.pods(stack, "chief")
        said = " ".join(text for _, text in real_cluster.log(namespace, chief.metadata.name).lines)
        assert "tf_keras 2.21.0: accuracy" in said, said[-500:]


def test_an_archive_built_elsewhere_is_loaded_into_every_real_node(real_cluster, tmp_path):
    """As `kind load image-archive`: a `docker save` layout archive reaches each node's containerd."""
    rootfs = tmp_path / "rootfs"
    rootfs.mkdir()
    (rootfs / "hello.txt").write_text("built elsewhere\n")
    archive = tmp_path / "elsewhere.tar"
    write_image_archive(rootfs, "registry.example.com/team/elsewhere:1.0", ImageConfig(), archive)
    kept = keep_archive(archive)
    try:
        assert realnodes.import_archive(REAL_CLUSTER, kept) == list(REAL_SERVERS)
        for server in REAL_SERVERS:
            listed = realnodes.node_images(REAL_CLUSTER, server)
            assert "registry.example.com/team/elsewhere:1.0" in listed, listed
    finally:
        kept.unlink()
