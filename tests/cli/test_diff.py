"""`python -m components diff`: two experiments side by side, as an engineer compares them."""

from __future__ import annotations

import json

from components.cli.main import main


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
    assert servers["ps-srv-03"] == {"server": "ps-srv-03", "before": [], "after": ["ps-3"], "change": "appears"}
    assert servers["wk-srv-01"]["after"] == [f"worker-{i}" for i in range(10, 20)]
    assert servers["srv-01"]["before"] == ["ps-1", *(f"worker-{i}" for i in range(10, 20))]
    assert len(result["plan"]["moved"]) == 56  # every task: chief, 5 PS, 50 workers
    assert result["plan"]["moved"]["worker-12"] == {"before": "srv-01", "after": "wk-srv-01"}
    # Objects matched by name: a replicated Job of the JobSet per role per server, so new servers mean
    # new ones; the cluster's addresses name them (ConfigMap); NetworkPolicy and Namespace do not differ.
    objects = result["objects"]
    assert {kind: {k: len(v) for k, v in changes.items()} for kind, changes in objects.items()} == {
        "Node": {"added": 10, "removed": 5, "changed": 0},
        "ConfigMap": {"added": 0, "removed": 0, "changed": 1},
        "JobSet": {"added": 0, "removed": 0, "changed": 1},  # its list of replicated Jobs
        "replicatedJob": {"added": 10, "removed": 10, "changed": 1},  # the chief's too
    }
    assert objects["ConfigMap"]["changed"] == ["tfk8s-trainer-env"]
    assert sorted(objects["replicatedJob"]["removed"]) == [f"{role}-srv-0{i}" for role in ("ps", "worker") for i in range(5)]
    assert "worker-wk-srv-04" in objects["replicatedJob"]["added"]
    assert objects["replicatedJob"]["changed"] == ["chief"]


def test_the_text_names_the_changes_in_the_stack_files_own_keys(capsys):
    code, out = diff(capsys, "scene1-case2", "scene1-case3")
    assert code == 1
    assert "  tfk8s:nodePools[servers].nodes: +srv-05 … srv-09" in out
    assert "  tfk8s:cluster.ps.replicas: 5 -> 10" in out
    assert "  tfk8s:cluster.workers.replicas: 50 -> 100" in out
    assert any(line.startswith("  srv-07") and line.endswith("appears") for line in out.splitlines())
    assert "  ConfigMap: changed 1 (tfk8s-trainer-env)" in out  # the cluster lists the new tasks
    # A PS and a worker replicated Job per new server. Every existing task restarts to read the larger
    # cluster (a new JobSet), and the old PS get less memory (smaller shards).
    assert "  replicatedJob: added 10 (ps-srv-05, ps-srv-06, ps-srv-07, ps-srv-08, ps-srv-09, worker-srv-05, … 4 more)" in out
    assert "changed 11 (chief, ps-srv-00, ps-srv-01, ps-srv-02, ps-srv-03, ps-srv-04, … 5 more)" in out
    assert "  JobSet: changed 1 (tf)" in out
    assert "Service" not in out


def test_a_stack_against_itself_is_the_same(capsys):
    code, out = diff(capsys, "scene1-case2", "scene1-case2")
    assert (code, out.strip()) == (0, "scene1-case2 and scene1-case2: the same experiment")
    code, out = diff(capsys, "gpu-p40", "gpu-p40", "--json")
    result = json.loads(out)
    assert code == 0 and result["same"] and result["config"] == [] and result["objects"] == {}


def test_a_bad_stack_is_exit_2_with_its_message(capsys):
    assert main(["diff", "scene1-case2", "no-such-stack"]) == 2
    assert "stack 'no-such-stack': no file" in capsys.readouterr().err
