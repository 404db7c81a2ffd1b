"""`logs`' hint runs as printed: where the log collector has no ready pod, the kubectl command it
suggests reads the cluster `logs` was told to read (its --kubeconfig and --context), quoted for a shell."""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path
from typing import Iterator

import pytest

from components.cli.main import main
from components.objects.loading import load_experiment
from tests.live.fake_api import FakeCluster, serve, task_pods
from tests.stack_variants import write_variant


@pytest.fixture
def cluster(tmp_path) -> Iterator[FakeCluster]:
    yield from serve(tmp_path)


def _hint(err: str) -> list[str]:
    """The command the message suggests (between backticks), as a shell splits it."""
    commands = re.findall(r"`([^`]*)`", err)
    assert len(commands) == 1, err
    return shlex.split(commands[0])


def _archived_stack_without_a_ready_collector(cluster: FakeCluster, tmp_path: Path) -> tuple[str, list[str]]:
    stack = write_variant(tmp_path, "scene1-case1", "kept", lambda values: values.update({"tfk8s:logs": {}}))
    experiment = load_experiment(stack)
    pods = task_pods(experiment, {p.task.name: "srv-00" for p in experiment.plan.placements})
    cluster.experiment_routes(experiment, pods)  # no collector pod among them
    for pod in pods.values():
        name = pod["metadata"]["name"]
        cluster.routes[f"/api/v1/namespaces/{experiment.namespace}/pods/{name}/log"] = (200, "")
    where = ["-n", experiment.namespace, "describe", "deployment", experiment.names.log_archive]
    return stack, where


def test_the_kubectl_hint_carries_the_kubeconfig_and_context_given(cluster, capsys, tmp_path):
    stack, where = _archived_stack_without_a_ready_collector(cluster, tmp_path)
    kubeconfig = tmp_path / "team's configs" / "kube config"  # a space and a quote: quoted for the shell
    kubeconfig.parent.mkdir()
    shutil.copy(cluster.kubeconfig, kubeconfig)

    main(["logs", stack, "ps-0", "--kubeconfig", str(kubeconfig), "--context", "c"])
    err = capsys.readouterr().err

    assert "no ready pod" in err, err
    assert _hint(err) == ["kubectl", "--kubeconfig", str(kubeconfig), "--context", "c", *where]


def test_without_flags_the_kubectl_hint_reads_what_kubectl_reads_by_default(cluster, capsys, tmp_path, monkeypatch):
    stack, where = _archived_stack_without_a_ready_collector(cluster, tmp_path)
    monkeypatch.setenv("KUBECONFIG", cluster.kubeconfig)

    main(["logs", stack, "ps-0"])
    err = capsys.readouterr().err

    assert _hint(err) == ["kubectl", *where]
