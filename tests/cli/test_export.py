"""`python -m components export STACK`: the JSON trainer.local reads, its shape written once
(trainer/stack_export.py) and read back by the same module."""

from __future__ import annotations

import json

import pytest
import yaml

from components.cli.main import _parser, main
from components.spec.stack_files import PROJECT_ROOT, read_stack_values
from tests.objects.test_program import TF2_SOURCE, program_values
from tests.runs import SHIPPED_STACKS
from trainer.stack_export import ExportError, ProgramExport, StackExport, export_text, read_export_text


def export_of(capsys, stack: str) -> str:
    assert main(["export", stack]) == 0
    return capsys.readouterr().out


def program_stack(tmp_path, name: str, program: dict, **cluster) -> str:
    _, values = program_values(program, **cluster)
    path = tmp_path / f"Pulumi.{name}.yaml"
    path.write_text(yaml.safe_dump({"config": values}))
    return str(path)


@pytest.mark.parametrize("stack", SHIPPED_STACKS)
def test_every_stacks_export_reads_back_to_the_same_text(capsys, stack):
    printed = export_of(capsys, stack)
    export = read_export_text(printed)
    assert export.stack == stack and export.program is None
    assert export_text(export) + "\n" == printed


def test_a_programs_export_reads_back_to_the_same_text(capsys, tmp_path):
    stack = program_stack(
        tmp_path,
        "prog",
        {
            "source": TF2_SOURCE,
            "command": ["python", "train.py"],
            "env": {"MODE": "fast", "TOKEN": {"secret": "team-creds", "key": "token"}},
            "roles": {"evaluator": {"command": ["python", "eval.py"]}},
            "done": {"workers": 2},
        },
        evaluator={"replicas": 1},
    )
    printed = export_of(capsys, stack)
    export = read_export_text(printed)
    assert export_text(export) + "\n" == printed
    assert export.evaluator == 1 and export.program is not None
    assert export.program.argv["evaluator"] == ["python", "eval.py"]
    assert export.program.env["TOKEN"] == {"secret": "team-creds", "key": "token"}
    assert export.program.source == str(PROJECT_ROOT / TF2_SOURCE)
    assert not export.program.has_chief and export.program.workers_to_finish(5) == 2


def test_the_export_keeps_its_public_shape(capsys):
    """The keys users and scripts read, in the order they are printed."""
    data = json.loads(export_of(capsys, "scene1-case3"))
    assert list(data) == ["stack", "placement", "ps", "workers", "evaluator", "trainer", "cluster"]
    assert (data["stack"], data["placement"], data["ps"], data["workers"], data["evaluator"]) == (
        "scene1-case3", "colocated", 10, 100, 0
    )
    assert data["trainer"] == read_stack_values("scene1-case3")[1]["tfk8s:trainer"] | data["trainer"]


@pytest.mark.parametrize(
    "stack, ratio, ps_replicas, gpus, cpus",
    [
        pytest.param("scene1-case2", None, 5, 0, ("2", "1", "1"), id="the models' defaults where left out"),
        pytest.param("scene1-case1-hot-auto", None, 3, 0, ("200m", "400m", "200m"), id="millicores as written"),
        pytest.param("gpu-p40", "1:4", None, 1, ("2", "4", "1"), id="PS counted by a ratio"),
    ],
)
def test_the_export_gives_what_the_stack_gives_its_tasks(capsys, stack, ratio, ps_replicas, gpus, cpus):
    """The pools and each role's CPU request, as the bottleneck rules of `make report` read them."""
    cluster = read_export_text(export_of(capsys, stack)).cluster
    config = read_stack_values(stack)[1]
    assert cluster is not None
    assert cluster.pools == {pool["name"]: pool["nodes"] for pool in config["tfk8s:nodePools"]}
    assert (cluster.ratio, cluster.ps_replicas, cluster.worker_gpus) == (ratio, ps_replicas, gpus)
    assert (cluster.ps_cpu, cluster.worker_cpu, cluster.chief_cpu) == cpus
    assert (cluster.ps_pool, cluster.worker_pool) == (
        config["tfk8s:cluster"]["ps"]["pool"], config["tfk8s:cluster"]["workers"]["pool"]
    )
    cores = [float(cpu[:-1]) / 1000 if cpu.endswith("m") else float(cpu) for cpu in cpus]
    assert [cluster.ps_cpu_cores, cluster.worker_cpu_cores, cluster.chief_cpu_cores] == cores


SEED = {"stack": "s", "placement": "colocated", "ps": 1, "workers": 2, "evaluator": 0, "trainer": {}}
CLUSTER = {"pools": {"servers": ["srv-00"]}, "ratio": None,
           "ps": {"replicas": 1, "pool": "servers", "cpu": "2", "cpuCores": 2.0},
           "workers": {"pool": "servers", "cpu": "1", "cpuCores": 1.0, "gpus": 0},
           "chief": {"cpu": "1", "cpuCores": 1.0}}
PROGRAM = {"argv": {"chief": ["python", "t.py"], "ps": None, "worker": ["python", "t.py"]}, "env": {},
           "source": None, "done": "chief"}


@pytest.mark.parametrize(
    "export, message",
    [
        pytest.param([1, 2], "the export should be a JSON object (got [1, 2])", id="not an object"),
        pytest.param({k: v for k, v in SEED.items() if k != "workers"}, "the export has no 'workers'", id="missing"),
        pytest.param({**SEED, "ps": "2"}, "ps should be a whole number, 0 or more (got '2')", id="ps as text"),
        pytest.param({**SEED, "workers": -1}, "workers should be a whole number, 0 or more (got -1)", id="negative"),
        pytest.param({**SEED, "trainer": None}, "trainer should be a JSON object (got null)", id="trainer"),
        pytest.param({**SEED, "evaluator": True}, "evaluator should be a whole number", id="evaluator"),
        pytest.param({**SEED, "program": {**PROGRAM, "argv": ["python"]}}, "program.argv should be a JSON object",
                     id="argv"),
        pytest.param({**SEED, "program": {**PROGRAM, "argv": {"chief": "python t.py"}}},
                     "program.argv.chief should be a list of words or null (got 'python t.py')", id="words"),
        pytest.param({**SEED, "program": {**PROGRAM, "done": {"workers": "2"}}},
                     "program.done should be 'chief', 'workers', 'worker-0' or {'workers': N} (got {\"workers\": \"2\"})",
                     id="done"),
        pytest.param({**SEED, "program": {**PROGRAM, "source": 3}},
                     "program.source should be a folder's path or null (got 3)", id="source"),
        pytest.param({**SEED, "cluster": {**CLUSTER, "ps": {**CLUSTER["ps"], "cpuCores": "2"}}},
                     "cluster.ps.cpuCores should be a number of cores above 0 (got '2')", id="cores as text"),
        pytest.param({**SEED, "cluster": {**CLUSTER, "workers": {**CLUSTER["workers"], "cpu": 1}}},
                     "cluster.workers.cpu should be a CPU quantity as text, such as '500m' (got 1)", id="cpu"),
        pytest.param({**SEED, "cluster": {**CLUSTER, "pools": {"servers": "srv-00"}}},
                     "cluster.pools.servers should be a list of node names (got 'srv-00')", id="pool nodes"),
        pytest.param({**SEED, "cluster": {k: v for k, v in CLUSTER.items() if k != "chief"}},
                     "cluster.chief should be a JSON object (got null)", id="no chief"),
    ],
)
def test_a_malformed_export_is_refused_naming_the_key(export, message):
    with pytest.raises(ExportError) as error:
        StackExport.from_json(export)
    assert message in str(error.value)


def test_an_export_that_is_not_json_is_refused():
    with pytest.raises(ExportError, match="the export is not JSON"):
        read_export_text("stack: s\n")


def test_a_hand_written_export_may_leave_out_what_has_a_default():
    export = StackExport.from_json({k: v for k, v in SEED.items() if k != "evaluator"} | {"something_new": 1})
    assert export == StackExport("s", "colocated", 1, 2, {})
    assert export.cluster is None
    assert StackExport.from_json({**SEED, "cluster": CLUSTER}).to_json()["cluster"] == CLUSTER
    assert StackExport.from_json({**SEED, "evaluator": {"replicas": 1, "pool": "servers"}}).evaluator == 1
    assert ProgramExport.from_json({k: v for k, v in PROGRAM.items() if k != "source"}).source is None


def test_the_help_lists_every_command():
    """The module's opening docstring is `--help`'s summary: every command is on it."""
    from components.cli import main as cli

    (commands,) = [action for action in _parser()._actions if action.dest == "command"]
    assert commands.choices
    listed = {line.split()[3] for line in (cli.__doc__ or "").splitlines() if line.startswith("  python -m components ")}
    assert listed == set(commands.choices)
