"""A team's TFJob, imported with `import-tfjob` and applied as it is written, runs its program to
`Succeeded` on real nodes: the same image (built elsewhere, loaded as `make load-image` does), the
same command, args, working directory and environment, TF_CONFIG as TFJob gave it. The migration is
proven by running both on the same nodes, one after the other: the TFJob itself, under Kubeflow's
training operator (tools/localcluster/training_operator.py), then its import under tfk8s; then
worker-0 lost while training, on each in turn, timed as `make bench-vs-tfjob` times it
(tools/localcluster/task_loss_timing.py). Each side's pods ask 1.4 CPUs and 4 GiB, the host's 2
cores and its memory are theirs alone: two at once would ask 2.8 (tests/realpods/conftest.py
`within_the_host`)."""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Iterator

import pytest
import yaml

from components.cli import import_tfjob as importer
from components.cli.main import main as components_main
from components.objects.loading import load_experiment
from components.plan import labels as L
from tests.realpods.conftest import REAL_CLUSTER, REAL_SERVERS, TaskLog
from tests.realpods.test_programs import ENDS_WITHIN_S, FAIL_WITHIN_S, wait_for_phase
from tools.localcluster import paths, realnodes
from tools.localcluster.podlogs import KeptLogs
from tools.localcluster.task_loss_timing import DISRUPTIONS, UNTIL_STOPPED, AfterLoss, NotWithin, lose_task
from tools.localcluster.tfjob_sides import STEP_LINE, TFJOB_NAME_LABEL, KubeflowTFJob, TeamTFJob, Tfk8sExperiment
from tools.nodeimage.archive import ImageConfig, write_image_archive
from tools.nodeimage.images import tensorflow_image

PROJECT_ROOT = Path(__file__).resolve().parents[2]
TEAM_TFJOB = PROJECT_ROOT / "tests" / "team_programs" / "ctr-tfjob" / "tfjob.yaml"
TEAM_PROGRAM = PROJECT_ROOT / "tests" / "team_programs" / "tf2-ps" / "train.py"
TEAM_IMAGE = "registry.example.com/ml/ctr:2.21.0"
WORKERS_ONLY_TFJOB = PROJECT_ROOT / "tests" / "team_programs" / "tf2-mwms" / "tfjob.yaml"
WORKERS_ONLY_PROGRAM = PROJECT_ROOT / "tests" / "team_programs" / "tf2-mwms" / "train.py"
WORKERS_ONLY_IMAGE = "registry.example.com/ml/mwms:2.21.0"


@pytest.fixture(scope="module")
def team_images(real_cluster, tmp_path_factory) -> Iterator[None]:
    """The teams' images on every real node: the nodes' TensorFlow with each program at /opt/<folder>,
    as their CI would bake them. One archive holds both programs under both names (one write and one
    import of TensorFlow's 1.7 GB for the two tests, not two), imported from where it was written (no
    copy into the cache, which `make load-image` makes to import it at every later start: a test's
    image is not kept)."""
    work = tmp_path_factory.mktemp("team-images")
    rootfs = work / "rootfs"
    for program, folder in ((TEAM_PROGRAM, "ctr"), (WORKERS_ONLY_PROGRAM, "mwms")):
        (rootfs / "opt" / folder).mkdir(parents=True)
        shutil.copy(program, rootfs / "opt" / folder / program.name)
    archive = work / "team-images.tar"
    write_image_archive(
        rootfs, TEAM_IMAGE, ImageConfig(), archive, base=tensorflow_image().archive, also_tagged=(WORKERS_ONLY_IMAGE,)
    )
    try:
        assert realnodes.import_archive(REAL_CLUSTER, archive) == list(REAL_SERVERS)
        for server in REAL_SERVERS:
            assert {TEAM_IMAGE, WORKERS_ONLY_IMAGE} <= set(realnodes.node_images(REAL_CLUSTER, server))
        yield
    finally:
        archive.unlink()


CHIEF_SUMMARY = re.compile(r"^chief: (\d+) steps in [\d.]+ s, \d+ examples/s, loss ([\d.]+)$")
TFJOB_WITHIN_S = 300.0
LOST_WORKER = DISRUPTIONS["worker_deleted"]
# tfk8s's replacement worker trains again within this of its pod's deletion (17 to 19 s on the
# 2-core development machine: the Job controller's 10 s back-off, the pod's start, TensorFlow's).
BACK_WITHIN_S = 120.0
# The stages of it that tfk8s's gRPC options for a program (TF_GRPC_DEFAULT_OPTIONS) shorten, as
# measured on the 2-core development machine. TensorFlow's coordinator on the chief sees the worker
# lost: 0.1 to 0.2 s; without them 0.1 s, or 20 s where the chief's channel tried the old pod's
# address once nothing answered there (gRPC's connect deadline).
SEEN_LOST_WITHIN_S = 5.0
# From the replacement serving to its first step: 0.3 to 4.2 s (the coordinator reconnects within a
# second, then rebuilds the worker's dataset and function); 11 to 17 s without them (the chief looked
# the worker's name up again only 30 s after its last lookup). Once, 10.2 s (2026-12-02): when its
# first reconnect fails, TensorFlow's coordinator tries again only after its next task-state poll
# (every 5 s, cluster_coordinator.py), which tfk8s's options do not change. The bound allows that
# one retry beside a rebuild twice as slow (5 + 2 x 4.2 + 1 s), so it catches a missing DNS option
# only where that costs more than 15 s; SEEN_LOST_WITHIN_S still catches a missing connect deadline.
STEPS_AFTER_SERVING_WITHIN_S = 15.0
# What the team program (tests/team_programs/tf2-ps/train.py) and TensorFlow's coordinator print.
SERVING_LINE = "worker-0: serving"
WORKER_LOST_LINE = "Worker /job:worker/replica:0/task:0 failed"


def _chief_summary(lines: list[str]) -> tuple[int, float]:
    """The team program's last line: its steps and final loss."""
    found = [match for text in lines if (match := CHIEF_SUMMARY.match(text))]
    assert found, f"no summary line: {lines[-10:]}"
    return int(found[-1].group(1)), float(found[-1].group(2))


def _kubectl(cluster, *args: str) -> str:
    result = subprocess.run(
        [str(paths.binary("kubectl")), "--kubeconfig", str(cluster.kubeconfig), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


@contextlib.contextmanager
def tfjob_namespace(cluster, namespace: str) -> Iterator[None]:
    """The team's namespace for its TFJob; deleted afterwards, with the TFJob and its pods. Only the
    pods are waited for (the next run on the nodes needs their CPU back); the namespace's sweep
    goes on, and is waited for where the namespace is made again."""
    _wait_until_none(cluster, f"namespace {namespace}", "namespace", namespace)
    _kubectl(cluster, "create", "namespace", namespace)
    try:
        yield
    finally:
        _kubectl(cluster, "delete", "namespace", namespace, "--wait=false")
        _wait_until_none(cluster, f"the pods of namespace {namespace}", "pods", "-n", namespace)


def _wait_until_none(cluster, what: str, *get: str) -> None:
    deadline = time.monotonic() + TFJOB_WITHIN_S
    while _kubectl(cluster, "get", *get, "--ignore-not-found", "-o", "name").strip():
        assert time.monotonic() < deadline, f"{what} still there after {TFJOB_WITHIN_S:.0f} s"
        time.sleep(0.5)


def run_under_kubeflow(cluster, tfjob_file: Path) -> tuple[int, float]:
    """The TFJob as the team runs it today: `kubectl apply` to Kubeflow's training operator, until its
    Succeeded condition; the chief's steps and final loss. Deleted afterwards with its namespace."""
    tfjob = yaml.safe_load(tfjob_file.read_text())
    name, namespace = tfjob["metadata"]["name"], tfjob["metadata"]["namespace"]
    # What its programs print, kept as it runs: the operator deletes the pods when it fails the TFJob.
    kept = KeptLogs(cluster.core, namespace, f"{TFJOB_NAME_LABEL}={name}")
    with tfjob_namespace(cluster, namespace):
        _kubectl(cluster, "apply", "-f", str(tfjob_file))
        wait_for_tfjob_succeeded(cluster, name, namespace, kept)
        chief_log = _kubectl(cluster, "logs", "-n", namespace, f"{name}-chief-0")
        return _chief_summary(chief_log.splitlines())


def wait_for_tfjob_succeeded(cluster, name: str, namespace: str, kept: KeptLogs) -> None:
    """Until the TFJob's Succeeded condition; failed with its pods' logs where it fails or takes longer
    than TFJOB_WITHIN_S."""
    deadline = time.monotonic() + TFJOB_WITHIN_S
    while True:
        kept.poll()
        conditions = (
            json.loads(_kubectl(cluster, "get", "tfjob", name, "-n", namespace, "-o", "json"))
            .get("status", {})
            .get("conditions", [])
        )
        state = {c["type"]: c["status"] for c in conditions}
        if state.get("Succeeded") == "True":
            kept.poll()  # the last lines of the task that decided
            return
        if state.get("Failed") == "True":
            pytest.fail(f"the TFJob failed: {conditions}\n{kept.report()}")
        if time.monotonic() > deadline:
            pytest.fail(f"the TFJob did not succeed within {TFJOB_WITHIN_S:.0f} s: {conditions}\n{kept.report()}")
        time.sleep(1.0)


def training_until_stopped(tfjob_file: Path, stack: str) -> TeamTFJob:
    """The team's TFJob, in its own namespace, as a run that trains until a task is lost in it:
    steps enough never to finish first, each worker logging its steps."""
    namespace = yaml.safe_load(tfjob_file.read_text())["metadata"]["namespace"]
    return TeamTFJob(name="lost-worker", tfjob_file=tfjob_file, stack=stack, namespace=namespace)


def lost_under_kubeflow(cluster, job: TeamTFJob, work: Path) -> AfterLoss:
    """Worker-0's pod deleted while every worker trains under Kubeflow's operator: until the TFJob
    fails or the replacement logs a step (either is Kubeflow's to choose, not tfk8s's)."""
    side = KubeflowTFJob("Kubeflow's operator", job, cluster.api, cluster.kubeconfig, work)
    with tfjob_namespace(cluster, job.namespace):
        side.apply(UNTIL_STOPPED)
        try:
            return lose_task(side, LOST_WORKER, back_within_s=TFJOB_WITHIN_S)
        except NotWithin as late:
            pytest.fail(f"the TFJob neither failed nor trained again after worker-0's deletion: {late}")


def lost_under_tfk8s(cluster, job: TeamTFJob, stack: str, out: Path) -> tuple[AfterLoss, dict[str, float]]:
    """Worker-0's pod deleted while every worker of the imported stack trains: until the replacement
    logs a step, or the experiment fails; with the stages of it (seconds after the deletion)."""
    with cluster.running(stack, out) as namespace:
        side = Tfk8sExperiment.of_experiment("tfk8s", job, cluster.api, load_experiment(stack))
        try:
            after = lose_task(side, LOST_WORKER, back_within_s=BACK_WITHIN_S)
        except NotWithin as late:
            pytest.fail(f"tfk8s: worker-0's replacement did not train again: {late}")
        if after.failed is not None:
            return after, {}
        (chief,) = cluster.pods(stack, "chief")
        return after, lost_worker_stages(
            cluster.log(namespace, chief.metadata.name), cluster.log(namespace, after.replacement), after.lost_at
        )


def lost_worker_stages(chief: TaskLog, replacement: TaskLog, lost_at: float) -> dict[str, float]:
    """When, after worker-0's deletion, the chief's coordinator saw it lost, and its replacement
    served and logged its first step (the kubelet's timestamps of the lines)."""
    seen = chief.first(WORKER_LOST_LINE, after=lost_at)
    serving = replacement.first(SERVING_LINE)
    step = replacement.first(STEP_LINE)
    assert seen is not None and serving is not None and step is not None, (seen, serving, step)
    return {"chief saw it lost": seen - lost_at, "replacement serving": serving - lost_at, "first step": step - lost_at}


def after_loss(after: AfterLoss, experiment: str) -> str:
    if after.failed is not None:
        return f"{experiment} failed {after.seconds:.1f} s after the deletion ({after.failed})"
    return f"the replacement trained again after {after.seconds:.1f} s"


def test_a_kubeflow_tfjob_and_its_import_train_the_same_program_to_succeeded(
    real_cluster, team_images, tmp_path, capsys, monkeypatch
):
    until_stopped = training_until_stopped(TEAM_TFJOB, "real-tfjob-lost-worker")
    until_stopped_file = tmp_path / "tfjob-until-stopped.yaml"
    until_stopped_file.write_text(yaml.safe_dump(until_stopped.manifest(UNTIL_STOPPED)))
    monkeypatch.setattr(importer, "STACKS_DIR", real_cluster.stacks_dir)
    code = components_main(["import-tfjob", str(TEAM_TFJOB), "--stack", "real-tfjob", "--nodes", REAL_SERVERS[0]])
    said = capsys.readouterr()
    assert code == 0, said.err
    assert "chief, 1 PS, 2 workers, done: chief" in said.out
    # The run that loses a worker, imported now: what the test prints from here on is not read
    # away by capsys.
    code = components_main(
        ["import-tfjob", str(until_stopped_file), "--stack", until_stopped.stack, "--nodes", REAL_SERVERS[0]]
    )
    said = capsys.readouterr()
    assert code == 0, said.err
    stack = str(real_cluster.stacks_dir / "Pulumi.real-tfjob.yaml")
    # One after the other: each asks 1.4 CPUs and 4 GiB (a chief and a PS of 300m, two workers of
    # 400m, 1 GiB each), together 2.8 of the host's 2 cores. Run at once, the TFJob's chief exited 1
    # twice on a busy machine and the operator failed it at its backoff limit (issue 63); alone, each
    # has the nodes to itself. The whole test took 129 s so (2026-12-07, warm), 152 s with the two at once.
    kubeflow_steps, kubeflow_loss = run_under_kubeflow(real_cluster, TEAM_TFJOB)
    with real_cluster.running(stack, tmp_path / "out") as namespace:
        wait_for_phase(stack, real_cluster, capsys, "Succeeded", FAIL_WITHIN_S)
        completed = time.monotonic()
        (chief,) = real_cluster.pods(stack, "chief")
        lines = [text for _, text in real_cluster.log(namespace, chief.metadata.name).lines]
        steps, loss = _chief_summary(lines)
        while real_cluster.pods(stack, "ps") + real_cluster.pods(stack, "worker"):
            assert time.monotonic() - completed < ENDS_WITHIN_S, "PS and workers still there after the chief"
            time.sleep(0.5)
    with capsys.disabled():  # in make test's output, passing or not
        print(
            f"\nthe same TFJob: Kubeflow's operator {kubeflow_steps} steps, loss {kubeflow_loss:.4f}; "
            f"tfk8s {steps} steps, loss {loss:.4f}"
        )
    assert steps == kubeflow_steps == 200
    # One program, one dataset, one learning rate: both learn the labels (ln 2 = 0.693 at the start)
    # alike; the PS's asynchronous updates and the random start leave the last digits apart.
    assert loss < 0.5 and kubeflow_loss < 0.5 and abs(loss - kubeflow_loss) < 0.2

    # A worker lost while training, the same program on both: what a team moving off TFJob gains.
    kubeflow_after = lost_under_kubeflow(real_cluster, until_stopped, tmp_path)
    until_stopped_stack = str(real_cluster.stacks_dir / f"Pulumi.{until_stopped.stack}.yaml")
    tfk8s_after, stages = lost_under_tfk8s(
        real_cluster, until_stopped, until_stopped_stack, tmp_path / "out-lost-worker"
    )
    with capsys.disabled():
        print(
            f"\nworker-0 lost while training: Kubeflow's operator: {after_loss(kubeflow_after, 'the TFJob')}; "
            f"tfk8s: {after_loss(tfk8s_after, 'the experiment')} "
            f"({', '.join(f'{stage} {seconds:.1f} s' for stage, seconds in stages.items())})"
        )
    # Kubeflow's operator may fail the TFJob (v1.8.1 and v1.9.4 do) or replace the worker: printed, not held.
    # tfk8s replaces it and training goes on: within BACK_WITHIN_S, or lost_under_tfk8s failed the test.
    assert tfk8s_after.failed is None, f"tfk8s: losing worker-0 failed the experiment: {tfk8s_after.failed}"
    assert stages["chief saw it lost"] <= SEEN_LOST_WITHIN_S, stages
    assert stages["first step"] - stages["replacement serving"] <= STEPS_AFTER_SERVING_WITHIN_S, stages


def test_an_imported_tfjob_of_workers_only_runs_multiworkermirroredstrategy_to_succeeded(
    real_cluster, team_images, tmp_path, capsys, monkeypatch
):
    monkeypatch.setattr(importer, "STACKS_DIR", real_cluster.stacks_dir)
    code = components_main(
        ["import-tfjob", str(WORKERS_ONLY_TFJOB), "--stack", "real-mwms", "--nodes", REAL_SERVERS[0]]
    )
    said = capsys.readouterr()
    assert code == 0, said.err
    assert "0 PS, 2 workers, done: worker-0" in said.out, "TFJob's rule without a chief: worker 0 decides"
    stack = str(real_cluster.stacks_dir / "Pulumi.real-mwms.yaml")
    namespace = load_experiment(stack).namespace
    real_cluster.apply(stack, tmp_path / "out", wait=False)  # it may be done before every pod was seen
    try:
        wait_for_phase(stack, real_cluster, capsys, "Succeeded", FAIL_WITHIN_S)
        assert real_cluster.pods(stack, "ps") + real_cluster.pods(stack, "chief") == []
        workers = real_cluster.pods(stack, "worker")
        assert len(workers) == 2
        (worker_0,) = [pod for pod in workers if pod.metadata.labels.get(L.COMPLETION_INDEX) == "0"]
        lines = [text for _, text in real_cluster.log(namespace, worker_0.metadata.name).lines]
        # Both replicas trained together: worker 0's all-reduce ran over the two pods. (Worker 1 ends
        # with it, or is stopped once worker 0 has decided: its last line is not awaited.)
        assert any("200 steps over 2 workers" in text for text in lines), lines[-10:]
    finally:
        real_cluster.delete(stack, tmp_path / "out")
