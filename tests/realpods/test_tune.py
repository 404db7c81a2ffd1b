"""`tune` on the real nodes, through the Pulumi engine as `make tune` runs it: tfk8s's trainer with its
embedding on one PS of three is found hot and partitioned in round 1, each round measured the same
way; a team's program that prints progress lines runs a round and stops with the advice its finding
gives; a program that prints none ends tune with exit 1, naming what is missing. Every round is
taken down.

Whether round 1 is faster is not asserted here: the two real nodes share this machine's two cores,
which the workers and the PS fill together, so partitioning moves the PS' work between processes
without freeing a core (docs/benchmarks.md, `make bench-trainer`: examples/s barely move between
partitionings here; the seeds' gain needs servers of their own). On 2026-12-07 round 1 ran at x0.96
of round 0, and tune stopped on its 5% rule."""

from __future__ import annotations

import json
from pathlib import Path

from kubernetes import client

from components.plan import labels as L
from components.tune import round_run
from tests.realpods.conftest import UNTIL_STOPPED, RealCluster, scaled_to_real_nodes
from tests.stack_variants import write_variant
from tools.engine.__main__ import tune_main
from tools.engine.tune import ToolchainEngine
from tools.engine.workspace import EngineDirs

ROUND_SECONDS = "30"  # diagnose's least window: two metrics-server refreshes
HOT_TRAINER = {"partition": "none", "steps": UNTIL_STOPPED, "batchSize": 1024, "idsPerExample": 128, "embeddingDim": 64}


def hot_ps_stack(cluster: RealCluster) -> Path:
    """scene1-case1's shape with tfk8s's trainer: 3 PS short of CPU (200m) and 2 workers on srv-00, the
    seed's sparse-heavy model with its table whole on one PS (`partition: none`)."""

    def edit(values: dict) -> None:
        scaled_to_real_nodes("servers", "servers", HOT_TRAINER, ps=3)(values)
        values["tfk8s:cluster"]["ps"]["cpu"] = "200m"
        values["tfk8s:trainer"]["embeddingRows"] = 1_000_000
        del values["tfk8s:cluster"]["chief"]["memory"]  # as tfk8s sizes it: the chief builds the 1M-row model

    return Path(write_variant(cluster.stacks_dir, "scene1-case1", "real-tune-hot", edit))


def program_stack(cluster: RealCluster, name: str, *flags: str) -> Path:
    """scene2-case1's shape (the PS on srv-00, the workers on srv-01) running the bottleneck program
    with its matrix whole on one PS: a team's program, whose hot PS no stack key changes."""

    def edit(values: dict) -> None:
        scaled_to_real_nodes("ps-servers", "worker-servers", {})(values)
        del values["tfk8s:trainer"]
        values["tfk8s:program"] = {
            "source": "tests/team_programs/bottleneck",
            "command": ["python", "train.py"],
            "args": ["--load", "hot-ps", "--steps", str(UNTIL_STOPPED), *flags],
        }
        values["tfk8s:cluster"]["ps"]["memory"] = "1Gi"

    return Path(write_variant(cluster.stacks_dir, "scene2-case1", name, edit))


def tuned(cluster: RealCluster, stack_file: Path, state: Path, capsys, *flags: str) -> tuple[int, dict, str]:
    code = tune_main(
        [str(stack_file), "--kubeconfig", str(cluster.kubeconfig), "--state", str(state), "--json", *flags]
    )
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else {}), err


def assert_all_taken_down(cluster: RealCluster, state: Path, *stack_files: Path) -> None:
    engine = ToolchainEngine(cluster.kubeconfig, EngineDirs(state))
    for stack_file in stack_files:
        stack = stack_file.name.removeprefix("Pulumi.").removesuffix(".yaml")
        pods = client.CoreV1Api(cluster.api).list_pod_for_all_namespaces(label_selector=L.selector_text(stack)).items
        assert [pod.metadata.name for pod in pods] == [], f"{stack}: pods left"
        assert not engine.is_up(stack_file), f"{stack}: the engine's state still holds objects"


def test_tune_finds_the_hot_ps_and_runs_it_partitioned(real_cluster, tmp_path, capsys):
    stack_file = hot_ps_stack(real_cluster)
    flags = ("--rounds", "2", "--round-seconds", ROUND_SECONDS)
    code, result, err = tuned(real_cluster, stack_file, tmp_path / "engine", capsys, *flags)
    assert code == 0, (result, err[-3000:])
    first, second = result["rounds"]
    assert first["bottleneck"] == "hot-ps", result
    assert {"key": "tfk8s:trainer.partition", "from": "none", "to": "auto"} in first["changes"]
    assert second["stack"] == "real-tune-hot-tune1" and Path(second["file"]).exists()
    assert 'partition: auto' in Path(second["file"]).read_text()
    # Each round measured, and compared with round 0 from the same run's figures.
    assert first["examples_per_s"] > 0 and second["examples_per_s"] > 0, result
    assert second["ratio"] == round(second["examples_per_s"] / first["examples_per_s"], 3)
    assert result["best"]["stack"] in ("real-tune-hot", "real-tune-hot-tune1")
    assert_all_taken_down(real_cluster, tmp_path / "engine", stack_file, Path(second["file"]))


def test_a_teams_program_stops_with_the_advice_its_finding_gives(real_cluster, tmp_path, capsys):
    stack_file = program_stack(real_cluster, "real-tune-program", "--progress")
    code, result, err = tuned(real_cluster, stack_file, tmp_path / "engine", capsys, "--round-seconds", ROUND_SECONDS)
    assert code == 0, (result, err[-3000:])
    [only] = result["rounds"]
    assert only["bottleneck"] == "hot-ps" and only["changes"] == [] and only["examples_per_s"] > 0, result
    assert "changes no stack key" in result["stopped"] and "partition" in result["stopped"], result
    assert_all_taken_down(real_cluster, tmp_path / "engine", stack_file)


def test_a_program_without_progress_lines_ends_tune_naming_them(real_cluster, tmp_path, capsys, monkeypatch):
    # Its round waits this long for a first line once every task runs (300 s in use): what the
    # test shows is what tune says and takes down when none comes, not how long it waits.
    monkeypatch.setattr(round_run, "FIRST_LINE_CEILING_S", 30.0)
    stack_file = program_stack(real_cluster, "real-tune-silent")
    code, result, err = tuned(real_cluster, stack_file, tmp_path / "engine", capsys, "--round-seconds", ROUND_SECONDS)
    assert code == 1, (result, err[-3000:])
    assert result["best"] is None
    assert "chief-0 printed no progress line" in result["stopped"] and "examples/s" in result["stopped"], result
    assert_all_taken_down(real_cluster, tmp_path / "engine", stack_file)
