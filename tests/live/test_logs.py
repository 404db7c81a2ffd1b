"""`python -m components logs` against a fake API server, as a user runs it: a task's log from its
pod while the pod is there, its earlier run from the archive, the task list saying where each log
is, and one clear line where there is none. The archive itself, through a real port-forward to a
real collector: tests/realpods/test_logs.py."""

from __future__ import annotations

import copy
from typing import Iterator

import pytest

from components.cli.main import main
from components.live import logs as logs_command
from components.objects.loading import load_experiment
from tests.live.fake_api import FakeCluster, serve, task_pods
from tests.stack_variants import write_variant


@pytest.fixture
def cluster(tmp_path) -> Iterator[FakeCluster]:
    yield from serve(tmp_path)


class FakeArchive:
    """The collector's answers, as LogArchive gives them."""

    runs_by_task: dict[str, list[str]] = {}
    texts: dict[str, bytes] = {}

    def __init__(self, core, experiment) -> None:
        pass

    def runs(self) -> dict[str, list[str]]:
        return self.runs_by_task

    def read(self, task: str, pod: str) -> bytes:
        return self.texts[pod]


def _stack(tmp_path, archived: bool) -> str:
    return write_variant(tmp_path, "scene1-case1", "kept" if archived else "plain",
                         lambda values: values.update({"tfk8s:logs": {}}) if archived else None)


def _logs(cluster: FakeCluster, capsys, stack: str, *argv: str) -> tuple[int, str, str]:
    code = main(["logs", stack, *argv, "--kubeconfig", cluster.kubeconfig])
    said = capsys.readouterr()
    return code, said.out, said.err


def _serve_pods(cluster: FakeCluster, experiment, pods: dict[str, dict], texts: dict[str, str]) -> None:
    cluster.experiment_routes(experiment, pods)
    for pod in pods.values():
        name = pod["metadata"]["name"]
        cluster.routes[f"/api/v1/namespaces/{experiment.namespace}/pods/{name}/log"] = (200, texts.get(name, ""))


def test_a_live_tasks_log_is_read_from_its_pod(cluster, capsys, tmp_path):
    stack = _stack(tmp_path, archived=False)
    experiment = load_experiment(stack)
    pods = task_pods(experiment, {p.task.name: "srv-00" for p in experiment.plan.placements})
    ps = pods["ps-0"]["metadata"]["name"]
    _serve_pods(cluster, experiment, pods, {ps: "ps-0: serving on port 2222\n"})
    assert _logs(cluster, capsys, stack, "ps-0") == (0, "ps-0: serving on port 2222\n", "")


def test_without_an_archive_a_gone_pods_log_is_one_line_saying_how_to_keep_it(cluster, capsys, tmp_path):
    stack = _stack(tmp_path, archived=False)
    experiment = load_experiment(stack)
    pods = task_pods(experiment, {p.task.name: "srv-00" for p in experiment.plan.placements})
    del pods["ps-0"]  # JobSet deleted it when the experiment ended
    _serve_pods(cluster, experiment, pods, {})
    code, out, err = _logs(cluster, capsys, stack, "ps-0")
    assert (code, out) == (1, "")
    assert err.count("\n") == 1 and "tfk8s:logs" in err, err
    code, out, _ = _logs(cluster, capsys, stack)
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines()[1:] if line.strip()}
    assert rows["ps-0"] == ["0", "none", "(its", "pod", "is", "gone)"]
    assert rows["worker-0"][:2] == ["1", "pod"]
    assert "keeps no log archive" in out


def test_a_retried_tasks_last_run_is_its_live_pod_and_the_one_before_comes_from_the_archive(
    cluster, capsys, tmp_path, monkeypatch
):
    stack = _stack(tmp_path, archived=True)
    experiment = load_experiment(stack)
    pods = task_pods(experiment, {p.task.name: "srv-00" for p in experiment.plan.placements})
    retried = copy.deepcopy(pods["worker-1"])
    first = retried["metadata"]["name"]
    pods["worker-1"]["metadata"]["name"] = second = f"{first}-retry"
    _serve_pods(cluster, experiment, pods, {second: "worker-1: second run\n"})
    monkeypatch.setattr(logs_command, "LogArchive", FakeArchive)
    monkeypatch.setattr(FakeArchive, "runs_by_task", {"worker-1": [first, second], "ps-0": ["gone-ps"]})
    monkeypatch.setattr(FakeArchive, "texts", {first: b"worker-1: first run\n"})

    assert _logs(cluster, capsys, stack, "worker-1") == (0, "worker-1: second run\n", "")
    assert _logs(cluster, capsys, stack, "worker-1", "--previous") == (0, "worker-1: first run\n", "")
    code, out, _ = _logs(cluster, capsys, stack)
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines()[1:] if line.strip()}
    assert rows["worker-1"] == ["2", "pod", second]
    assert "keeps no log archive" not in out
    code, _, err = _logs(cluster, capsys, stack, "worker-0", "--previous")
    assert code == 1 and "no earlier run" in err


def _pod(name: str, phase: str):
    from types import SimpleNamespace

    return SimpleNamespace(metadata=SimpleNamespace(name=name), status=SimpleNamespace(phase=phase))


def test_runs_are_ordered_as_they_ran_whether_the_archive_kept_them_or_the_cluster_did():
    from components.live.logs import task_runs

    # Job pods stay after they failed: r0's run is older than the two the archive kept; r3 is new.
    live = {"worker-1": [_pod("r0", "Failed"), _pod("r2", "Running"), _pod("r3", "Pending")]}
    runs = task_runs(live, {"worker-1": ["r1", "r2"]})["worker-1"]
    assert [run.pod for run in runs] == ["r0", "r1", "r2", "r3"]
    assert [run.live is not None for run in runs] == [True, False, True, True]
    assert [run.pod for run in task_runs({}, {"ps-0": ["a", "b"]})["ps-0"]] == ["a", "b"]


def test_an_archive_out_of_reach_costs_only_the_gone_pods_logs_said_in_one_line(cluster, capsys, tmp_path):
    stack = _stack(tmp_path, archived=True)
    experiment = load_experiment(stack)
    pods = task_pods(experiment, {p.task.name: "srv-00" for p in experiment.plan.placements})
    ps = pods["ps-0"]["metadata"]["name"]
    del pods["worker-0"]
    _serve_pods(cluster, experiment, pods, {ps: "ps-0: serving\n"})  # no collector pod is ready
    code, out, err = _logs(cluster, capsys, stack, "ps-0")
    assert (code, out) == (0, "ps-0: serving\n")
    assert err.count("\n") == 1 and "the log collector" in err and "no ready pod" in err, err
    code, out, err = _logs(cluster, capsys, stack, "worker-0")
    assert code == 1 and "the log archive cannot be read" in err and "Traceback" not in err, err
