"""What `import-tfjob` says when the TFJob or a flag makes a stack tfk8s refuses: the TFJob field or
the flag the user gave, never the stack key it would have become; and its exit codes, as its --help,
docs/commands.md and the command itself give them."""

from __future__ import annotations

import copy
import re
import shlex
from pathlib import Path

import pytest

from components.cli.main import main as components_main
from tests.migrate.test_import_tfjob import CHIEF_PS_WORKERS, run_import, stacks_dir  # noqa: F401 (a fixture)

PROJECT = Path(__file__).resolve().parents[2]


def _with(change) -> dict:
    job = copy.deepcopy(CHIEF_PS_WORKERS)
    change(job["spec"])
    return job


def _ps_container(spec: dict) -> dict:
    return spec["tfReplicaSpecs"]["PS"]["template"]["spec"]["containers"][0]


@pytest.mark.parametrize(
    "job, flags, named, key",
    [
        pytest.param(
            _with(lambda spec: _ps_container(spec)["resources"]["requests"].update(memory="4GB")),
            (),
            "spec.tfReplicaSpecs.PS.template.spec.containers[0].resources.requests.memory: must be a Kubernetes "
            "quantity such as '500m', '2', '4Gi' (got '4GB')",
            "tfk8s:cluster.ps.memory",
            id="a PS memory request that is no quantity",
        ),
        pytest.param(
            _with(lambda spec: _ps_container(spec)["resources"].update(limits={"cpu": "lots"}, requests={})),
            (),
            "spec.tfReplicaSpecs.PS.template.spec.containers[0].resources.limits.cpu: must be a Kubernetes quantity",
            "tfk8s:cluster.ps.cpu",
            id="a CPU limit that is no quantity, named where it was (limits)",
        ),
        pytest.param(
            _with(lambda spec: spec.update(runPolicy={"backoffLimit": -1})),
            (),
            "spec.runPolicy.backoffLimit: ",
            "tfk8s:cluster.restarts",
            id="a negative backoffLimit: one line, though two stack keys take it",
        ),
        pytest.param(
            _with(lambda spec: spec.update(runPolicy={"ttlSecondsAfterFinished": -5})),
            (),
            "spec.runPolicy.ttlSecondsAfterFinished: ",
            "tfk8s:cluster.ttlSecondsAfterFinished",
            id="a negative ttlSecondsAfterFinished",
        ),
        pytest.param(
            _with(lambda spec: spec["tfReplicaSpecs"]["Worker"].update(replicas=100_000)),
            (),
            "spec.tfReplicaSpecs.Worker.replicas: 100,000 workers and 2 PS make 100,003 tasks",
            "tfk8s:cluster.workers.replicas",
            id="more workers than tfk8s plans",
        ),
        pytest.param(
            _with(
                lambda spec: [
                    role["template"]["spec"]["containers"][0].update(command=[])
                    for role in spec["tfReplicaSpecs"].values()
                ]
            ),
            (),
            "spec.tfReplicaSpecs.Worker.template.spec.containers[0].command: command is empty ([])",
            "tfk8s:program",
            id="an empty command",
        ),
        pytest.param(
            CHIEF_PS_WORKERS,
            ("--nodes", "srv-00,Bad_Node"),
            "--nodes: must be a node name: lower-case letters, digits, '-' and '.', starting and ending with a letter "
            "or digit (got 'Bad_Node')",
            "tfk8s:nodePools",
            id="--nodes with a name that is no node name",
        ),
        pytest.param(
            CHIEF_PS_WORKERS,
            ("--pool", "Bad Pool"),
            "--pool: must be a pool name",
            "tfk8s:",
            id="--pool that is no pool name",
        ),
    ],
)
def test_a_refused_value_is_named_by_its_tfjob_field_or_flag(tmp_path, capsys, stacks_dir, job, flags, named, key):  # noqa: F811
    code, out, err = run_import(tmp_path, capsys, job, *(flags or ("--nodes", "srv-00")))
    assert code == 1
    assert out == "" and not (stacks_dir / "Pulumi.imported.yaml").exists(), "nothing written"
    assert err.startswith("import-tfjob: ") and "TFJob 'ctr-model' makes a stack tfk8s refuses:\n  - " in err, err
    assert named in err
    assert key not in err, f"the stack key {key} is no field the user wrote"
    lines = [line for line in err.splitlines() if line.startswith("  - ")]
    assert len(lines) == len(set(lines)), "each problem once"


@pytest.mark.parametrize("image, said", [
    ("registry.example.com/ml/ctr", "tfk8s runs images pinned to a tag other than latest or a digest"),
    ("registry.example.com/ml/ctr:latest", "tfk8s runs images pinned to a tag other than latest or a digest"),
    ("", "is no image reference the kubelet can pull"),
    ("Ml/Ctr:1", "is no image reference the kubelet can pull"),
])
def test_an_image_flag_that_is_not_pinned_is_named_as_given(image, said, tmp_path, capsys, stacks_dir):  # noqa: F811
    code, _, err = run_import(tmp_path, capsys, CHIEF_PS_WORKERS, "--image", image)
    assert code == 1
    assert err.startswith(f"import-tfjob: --image {shlex.quote(image)}") and said in err, err


@pytest.mark.parametrize(
    "nodes, said",
    [
        pytest.param("", "argument --nodes: no node name in ''", id="empty"),
        pytest.param(" , ", "argument --nodes: no node name in ' , '", id="commas only"),
        pytest.param("srv-00,,srv-01", "argument --nodes: an empty node name in 'srv-00,,srv-01'", id="an empty name"),
    ],
)
def test_nodes_without_a_name_are_refused_not_read_as_left_out(tmp_path, capsys, stacks_dir, nodes, said):  # noqa: F811
    with pytest.raises(SystemExit) as exited:
        run_import(tmp_path, capsys, CHIEF_PS_WORKERS, "--nodes", nodes)
    assert exited.value.code == 2
    assert said in capsys.readouterr().err
    assert not stacks_dir.exists()


def test_a_file_that_cannot_be_read_is_exit_1_as_help_and_docs_say(tmp_path, capsys, stacks_dir):  # noqa: F811
    code = components_main(["import-tfjob", str(tmp_path / "missing.yaml"), "--stack", "imported"])
    assert code == 1
    assert "missing.yaml: no such file; nothing written" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        components_main(["import-tfjob", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert "1 when nothing usable came of FILE (it cannot be read as text," in shown
    assert not re.search(r"2 when FILE", shown), "help and the exit-code table agree: FILE is exit 1"
    docs = " ".join((PROJECT / "docs" / "commands.md").read_text().split())
    assert "`import-tfjob` exits 1 when nothing usable came of FILE (unreadable as text," in docs
    assert "2 when a flag's value is not of its form or the stack file cannot be written" in shown
    assert "and 2 when a flag's value is not of its form" in docs
