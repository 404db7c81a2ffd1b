"""`tfk8s:cluster.evaluator` in real pods: TensorFlow's side-car evaluator follows the chief's
checkpoints on its volume, is replaced alone when lost, and ends with the experiment.

What a user checks: the evaluator reports evaluations (tfk8s's trainer's, and a team's TF2
program's), `top` shows the latest, a deleted evaluator is replaced while the experiment's
restart count stays 0, and the experiment succeeds with no evaluator left running. The trainer's
evaluator is checked on the TensorBoard test's experiment (check_the_trainers_evaluator).
"""

from __future__ import annotations

import time

from kubernetes import client

from components.cli.main import main as components_main
from components.objects.loading import load_experiment
from tests.realpods.conftest import UNTIL_STOPPED, RealCluster
from tests.realpods.test_programs import FAIL_WITHIN_S, program_stack, status_of, wait_for_phase
from trainer.log_lines import EVALUATION

EVALUATOR_TEAM_SOURCE = "tests/team_programs/tf2-ps-evaluator"
# In the chief's writable scratch folder (its root filesystem is read-only).
TEAM_FINISH_FILE = "/scratch/finish"
# An evaluator's pod is small: the real servers also hold the chief, 2 PS and 2 workers.
EVALUATOR = {"replicas": 1, "cpu": "100m", "memory": "1Gi"}
EVALUATES_WITHIN_S = 240.0
ENDS_WITHIN_S = 30.0


def _evaluator_pods(cluster: RealCluster, stack: str) -> list[client.V1Pod]:
    return [p for p in cluster.pods(stack, "evaluator") if p.metadata.deletion_timestamp is None]


def _evaluations(cluster: RealCluster, stack: str, namespace: str) -> list[dict]:
    found = []
    for pod in _evaluator_pods(cluster, stack):
        if pod.status.phase in ("Running", "Succeeded"):
            found += [event for _, event in cluster.log(namespace, pod.metadata.name).events(EVALUATION)]
    return found


def _wait_for_evaluations(cluster: RealCluster, stack: str, namespace: str, other_than: str = "") -> list[dict]:
    deadline = time.monotonic() + EVALUATES_WITHIN_S
    while True:
        pods = [p.metadata.name for p in _evaluator_pods(cluster, stack)]
        evaluations = _evaluations(cluster, stack, namespace) if other_than not in pods else []
        if evaluations:
            return evaluations
        assert time.monotonic() < deadline, (
            f"no evaluation within {EVALUATES_WITHIN_S:.0f} s: {_evaluator_state(cluster, stack, namespace)}"
        )
        time.sleep(1.0)


def _evaluator_state(cluster: RealCluster, stack: str, namespace: str) -> str:
    """Each evaluator pod's phase, its last lines, and what it and the chief see of the checkpoint
    folder, for a failure's message."""
    said = []
    for pod in _evaluator_pods(cluster, stack) + cluster.pods(stack, "chief"):
        running = pod.status.phase == "Running"
        lines = [text for _, text in cluster.log(namespace, pod.metadata.name).lines[-4:]] if running else []
        seen = _run_in(cluster, pod, "ls -ln /checkpoints; grep checkpoints /proc/mounts") if running else ""
        ended = [s.state.terminated for s in pod.status.container_statuses or () if s.state.terminated]
        why = [f"exit {t.exit_code} {t.reason}: {(t.message or '')[-600:]}" for t in ended]
        said.append(f"{pod.metadata.name} on {pod.spec.node_name} {pod.status.phase}: {lines} {why}; sees: {seen}")
    return "\n".join(said) or "no evaluator pod"


def _run_in(cluster: RealCluster, pod: client.V1Pod, script: str) -> str:
    from kubernetes.stream import stream

    return stream(
        cluster.core.connect_get_namespaced_pod_exec, pod.metadata.name, pod.metadata.namespace,
        command=["sh", "-c", script], stderr=True, stdout=True, stdin=False, tty=False,
    )


def check_the_trainers_evaluator(cluster: RealCluster, stack: str, namespace: str, capsys, every: int) -> None:
    """The trainer's evaluator of a running experiment (checkpoints every `every` steps) evaluates
    each checkpoint, `top` shows its latest, and lost, it is replaced alone while the chief trains on.

    The TensorBoard test runs it on its experiment (tests/realpods/test_tensorboard.py), which has
    the evaluator and the checkpoint volume already: one experiment brought up for both."""
    first = _wait_for_evaluations(cluster, stack, namespace)
    assert first[0]["step"] >= every and first[0]["step"] % every == 0, first[0]
    assert all(0.0 < e["eval_loss"] < 10.0 for e in first), first
    (pod,) = _evaluator_pods(cluster, stack)
    (chief,) = [p for p in cluster.pods(stack, "chief") if p.status.phase == "Running"]
    assert pod.spec.node_name == chief.spec.node_name, "the chief's ReadWriteOnce volume is on its server"

    components_main(["top", stack, "--kubeconfig", str(cluster.kubeconfig)])
    shown = capsys.readouterr().out
    assert "evaluation: step " in shown and "eval_loss" in shown, shown
    assert any(line.split()[:1] == ["evaluator-0"] for line in shown.splitlines()), shown

    # Lost, it is replaced alone: the experiment is not restarted, and training goes on.
    client.CoreV1Api(cluster.api).delete_namespaced_pod(pod.metadata.name, namespace)
    again = _wait_for_evaluations(cluster, stack, namespace, other_than=pod.metadata.name)
    assert again, "the replacement evaluated"
    assert (cluster.jobset(stack).get("status") or {}).get("restarts", 0) == 0
    assert [p.metadata.name for p in cluster.pods(stack, "chief") if p.status.phase == "Running"] == [
        chief.metadata.name
    ], "the chief trained on"


def wait_until_no_evaluator_runs(cluster: RealCluster, stack: str) -> None:
    """JobSet deletes the evaluator's Job when the experiment ends while it still runs; an evaluator
    that exited 0 on its own (after the last step's checkpoint) stays as a finished pod with its
    log, as the chief's does, and holds nothing."""
    deadline = time.monotonic() + ENDS_WITHIN_S
    while running := [
        p.metadata.name for p in _evaluator_pods(cluster, stack) if p.status.phase in ("Pending", "Running")
    ]:
        assert time.monotonic() < deadline, f"the evaluator outlived the experiment: {running}"
        time.sleep(0.5)


def test_a_teams_tf2_program_with_an_evaluator_succeeds_and_the_evaluator_evaluated(
    real_cluster, local_volume, tmp_path, capsys
):
    """The chief trains until told (its finish file), which the test does only once the evaluator
    reported an evaluation: however fast the chief trains, the evaluator has a checkpoint to read."""
    program = {
        "source": EVALUATOR_TEAM_SOURCE,
        "command": ["python", "train.py"],
        "args": ["--steps", str(UNTIL_STOPPED), "--checkpoint-every", "100", "--checkpoint-dir", "/checkpoints",
                 "--finish-file", TEAM_FINISH_FILE],
    }

    def edit(cluster):
        cluster["chief"]["checkpointVolume"] = {"size": "1Gi", "storageClass": local_volume}
        cluster["evaluator"] = dict(EVALUATOR)

    stack = program_stack(real_cluster, "real-tf2-evaluator", program, edit, ps=1, workers=1)
    namespace = load_experiment(stack).namespace
    with real_cluster.running(stack, tmp_path):
        deadline = time.monotonic() + EVALUATES_WITHIN_S
        while not (seen := _evaluated_lines(real_cluster, stack, namespace)):
            status = status_of(stack, real_cluster, capsys)
            assert status["phase"] not in ("Failed", "Succeeded"), status["phaseDetail"]
            assert time.monotonic() < deadline, (
                f"no evaluation within {EVALUATES_WITHIN_S:.0f} s: {_evaluator_state(real_cluster, stack, namespace)}"
            )
            time.sleep(1.0)
        assert all("eval_loss" in line for line in seen), seen

        _run_in(real_cluster, real_cluster.running_chief(stack), f"touch {TEAM_FINISH_FILE}")
        wait_for_phase(stack, real_cluster, capsys, "Succeeded", FAIL_WITHIN_S)
        wait_until_no_evaluator_runs(real_cluster, stack)


def _evaluated_lines(cluster: RealCluster, stack: str, namespace: str) -> list[str]:
    """The team's evaluator's `evaluator: step N eval_loss X` lines, from its running pods."""
    return [
        text
        for pod in _evaluator_pods(cluster, stack)
        if pod.status.phase == "Running"
        for _, text in cluster.log(namespace, pod.metadata.name).lines
        if text.startswith("evaluator: step ")
    ]
