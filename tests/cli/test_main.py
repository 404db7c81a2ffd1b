"""`python -m components plan <stack>`: the server-by-task table, from the stack file alone."""

from __future__ import annotations

import json
import subprocess
import sys

from components.cli.main import main
from tests.harness import PROJECT_ROOT
from tests.stack_variants import write_variant


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "components", *args],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_plan_prints_one_row_per_server():
    result = run_cli("plan", "scene1-case3")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("stack scene1-case3 · placement colocated (strict)")
    assert "10 PS" in lines[1] and "100 workers" in lines[1]
    rows = [line.split() for line in lines if line.startswith("srv-")]
    assert len(rows) == 10
    assert all(row == [f"srv-0{i}", "servers", "1", "10"] for i, row in enumerate(rows))
    # The JobSet's scheduler picks which indexes: they are listed once, for the pool.
    assert any(line.split() == ["(scheduler)", "servers", "chief-0,", "ps-0..9,", "worker-0..99"] for line in lines)
    assert "the scheduler picks which task indexes (" in result.stdout


def test_plan_shows_uneven_counts_as_a_range(tmp_path):
    """7 workers on 3 servers: 3, 2, 2, and the scheduler picks which server holds 3."""
    path = write_variant(tmp_path, "scene1-case1", "uneven", lambda v: (
        v["tfk8s:nodePools"][0].update(nodes=["srv-00", "srv-01", "srv-02"]),
        v["tfk8s:cluster"]["ps"].update(replicas=3),
        v["tfk8s:cluster"]["workers"].update(replicas=7),
    ))
    result = run_cli("plan", path)
    assert result.returncode == 0, result.stderr
    rows = [line.split() for line in result.stdout.splitlines() if line.startswith("srv-")]
    assert rows == [[f"srv-0{i}", "servers", "1", "2-3"] for i in range(3)]
    assert "the scheduler picks which task indexes and which servers hold one more" in result.stdout


def test_plan_json_matches_the_stack_output(capsys):
    assert main(["plan", "scene2-case1", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == {
        "pinning": "count",
        "perServer": {"ps-srv-00": {"ps": 1, "worker": 0}, "wk-srv-00": {"ps": 0, "worker": 10}},
        "placement": {},
        "unpinned": {"ps-servers": ["chief-0", "ps-0"], "worker-servers": [f"worker-{i}" for i in range(10)]},
    }


def test_plan_json_under_the_statefulset_model_pins_each_task(capsys, tmp_path):
    path = write_variant(tmp_path, "scene2-case1", "sts", lambda v: v["tfk8s:cluster"].update(workload="statefulset"))
    assert main(["plan", path, "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["pinning"] == "task"
    assert printed["placement"] == {"ps-srv-00": ["ps-0"], "wk-srv-00": [f"worker-{i}" for i in range(10)]}
    assert printed["unpinned"] == {"ps-servers": ["chief-0"]}


def test_plan_of_unknown_stack_names_the_known_ones():
    result = run_cli("plan", "scene9-case9")
    assert result.returncode == 2
    assert "stack 'scene9-case9': no file" in result.stderr
    assert "scene1-case3" in result.stderr


def test_plan_of_a_bad_stack_file_explains(tmp_path):
    bad = tmp_path / "Pulumi.typo.yaml"
    bad.write_text(
        "config:\n"
        "  tfk8s:nodePools: [{name: servers, nodes: [srv-00]}]\n"
        "  tfk8s:cluster:\n"
        "    placement: colocated\n"
        "    ps: {replicas: 1, pool: servers}\n"
        "    workers: {replica: 10, pool: servers}\n"
    )
    result = run_cli("plan", str(bad))
    assert result.returncode == 2
    assert "stack 'typo'" in result.stderr
    assert "tfk8s:cluster.workers.replica: unknown key (did you mean 'replicas'?)" in result.stderr
    assert result.stdout == ""


def test_a_closed_pipe_ends_the_command_quietly():
    """`python -m components plan ... | head` must not end in a BrokenPipe traceback."""
    process = subprocess.Popen(
        [sys.executable, "-m", "components", "plan", "scene1-case4"],
        cwd=PROJECT_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    process.stdout.close()  # the reader is gone before the table is written
    _, stderr = process.communicate(timeout=60)
    assert stderr.decode() == ""


def test_status_without_a_kubeconfig_names_the_file_and_how_to_start_a_cluster(tmp_path):
    result = run_cli("status", "scene1-case3", "--kubeconfig", str(tmp_path / "missing"))
    assert result.returncode == 2
    assert f"no kubeconfig at {tmp_path / 'missing'} (given with --kubeconfig)" in result.stderr
    assert "make cluster-up STACK=scene1-case3" in result.stderr


def test_status_against_an_api_server_that_does_not_answer_says_so_in_one_line(tmp_path):
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # nothing listens here once the probe is closed
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": f"https://127.0.0.1:{port}"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "c",
            }
        )
    )
    result = run_cli("status", "scene1-case3", "--kubeconfig", str(kubeconfig))
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1, result.stderr
    assert f"the API server at https://127.0.0.1:{port} does not answer" in result.stderr
