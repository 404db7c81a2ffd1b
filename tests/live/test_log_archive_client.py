"""`python -m components logs` reading the log archive as a user runs it, against a fake API server
and a real collector (trainer/log_collector.py) on 127.0.0.1, the port-forward to its read port
played by a local connection: a gone pod's run is read by its pod's name, so a run that begins
between the listing and the read changes nothing of what is printed, and one the collector dropped
meanwhile is said in one line. The API server's port-forward to a collector pod: tests/realpods/test_logs.py."""

from __future__ import annotations

import socket
import socketserver
import threading
from typing import Callable, Iterator

import pytest

from components.cli.main import main
from components.objects.loading import load_experiment
from components.plan import labels as L
from components.spec.logs import READ_PORT
from tests.live.fake_api import STARTED, FakeCluster, serve, task_pods
from tests.live.test_port_forward import FakePortForward
from tests.objects.test_log_archive_scripts import (  # noqa: F401 (fixtures)
    Collector,
    archive,
    eventually,
    processes,
    start_collector,
)
from tests.stack_variants import write_variant
from trainer import log_protocol

COLLECTOR_POD = "tfk8s-logs-5d9c7b-x2x7q"
TASK = "worker-1"
RUNS = {pod: f"{TASK}: the run in {pod}\n".encode() for pod in ("first-pod", "second-pod", "third-pod")}


@pytest.fixture
def cluster(tmp_path) -> Iterator[FakeCluster]:
    yield from serve(tmp_path)


@pytest.fixture
def stack(tmp_path) -> str:
    return write_variant(tmp_path, "scene1-case1", "kept", lambda values: values.update({"tfk8s:logs": {}}))


def serve_experiment(cluster: FakeCluster, stack: str) -> None:
    """The experiment's pods once it ended: the chief's stays, JobSet deleted the others; the
    collector's pod is ready."""
    experiment = load_experiment(stack)
    pods = {"chief-0": task_pods(experiment, {p.task.name: "srv-00" for p in experiment.plan.placements})["chief-0"]}
    pods["collector"] = {
        "metadata": {
            "name": COLLECTOR_POD,
            "namespace": experiment.namespace,
            "creationTimestamp": STARTED.isoformat(),
            "labels": L.side_pod_labels(experiment.stack, L.LOG_COLLECTOR),
        },
        "spec": {"containers": [{"name": L.LOG_COLLECTOR}]},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    }
    cluster.experiment_routes(experiment, pods)


def send_run(collector: Collector, pod: str) -> None:
    """`pod`'s run of TASK, as its shipper sends it, once the collector lists it."""
    with socket.create_connection(("127.0.0.1", collector.ingest_port), timeout=30) as sock:
        sock.sendall(log_protocol.header(TASK, pod) + RUNS[pod])
    found = log_protocol.run_found(pod) + RUNS[pod]
    eventually(lambda: collector.read(TASK, pod) == found, f"{pod} archived")


def archived_twice(cluster: FakeCluster, stack: str, start_collector, keep_runs: int) -> Collector:
    """The stack served by the fake API server, and its collector holding TASK's two runs (first-pod, then
    second-pod)."""
    serve_experiment(cluster, stack)
    collector = start_collector(keep_runs=keep_runs)
    for pod in ("first-pod", "second-pod"):
        send_run(collector, pod)
    return collector


def logs(cluster: FakeCluster, capsys, stack: str, *argv: str) -> tuple[int, str, str]:
    code = main(["logs", stack, TASK, *argv, "--kubeconfig", cluster.kubeconfig])
    said = capsys.readouterr()
    return code, said.out, said.err


@pytest.fixture
def forwarded(monkeypatch) -> Callable[[int], FakePortForward]:
    def to(port: int) -> FakePortForward:
        fake = FakePortForward(port)
        monkeypatch.setattr("kubernetes.stream.portforward", fake)
        return fake

    return to


def test_a_gone_pods_runs_are_read_from_the_archive_by_their_pods_names(
    cluster, capsys, stack, start_collector, forwarded
):
    collector = archived_twice(cluster, stack, start_collector, keep_runs=2)
    fake = forwarded(collector.read_port)
    assert logs(cluster, capsys, stack) == (0, RUNS["second-pod"].decode(), "")
    assert logs(cluster, capsys, stack, "--previous") == (0, RUNS["first-pod"].decode(), "")
    namespace = load_experiment(stack).namespace
    assert set(fake.opened) == {(COLLECTOR_POD, namespace, str(READ_PORT))}


def test_a_run_that_began_between_the_listing_and_the_read_changes_nothing_printed(
    cluster, capsys, stack, start_collector, forwarded
):
    """The task is retried while `logs --previous` runs: the archive gains a run after the listing
    (the first stream) and before the read (the second). Read by position, `--previous` would now
    name the wrong run."""
    collector = archived_twice(cluster, stack, start_collector, keep_runs=3)
    fake = forwarded(collector.read_port)
    fake.before_opening = lambda n: send_run(collector, "third-pod") if n == 2 else None
    assert logs(cluster, capsys, stack, "--previous") == (0, RUNS["first-pod"].decode(), "")
    assert len(fake.opened) == 2


def test_a_run_dropped_between_the_listing_and_the_read_is_said_in_one_line(
    cluster, capsys, stack, start_collector, forwarded
):
    collector = archived_twice(cluster, stack, start_collector, keep_runs=2)
    fake = forwarded(collector.read_port)
    fake.before_opening = lambda n: send_run(collector, "third-pod") if n == 2 else None
    code, out, err = logs(cluster, capsys, stack, "--previous")
    assert (code, out) == (2, "")
    assert err.startswith(
        f"stack 'kept': the log archive no longer holds run first-pod of {TASK} (it answered missing "
    )
    assert err.endswith("); run again\n") and err.count("\n") == 1, err


class EarlierCollector(socketserver.BaseRequestHandler):
    """The read port of a collector that an earlier tfk8s deployed: it reads runs by their position."""

    def handle(self) -> None:
        line = self.request.makefile("rb").readline()
        if line == b"list\n":
            self.request.sendall(b'{"tasks": {"worker-1": ["first-pod", "second-pod"]}}\n')
        else:
            self.request.sendall(b"error expected 'list' or 'read <task> <n>'\n")


def test_a_collector_an_earlier_tfk8s_deployed_is_said_to_need_pulumi_up(cluster, capsys, stack, forwarded):
    serve_experiment(cluster, stack)
    with socketserver.ThreadingTCPServer(("127.0.0.1", 0), EarlierCollector) as earlier:
        threading.Thread(target=earlier.serve_forever, daemon=True).start()
        forwarded(earlier.server_address[1])
        code, out, err = logs(cluster, capsys, stack)
        earlier.shutdown()
    assert (code, out) == (2, "")
    assert "runs an earlier tfk8s's code" in err and "`pulumi up`" in err and err.count("\n") == 1, err


def test_a_run_the_collector_cannot_open_is_said_in_one_line_naming_no_earlier_tfk8s(
    cluster, capsys, stack, start_collector, archive, forwarded
):
    """The collector answers nothing when it cannot open a run's files (here its log is a folder):
    that is no earlier tfk8s's collector, and `pulumi up` would not help."""
    collector = archived_twice(cluster, stack, start_collector, keep_runs=2)
    log = archive / TASK / "second-pod.log"
    log.unlink()
    log.mkdir()
    assert collector.read(TASK, "second-pod") == b""
    forwarded(collector.read_port)
    code, out, err = logs(cluster, capsys, stack)
    assert (code, out) == (2, "")
    assert err == f"stack 'kept': the log archive gave no answer for run second-pod of {TASK}; run again\n"
