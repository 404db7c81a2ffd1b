"""`python -m components diff`: two experiments side by side, as an engineer compares them."""

from __future__ import annotations

import json

import yaml

from components.cli.main import main
from components.spec.stack_files import read_stack_values
from tests.stack_variants import write_scaled


def diff(capsys, *args) -> tuple[int, str]:
    code = main(["diff", *args])
    return code, capsys.readouterr().out


def test_scene1_against_scene2_lists_exactly_what_changes(capsys):
    code, out = diff(capsys, "scene1-case2", "scene2-case2", "--json")
    assert code == 1
    result = json.loads(out)
    assert result["same"] is False
    assert {c["key"]: (c["before"], c["after"]) for c in result["config"]} == {
        "tfk8s:nodePools[servers]": ({"nodes": [f"srv-0{i}" for i in range(5)]}, None),
        "tfk8s:nodePools[ps-servers]": (None, {"nodes": [f"ps-srv-0{i}" for i in range(5)]}),
        "tfk8s:nodePools[worker-servers]": (None, {"nodes": [f"wk-srv-0{i}" for i in range(5)]}),
        "tfk8s:cluster.placement": ("colocated", "isolated"),
        "tfk8s:cluster.ps.pool": ("servers", "ps-servers"),
        "tfk8s:cluster.workers.pool": ("servers", "worker-servers"),
    }
    servers = {s["server"]: s for s in result["plan"]["servers"]}
    assert {name for name, s in servers.items() if s["change"] == "disappears"} == {
        "(scheduler) servers", *(f"srv-0{i}" for i in range(5))
    }
    # Counts per server: the JobSet's scheduler picks which task index runs where.
    assert servers["ps-srv-03"] == {"server": "ps-srv-03", "before": None, "after": {"ps": 1, "worker": 0},
                                    "tasksBefore": [], "tasksAfter": [], "change": "appears"}
    assert servers["wk-srv-01"]["after"] == {"ps": 0, "worker": 10}
    assert servers["srv-01"]["before"] == {"ps": 1, "worker": 10}
    assert servers["(scheduler) worker-servers"]["tasksAfter"] == [f"worker-{i}" for i in range(50)]
    assert len(result["plan"]["moved"]) == 56  # every task: chief, 5 PS, 50 workers
    assert result["plan"]["moved"]["worker-12"] == {"before": "(scheduler) servers", "after": "(scheduler) worker-servers"}
    # Objects matched by name: a replicated Job of the JobSet per role, whose pods now select other
    # servers; the cluster's addresses do not change; NetworkPolicy and Namespace do not differ.
    objects = result["objects"]
    assert {kind: {k: len(v) for k, v in changes.items()} for kind, changes in objects.items()} == {
        "Node": {"added": 10, "removed": 5, "changed": 0},
        "replicatedJob": {"added": 0, "removed": 0, "changed": 3},
    }
    assert objects["replicatedJob"]["changed"] == ["chief", "ps", "worker"]


def test_under_the_statefulset_model_the_diff_names_the_tasks_on_each_server(capsys, tmp_path):
    files = []
    for stack in ("scene1-case2", "scene2-case2"):
        name, values = read_stack_values(stack)
        values["tfk8s:cluster"]["workload"] = "statefulset"
        files.append(tmp_path / f"Pulumi.{name}.yaml")
        files[-1].write_text(yaml.safe_dump({"config": values}))
    code, out = diff(capsys, *map(str, files), "--json")
    servers = {s["server"]: s for s in json.loads(out)["plan"]["servers"]}
    assert servers["ps-srv-03"]["tasksAfter"] == ["ps-3"]
    assert servers["wk-srv-01"]["tasksAfter"] == [f"worker-{i}" for i in range(10, 20)]
    assert servers["srv-01"]["tasksBefore"] == ["ps-1", *(f"worker-{i}" for i in range(10, 20))]
    assert json.loads(out)["plan"]["moved"]["worker-12"] == {"before": "srv-01", "after": "wk-srv-01"}


def test_the_text_names_the_changes_in_the_stack_files_own_keys(capsys):
    code, out = diff(capsys, "scene1-case2", "scene1-case3")
    assert code == 1
    assert "  tfk8s:nodePools[servers].nodes: +srv-05 … srv-09" in out
    assert "  tfk8s:cluster.ps.replicas: 5 -> 10" in out
    assert "  tfk8s:cluster.workers.replicas: 50 -> 100" in out
    assert any(line.startswith("  srv-07") and line.endswith("appears") for line in out.splitlines())
    assert "  ConfigMap: changed 1 (tfk8s-trainer-env)" in out  # the cluster lists the new tasks
    # One replicated Job per role, whatever the number of servers: each has more tasks, and the
    # old PS get less memory (smaller shards); the diff stays a line per server and role.
    assert "  replicatedJob: changed 3 (chief, ps, worker)" in out
    assert "  JobSet: changed 1 (tf)" not in out  # the same replicated Jobs
    assert "Service" not in out
    assert len(out.splitlines()) < 25


def test_the_diff_of_two_large_experiments_stays_a_line_per_server(capsys, tmp_path):
    """scene1-case4 against ten times its servers and tasks: a changed count per server, not 2,000 lines."""
    code, out = diff(capsys, write_scaled(tmp_path, "scene1-case4", 10, "large"), write_scaled(tmp_path, "scene1-case4", 11, "larger"))
    assert code == 1
    # 20 servers appear (a line each), the scheduler's tasks change, and a few lines of config and objects.
    assert len(out.splitlines()) < 20 + 25, out
    assert "  replicatedJob: changed 3 (chief, ps, worker)" in out


def test_a_stack_against_itself_is_the_same(capsys):
    code, out = diff(capsys, "scene1-case2", "scene1-case2")
    assert (code, out.strip()) == (0, "scene1-case2 and scene1-case2: the same experiment")
    code, out = diff(capsys, "gpu-p40", "gpu-p40", "--json")
    result = json.loads(out)
    assert code == 0 and result["same"] and result["config"] == [] and result["objects"] == {}


def test_two_stacks_alike_but_for_their_names_are_the_same_experiment(capsys, tmp_path):
    """The pods' hash annotations hash TF_CONFIG's addresses, which name the namespace: `diff` sets the
    stack and namespace aside there too, and still shows the tasks rolling for a change that rolls them."""
    from tests.stack_variants import write_variant

    def with_logs(values):
        values["tfk8s:logs"] = {}

    a = write_variant(tmp_path, "scene1-case2", "ranking-a", with_logs)
    b = write_variant(tmp_path, "scene1-case2", "ranking-b", with_logs)
    code, out = diff(capsys, a, b)
    assert (code, out.strip()) == (0, "ranking-a and ranking-b: the same experiment"), out

    def more_steps(values):
        with_logs(values)
        values["tfk8s:trainer"]["steps"] = 999

    code, out = diff(capsys, a, write_variant(tmp_path, "scene1-case2", "ranking-c", more_steps), "--json")
    assert code == 1
    # The trainer's settings changed: every task rolls, the log collector (its code alone hashed) does not.
    objects = json.loads(out)["objects"]
    assert objects["replicatedJob"]["changed"] == ["chief", "ps", "worker"]
    assert "Deployment" not in objects, objects


def test_a_bad_stack_is_exit_2_with_its_message(capsys):
    assert main(["diff", "scene1-case2", "no-such-stack"]) == 2
    assert "stack 'no-such-stack': no file" in capsys.readouterr().err


def test_a_changed_program_shows_in_the_diff(capsys, tmp_path):
    from tests.objects.test_program import TF2_SOURCE, program_values

    files = []
    for name, args in (("prog-a", ["--steps", "100"]), ("prog-b", ["--steps", "200"])):
        _, values = program_values({"source": TF2_SOURCE, "command": ["python", "train.py"], "args": args})
        files.append(tmp_path / f"Pulumi.{name}.yaml")
        files[-1].write_text(yaml.safe_dump({"config": values}))
    code, out = diff(capsys, *map(str, files))
    assert "tfk8s:program.args: +200 -100" in out, out
    assert "replicatedJob: changed 3 (chief, ps, worker)" in out, "every task rolls"


def test_two_experiments_in_one_teams_namespace_differ_only_by_what_their_stacks_change(capsys, tmp_path):
    from tests.stack_variants import write_variant

    def shared(workers):
        def edit(values):
            values["tfk8s:cluster"]["namespace"] = {"name": "ml-team", "existing": True}
            values["tfk8s:cluster"]["workers"]["replicas"] = workers
        return edit

    # Each object of one is matched with the other's by its name without the stack's.
    a = write_variant(tmp_path, "scene1-case2", "ranking-a", shared(50))
    code, out = diff(capsys, a, write_variant(tmp_path, "scene1-case2", "ranking-c", shared(45)), "--json")
    result = json.loads(out)
    assert code == 1 and [change["key"] for change in result["config"]] == ["tfk8s:cluster.workers.replicas"]
    assert result["objects"] == {
        "ConfigMap": {"added": [], "removed": [], "changed": ["<stack>-tfk8s-trainer-env"]},
        "replicatedJob": {"added": [], "removed": [], "changed": ["chief", "ps", "worker"]},
    }


def test_tensorboard_and_the_log_archive_show_in_the_config(capsys, tmp_path):
    """Every top-level key is compared, tfk8s:tensorboard and tfk8s:logs among them."""
    from tests.stack_variants import write_variant

    def side_pods(values):
        values["tfk8s:cluster"]["chief"] = {"checkpointVolume": {"size": "1Gi"}}
        values["tfk8s:tensorboard"] = {"image": "tensorflow/tensorflow:2.21.0"}
        values["tfk8s:logs"] = {"size": "2Gi"}

    def volume_only(values):
        values["tfk8s:cluster"]["chief"] = {"checkpointVolume": {"size": "1Gi"}}

    a = write_variant(tmp_path, "scene1-case1", "plain", volume_only)
    b = write_variant(tmp_path, "scene1-case1", "side-pods", side_pods)
    code, out = diff(capsys, a, b, "--json")
    config = {change["key"]: (change["before"], change["after"]) for change in json.loads(out)["config"]}
    assert code == 1 and list(config) == ["tfk8s:tensorboard", "tfk8s:logs"]
    assert config["tfk8s:tensorboard"][0] is None and config["tfk8s:tensorboard"][1]["image"].endswith(":2.21.0")
    assert config["tfk8s:logs"] == (None, {"size": "2Gi", "cpu": "100m", "memory": "128Mi"})
