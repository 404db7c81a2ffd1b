"""The kubeconfig a command reads is the one kubectl would: every file $KUBECONFIG lists, merged."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterator

import pytest

from components.access.kubeconfig import KubeconfigError, kubeconfig_files, merged, read_kubeconfig
from components.cli.main import main
from components.objects.loading import load_experiment
from tests.live.fake_api import FakeCluster, listed, serve, task_pods

STACK = "scene1-case1-hot-none"


@pytest.fixture
def cluster(tmp_path) -> Iterator[FakeCluster]:
    yield from serve(tmp_path)


def split_kubeconfig(cluster: FakeCluster, folder: Path) -> tuple[Path, Path]:
    """The fake cluster's kubeconfig as two files: the user and current-context in one, the cluster
    and the context in the other, as teams keep credentials apart from clusters."""
    whole = json.loads(Path(cluster.kubeconfig).read_text())
    credentials, clusters = folder / "credentials", folder / "clusters"
    credentials.write_text(json.dumps({"apiVersion": "v1", "kind": "Config", "current-context": "c",
                                       "users": whole["users"]}))
    clusters.write_text(json.dumps({"apiVersion": "v1", "kind": "Config", "clusters": whole["clusters"],
                                    "contexts": whole["contexts"]}))
    return credentials, clusters


def test_kubeconfig_files_are_kubectls(tmp_path, monkeypatch):
    present, absent = tmp_path / "present", tmp_path / "absent"
    present.write_text("{}")
    assert kubeconfig_files(str(present)).paths == (present,)
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([str(absent), str(present), ""]))
    assert kubeconfig_files(None).paths == (present,), "kubectl skips files that do not exist"
    monkeypatch.setenv("KUBECONFIG", str(absent))
    assert kubeconfig_files(None).paths == (absent,)
    monkeypatch.delenv("KUBECONFIG")
    assert kubeconfig_files(None).paths == (Path("~/.kube/config").expanduser(),)
    with pytest.raises(KubeconfigError, match="--kubeconfig is empty"):
        kubeconfig_files(" ")


def test_the_first_file_to_name_an_entry_or_set_the_context_wins():
    first = {"current-context": "a", "contexts": [{"name": "a", "context": {"cluster": "one"}}]}
    second = {"current-context": "b", "contexts": [{"name": "a", "context": {"cluster": "two"}},
                                                   {"name": "b", "context": {"cluster": "two"}}]}
    assert merged([first, second]) == {"current-context": "a", "contexts": [
        {"name": "a", "context": {"cluster": "one"}}, {"name": "b", "context": {"cluster": "two"}}]}


def test_status_reads_a_cluster_whose_kubeconfig_is_split_over_two_files_kubeconfig_lists(cluster, tmp_path, monkeypatch, capsys):
    experiment = load_experiment(STACK)
    cluster.experiment_routes(experiment, task_pods(experiment, {p.task.name: "srv-00" for p in experiment.plan.placements}))
    cluster.routes["/api/v1/nodes"] = listed("Node", [{"metadata": {"name": "srv-00"}}])
    credentials, clusters = split_kubeconfig(cluster, tmp_path)
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join(map(str, (credentials, clusters))))
    checked = read_kubeconfig(kubeconfig_files(None), None)
    assert checked.context == {"cluster": "c", "user": "u"}
    assert main(["status", STACK]) == 0, capsys.readouterr().err
    assert "6/6 tasks running as planned" in capsys.readouterr().out
