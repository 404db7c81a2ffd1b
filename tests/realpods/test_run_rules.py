"""The run rules TFJob users ask for, on the real nodes: `failOn`, evictions that never count, and
`done: {workers: N}` and `done: worker-0` (components/objects/failure_rules.py, components/objects/jobset.py).

A test waits for what it checks (a phase, a new pod, a log line), never for a fixed time; the one
bound it asserts is the issue's: a `failOn` exit ends the experiment within 20 s.
"""

from __future__ import annotations

import contextlib
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

from kubernetes import client

from components.objects.loading import load_experiment
from components.plan import labels as L
from tests.realpods.conftest import POD_WAIT_S, UNTIL_STOPPED, RealCluster, scaled_to_real_nodes
from tests.realpods.test_programs import FAIL_WITHIN_S, program_stack, status_of, wait_for_phase
from tests.stack_variants import write_variant

FAIL_ON_ENDS_WITHIN_S = 20.0
# The Job controller marks a replacement for a failure a Pod failure policy ignored.
IGNORED_FAILURES = "batch.kubernetes.io/job-index-ignored-failure-count"
COUNTED_FAILURES = "batch.kubernetes.io/job-index-failure-count"
SERVE = ["sleep", "3600"]


def evict(core: client.CoreV1Api, pod: Any) -> None:
    """What `kubectl drain` does to each pod: the Eviction API, which marks it DisruptionTarget."""
    meta = client.V1ObjectMeta(name=pod.metadata.name, namespace=pod.metadata.namespace)
    core.create_namespaced_pod_eviction(pod.metadata.name, pod.metadata.namespace, client.V1Eviction(metadata=meta))


@contextlib.contextmanager
def applied(cluster: RealCluster, stack: str, out: Path) -> Iterator[None]:
    """The experiment applied, not waited for: it may end before every pod ran; deleted afterwards."""
    cluster.apply(stack, out, wait=False)
    try:
        yield
    finally:
        cluster.delete(stack, out)


def index_of(pod: Any) -> int:
    return int(pod.metadata.labels[L.COMPLETION_INDEX])


def replacement(cluster: RealCluster, stack: str, role: str, index: int, old: str) -> Any:
    """The running pod that replaced pod `old` of task `<role>-<index>`."""
    deadline = time.monotonic() + POD_WAIT_S
    while time.monotonic() < deadline:
        for pod in cluster.pods(stack, role):
            if (
                index_of(pod) == index
                and pod.metadata.name != old
                and pod.status.phase == "Running"
                and pod.metadata.deletion_timestamp is None
            ):
                return pod
        time.sleep(0.5)
    raise AssertionError(f"no running replacement of {role}-{index} within {POD_WAIT_S:.0f} s")


def test_a_worker_exiting_with_a_fail_on_code_ends_the_experiment_at_once_naming_it(real_cluster, tmp_path, capsys):
    exits_3 = 'if [ "$TASK_INDEX" = 1 ]; then echo "bad flag: --embedding_dim"; exit 3; fi; exec sleep 3600'
    stack = program_stack(
        real_cluster,
        "real-fail-on",
        {"command": ["sh", "-c", exits_3], "roles": {"ps": {"command": SERVE}, "chief": {"command": SERVE}}},
        lambda cluster: cluster["workers"].update(failOn=[3]),
    )
    with applied(real_cluster, stack, tmp_path):
        status = wait_for_phase(stack, real_cluster, capsys, "Failed", FAIL_WITHIN_S)
        seen_failed = datetime.now(timezone.utc)
        assert "worker-1's exit code 3 is in workers.failOn: no retry" in status["phaseDetail"], status
        failed = [p for p in real_cluster.pods(stack, "worker") if index_of(p) == 1]
        assert len(failed) == 1, f"worker-1 was retried: {[p.metadata.name for p in failed]}"
        exited_at = failed[0].status.container_statuses[0].state.terminated.finished_at
        # The kubelet stamps whole seconds: one more for the rounding.
        assert (seen_failed - exited_at).total_seconds() <= FAIL_ON_ENDS_WITHIN_S + 1, (exited_at, seen_failed)
        assert (real_cluster.jobset(stack).get("status") or {}).get("restarts", 0) == 0


def test_evicted_workers_and_ps_never_use_up_the_restarts(real_cluster, tmp_path, capsys):
    """`cluster.restarts: 0`: before, an evicted PS failed the experiment (a deleted one still does:
    test_real_pods.py). An evicted worker is replaced with its failure ignored; an evicted PS
    restarts the experiment uncounted; it then trains to the end."""

    def edit(values: dict[str, Any]) -> None:
        scaled_to_real_nodes("servers", "servers", {"steps": UNTIL_STOPPED, "checkpointEvery": 0}, ps=1, workers=1)(
            values
        )
        values["tfk8s:cluster"]["restarts"] = 0

    stack = write_variant(real_cluster.stacks_dir, "scene1-case1", "real-evicted", edit)
    core = real_cluster.core
    with real_cluster.running(stack, tmp_path):
        real_cluster.wait_for_event(stack, "start")
        worker = real_cluster.task_pod(stack, "worker", 0)
        evict(core, worker)
        back = replacement(real_cluster, stack, "worker", 0, worker.metadata.name)
        annotations = back.metadata.annotations or {}
        assert annotations.get(IGNORED_FAILURES) == "1" and annotations.get(COUNTED_FAILURES, "0") == "0", annotations

        first_chief = real_cluster.running_chief(stack).metadata.name
        evict(core, real_cluster.task_pod(stack, "ps", 0))
        deadline = time.monotonic() + POD_WAIT_S
        while (jobset_status := real_cluster.jobset(stack).get("status") or {}).get("restarts", 0) < 1:
            assert jobset_status.get("terminalState") is None, f"the eviction ended the experiment: {jobset_status}"
            assert time.monotonic() < deadline, "the JobSet did not restart the experiment"
            time.sleep(0.5)
        assert jobset_status.get("restartsCountTowardsMax", 0) == 0, jobset_status
        real_cluster.wait_for_event(stack, "start", other_than=first_chief)  # the new chief trains
        status = status_of(stack, real_cluster, capsys)
        assert status["phase"] in ("Running", "Restarting"), status
        real_cluster.finish(stack)
        summary, _ = real_cluster.chief_summary(stack)
        assert summary["steps"] > 0
        assert real_cluster.jobset(stack)["status"].get("restartsCountTowardsMax", 0) == 0


def test_done_two_of_three_workers_succeeds_with_the_third_still_running(real_cluster, tmp_path, capsys):
    straggles = 'if [ "$TASK_INDEX" = 2 ]; then echo straggling; exec sleep 3600; fi; echo "worker $TASK_INDEX done"'
    stack = program_stack(
        real_cluster,
        "real-two-of-three",
        {"command": ["sh", "-c", straggles], "done": {"workers": 2}, "roles": {"ps": {"command": SERVE}}},
        lambda cluster: cluster["workers"].update(replicas=3, cpu="100m", memory="256Mi"),
    )
    experiment = load_experiment(stack)
    with applied(real_cluster, stack, tmp_path):
        status = wait_for_phase(stack, real_cluster, capsys, "Succeeded", FAIL_WITHIN_S)
        assert status["phase"] == "Succeeded"
        (job,) = (
            client.BatchV1Api(real_cluster.api)
            .list_namespaced_job(experiment.namespace, label_selector=f"{L.WORKLOAD}=worker")
            .items
        )
        assert job.status.succeeded == 2 and job.status.completed_indexes == "0,1", job.status
        reasons = {c.type: c.reason for c in job.status.conditions or ()}
        assert reasons.get("SuccessCriteriaMet") == "SuccessPolicy", reasons


def test_done_worker_0_succeeds_when_worker_0_exits_0_not_when_another_worker_does(real_cluster, tmp_path, capsys):
    """TFJob's rule without a chief (`done: worker-0`, what import-tfjob writes for such a TFJob): worker 1
    exiting 0 ends nothing; worker 0 exiting 0 ends the experiment Succeeded, worker 2 still running."""
    from kubernetes.stream import stream

    script = (
        'case "$TASK_INDEX" in 0) while [ ! -e /tmp/go ]; do sleep 0.2; done; echo "worker 0 done";; '
        '1) echo "worker 1 done";; *) exec sleep 3600;; esac'
    )
    stack = program_stack(
        real_cluster,
        "real-worker-0",
        {"command": ["sh", "-c", script], "done": "worker-0", "roles": {"ps": {"command": SERVE}}},
        lambda cluster: cluster["workers"].update(replicas=3, cpu="100m", memory="256Mi"),
    )
    experiment = load_experiment(stack)
    batch = client.BatchV1Api(real_cluster.api)

    def workers_job() -> Any:
        jobs = batch.list_namespaced_job(experiment.namespace, label_selector=f"{L.WORKLOAD}=worker").items
        return jobs[0] if jobs else None  # None until JobSet made it

    with applied(real_cluster, stack, tmp_path):
        deadline = time.monotonic() + POD_WAIT_S
        while (job := workers_job()) is None or job.status.completed_indexes != "1":
            assert time.monotonic() < deadline, f"worker 1 did not complete: {job and job.status}"
            time.sleep(0.5)
        job = workers_job()
        assert "SuccessCriteriaMet" not in {c.type for c in job.status.conditions or ()}, job.status
        phase = status_of(stack, real_cluster, capsys)["phase"]
        assert phase not in ("Succeeded", "Failed"), f"worker 1's exit 0 ended the experiment: {phase}"
        assert (real_cluster.jobset(stack).get("status") or {}).get("terminalState") is None

        (worker_0,) = [
            pod
            for pod in real_cluster.pods(stack, "worker")
            if (pod.metadata.labels or {}).get(L.COMPLETION_INDEX) == "0" and pod.status.phase == "Running"
        ]
        stream(
            real_cluster.core.connect_get_namespaced_pod_exec, worker_0.metadata.name, experiment.namespace,
            command=["touch", "/tmp/go"], stderr=True, stdout=True, stdin=False, tty=False,
        )
        status = wait_for_phase(stack, real_cluster, capsys, "Succeeded", FAIL_WITHIN_S)
        assert status["phase"] == "Succeeded"
        job = workers_job()
        assert job.status.completed_indexes == "0,1", job.status
        reasons = {c.type: c.reason for c in job.status.conditions or ()}
        assert reasons.get("SuccessCriteriaMet") == "SuccessPolicy", reasons


def test_a_run_that_cannot_start_ends_failed_past_its_start_deadline_naming_the_tasks(real_cluster, tmp_path, capsys):
    """scene2-case1's shape with workers no node can hold (3 CPUs each, on 2-CPU servers): the chief
    and PS run, wait for the workers for 20 s, and the experiment ends Failed, naming the workers and
    the scheduler's reason."""

    def edit(values: dict[str, Any]) -> None:
        scaled_to_real_nodes("ps-servers", "worker-servers", {"steps": UNTIL_STOPPED}, ps=1)(values)
        values["tfk8s:cluster"]["startDeadline"] = "20s"
        values["tfk8s:cluster"]["workers"]["cpu"] = "3"

    stack = write_variant(real_cluster.stacks_dir, "scene2-case1", "real-start-deadline", edit)
    with applied(real_cluster, stack, tmp_path):
        status = wait_for_phase(stack, real_cluster, capsys, "Failed", FAIL_WITHIN_S)
        detail = status["phaseDetail"]
        assert "not running within startDeadline (20 s): worker-0, worker-1" in detail, detail
        assert "worker-0: 0/2 nodes are available" in detail and "Insufficient cpu" in detail, detail
        assert (real_cluster.jobset(stack).get("status") or {}).get("restarts", 0) == 0
