"""`tfk8s:logs` on real nodes: a PS's log outlives its pod, which JobSet deletes once the experiment
succeeded, and `python -m components logs` prints it from the archive, as a user would read it.

What a user checks: every line the PS logged while it ran, in order, and its last words after the
experiment ended it (the shipper drains what the PS wrote on SIGTERM); the chief, whose pod stays,
read from its pod; the task list saying where each log is; and the trainer's chief still finishing
on SIGUSR1 sent to its PID 1, now the shell that starts it.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import yaml

from components.live.log_archive_client import LogArchive
from components.live.logs import show_logs
from components.live.ready_pods import ready_pod
from components.objects.loading import load_experiment
from components.plan import labels as L
from components.plan.experiment import Experiment
from tests.realpods.conftest import POD_WAIT_S, REAL_SERVERS, UNTIL_STOPPED, RealCluster, scaled_to_real_nodes
from tests.realpods.test_network_policy import SERVE, connect, pod, pod_ready, refused_in_time, side_pod, wait_for
from tests.realpods.test_programs import ENDS_WITHIN_S, FAIL_WITHIN_S, program_stack, wait_for_phase
from tests.stack_variants import write_variant

# A pod in the experiment's namespace that no NetworkPolicy selects: anyone may reach it.
OPEN_DOOR = "open-door"


def test_a_ps_log_outlives_its_pod_and_logs_prints_it_after_the_experiment_succeeded(real_cluster, tmp_path, capsys):
    def edit(values):
        scaled_to_real_nodes("servers", "servers", {"steps": UNTIL_STOPPED}, ps=1, workers=1)(values)
        values["tfk8s:logs"] = {"size": "64Mi"}

    stack = write_variant(real_cluster.stacks_dir, "scene1-case1", "real-logs", edit)
    experiment = load_experiment(stack)
    kubeconfig = str(real_cluster.kubeconfig)

    def logs(task, previous=False) -> tuple[int, str, str]:
        capsys.readouterr()
        code = show_logs(experiment, task, previous, False, kubeconfig, None)
        said = capsys.readouterr()
        return code, said.out, said.err

    with real_cluster.running(stack, tmp_path) as namespace:
        real_cluster.wait_for_log(stack, "chief", "examples/s")  # trained: every PS served
        ps = real_cluster.task_pod(stack, "ps", 0).metadata.name
        # The program's lines: the shipper's own (`tfk8s: ...`, about reaching the archive) are the pod's only.
        seen = [line for _, line in real_cluster.log(namespace, ps).lines if not line.startswith("tfk8s: ")]
        assert seen, "the PS logged nothing while it served"
        code, live, _ = logs("ps-0")
        assert code == 0 and seen[0] in live.splitlines(), "while the pod lives, its own log"
        _the_collector_connects_nowhere(real_cluster, experiment, ps)

        real_cluster.finish(stack)
        wait_for_phase(stack, real_cluster, capsys, "Succeeded", FAIL_WITHIN_S)
        completed = time.monotonic()
        while real_cluster.pods(stack, "ps"):
            assert time.monotonic() - completed < ENDS_WITHIN_S, "the PS still there after the experiment ended"
            time.sleep(0.5)

        code, archived, err = logs("ps-0")
        assert code == 0, err
        lines = archived.splitlines()
        assert lines[: len(seen)] == seen, "the archive holds what the PS logged, in order"
        assert any("stopping on SIGTERM" in line for line in lines[len(seen) :]), lines[-5:]

        code, listed, err = logs(None)
        assert code == 0, err
        rows = {line.split()[0]: line for line in listed.splitlines()[1:] if line.strip()}
        assert rows["ps-0"].split()[1:] == ["1", "archive"], listed
        assert rows["chief-0"].split()[2] == "pod", "the chief's pod stays: its log is read there"
        code, chief, _ = logs("chief-0")
        assert code == 0 and "finishing early on SIGUSR1" in chief

        code, _, err = logs("ps-0", previous=True)
        assert code == 1 and "no earlier run" in err


def _the_collector_connects_nowhere(cluster: RealCluster, experiment: Experiment, task_pod: str) -> None:
    """The collector only listens: its NetworkPolicy lets it open no connection, on the real nodes'
    enforcing agents. The proof: a pod no policy selects, which a task reaches, it cannot."""
    namespace, core = experiment.namespace, cluster.core
    core.create_namespaced_pod(namespace, pod(OPEN_DOOR, namespace, REAL_SERVERS[1], {}, SERVE, serves=True))
    try:
        wait_for(lambda: pod_ready(core.read_namespaced_pod(OPEN_DOOR, namespace)), "the open pod ready", POD_WAIT_S)
        door = core.read_namespaced_pod(OPEN_DOOR, namespace).status.pod_ip
        collector = side_pod(core, namespace, experiment.stack, L.LOG_COLLECTOR)
        from_task = connect(core, namespace, task_pod, door)
        assert from_task.startswith("connected"), f"a task reaches the open pod: {from_task}"
        from_collector = connect(core, namespace, collector.metadata.name, door)
        assert refused_in_time(from_collector), f"the collector connected: {from_collector}"
    finally:
        core.delete_namespaced_pod(OPEN_DOOR, namespace, grace_period_seconds=0)


# A chief that prints numbered lines, a steady stream, until told to finish (SIGUSR1, forwarded by
# its shell); its PS and worker wait to be ended with the experiment.
STREAM = """
import os, signal, sys, time
stop = []
signal.signal(signal.SIGUSR1, lambda *_: stop.append(1))
if os.environ["JOB_NAME"] != "chief":
    while True:
        signal.pause()
number = 0
while not stop:
    for _ in range(20):
        print(f"line {number:08d} " + "x" * 50)
        number += 1
    sys.stdout.flush()
    time.sleep(0.01)
print(f"printed {number} lines", flush=True)
"""
STREAM_LINE = re.compile(r"^line (\d{8}) x{50}$")


def test_the_log_collectors_pod_deleted_mid_run_every_line_is_archived_once(real_cluster, tmp_path, capsys):
    """The collector's pod deleted while the chief writes a steady stream: the Deployment's next pod
    takes the volume, each shipper sends again what the deleted one had not kept, and the archive
    holds every line the chief printed, once, in order."""
    stack = program_stack(
        real_cluster, "real-logs-collector-lost", {"command": ["python3", "-c", STREAM]}, ps=1, workers=1
    )
    values = yaml.safe_load(Path(stack).read_text())
    values["config"]["tfk8s:logs"] = {"size": "128Mi"}  # 21 MiB a run: the chief's whole output
    Path(stack).write_text(yaml.safe_dump(values, sort_keys=False))
    experiment = load_experiment(stack)
    core, labels = real_cluster.core, L.side_pod_labels(experiment.stack, L.LOG_COLLECTOR)
    with real_cluster.running(stack, tmp_path) as namespace:
        real_cluster.wait_for_log(stack, "chief", "line 00020000")
        first, state = ready_pod(core, namespace, labels)
        assert first is not None, state
        core.delete_namespaced_pod(first, namespace)
        wait_for(
            lambda: ready_pod(core, namespace, labels)[0] not in (None, first), "the next collector ready", POD_WAIT_S
        )
        chief = real_cluster.task_pod(stack, "chief", 0).metadata.name
        printed = len(real_cluster.log(namespace, chief).lines)
        real_cluster.wait_for_log(stack, "chief", f"line {printed + 20000:08d}")  # archived by the next one
        real_cluster.finish(stack)
        wait_for_phase(stack, real_cluster, capsys, "Succeeded", FAIL_WITHIN_S)
        said = [line for _, line in real_cluster.log(namespace, chief).lines if not line.startswith("tfk8s: ")]
        archived = LogArchive(core, experiment).read("chief-0", chief).decode().splitlines()
    numbers = [int(match[1]) for line in archived if (match := STREAM_LINE.match(line))]
    assert said[-1].startswith("printed ") and archived[-1] == said[-1], (said[-1], archived[-3:])
    assert numbers == list(range(len(numbers))) and len(numbers) == int(said[-1].split()[1]), (
        "every line once, in order",
        [n for i, n in enumerate(numbers) if n != i][:5],
    )
    assert archived == said, "the archive is the chief's output, nothing added"
