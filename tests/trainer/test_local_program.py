"""`python -m trainer.local --stack <program stack>`: the team's own program as local processes,
with the TF_CONFIG and variables its pods get, in the trainer's environment (TensorFlow)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.terminal import ctrl_c_as_in_a_terminal
from tests.trainer.conftest import PROJECT_ROOT
from trainer.lifeline import LAUNCHER_PID_ENV

RUN_TIMEOUT = 240
SEED_RUN_SH = ["$(PS_HOSTS)", "$(WORKER_HOSTS)", "$(JOB_NAME)", "$(TASK_INDEX)", "$(PS_REPLICAS)", "$(WORKER_REPLICAS)"]


def program_stack(folder: Path, name: str, program: dict, ps: int = 2, workers: int = 2) -> str:
    """A stack file running `program` (JSON is YAML: no YAML library in this environment)."""
    config = {
        "tfk8s:nodePools": [{"name": "servers", "nodes": ["srv-00"]}],
        "tfk8s:cluster": {"placement": "colocated",
                          "ps": {"replicas": ps, "pool": "servers", "memory": "1Gi"} if ps else {"replicas": 0},
                          "workers": {"replicas": workers, "pool": "servers"}},
        "tfk8s:program": program,
    }
    path = folder / f"Pulumi.{name}.yaml"
    path.write_text(json.dumps({"config": config}))
    return str(path)


def tasks_of(launcher_pid: int) -> list[int]:
    """The processes a launcher started: they carry its PID in their environment."""
    marker = f"{LAUNCHER_PID_ENV}={launcher_pid}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != launcher_pid:
            try:
                if marker in (entry / "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def run_local(workdir: Path, stack: str, *args: str) -> tuple[int, str, str, list[int]]:
    launcher = subprocess.Popen(
        [sys.executable, "-m", "trainer.local", "--workdir", str(workdir), "--stack", stack, *args],
        cwd=PROJECT_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        stdout, stderr = launcher.communicate(timeout=RUN_TIMEOUT)
    finally:
        if launcher.poll() is None:
            launcher.terminate()
            launcher.communicate(timeout=60)
    return launcher.returncode, stdout, stderr, tasks_of(launcher.pid)


def test_a_tf2_program_runs_as_local_processes_to_success(tmp_path):
    stack = program_stack(tmp_path, "local-tf2", {"source": "tests/team_programs/tf2-ps",
                                                  "command": ["python", "train.py"], "args": ["--steps", "100"]})
    code, stdout, stderr, left = run_local(tmp_path / "run", stack)
    assert code == 0, stderr[-3000:]
    assert left == [], "every process the launcher started is stopped"
    result = json.loads(stdout.strip().splitlines()[-1])
    assert result["phase"] == "Succeeded" and result["done"] == "chief"
    assert result["log"].startswith("chief: 100 steps in"), result
    assert "chief-0 exited 0" in stdout


def test_a_tf1_program_through_run_sh_succeeds_when_every_worker_is_done(tmp_path):
    stack = program_stack(tmp_path, "local-tf1", {"source": "tests/team_programs/tf1-between-graph",
                                                  "command": ["sh", "run.sh"], "args": [*SEED_RUN_SH, "--steps", "200"],
                                                  "done": "workers"}, workers=1)
    code, stdout, stderr, left = run_local(tmp_path / "run", stack)
    assert code == 0, stderr[-3000:]
    assert left == []
    result = json.loads(stdout.strip().splitlines()[-1])
    assert result["phase"] == "Succeeded" and result["done"] == "workers"
    assert "steps to global step" in result["log"], result
    assert not (tmp_path / "run" / "chief-0").exists(), "done: workers runs no chief"


def test_done_n_of_the_workers_succeeds_once_n_exited_0_and_stops_the_straggler(tmp_path):
    straggler = 'if [ "$TASK_INDEX" = 2 ]; then exec sleep 3600; fi; echo "worker $TASK_INDEX done"'
    stack = program_stack(tmp_path, "local-n-of-m", {
        "command": ["sh", "-c", straggler], "done": {"workers": 2}, "roles": {"ps": {"command": ["sleep", "3600"]}},
    }, workers=3)
    code, stdout, stderr, left = run_local(tmp_path / "run", stack)
    assert code == 0, stderr[-3000:]
    assert "done when 2 of 3 workers exit 0" in stdout
    result = json.loads(stdout.strip().splitlines()[-1])
    assert result["phase"] == "Succeeded" and result["done"] == {"workers": 2}
    assert "worker-0 exited 0" in stdout and "worker-1 exited 0" in stdout and "worker-2 exited" not in stdout
    assert left == [], "the straggler and the PS are stopped"


def test_done_worker_0_succeeds_when_worker_0_exits_0_not_when_another_does(tmp_path):
    # worker-1 ends first; worker-0 only once worker-1 has; worker-2 never (a straggler).
    script = (
        'case "$TASK_INDEX" in 1) touch "$TMPDIR/worker-1-done"; echo "worker 1 done";; '
        '2) exec sleep 3600;; '
        '0) while [ ! -e "$TMPDIR/worker-1-done" ]; do sleep 0.1; done; echo "worker 0 done";; esac'
    )
    stack = program_stack(tmp_path, "local-worker-0", {
        "command": ["sh", "-c", script], "done": "worker-0", "roles": {"ps": {"command": ["sleep", "3600"]}},
    }, workers=3)
    code, stdout, stderr, left = run_local(tmp_path / "run", stack)
    assert code == 0, stderr[-3000:]
    assert "done when worker-0 exits 0" in stdout
    assert "worker-1 exited 0" in stdout and "worker-0 exited 0" in stdout
    result = json.loads(stdout.strip().splitlines()[-1])
    assert result["phase"] == "Succeeded" and result["done"] == "worker-0"
    assert result["log"].endswith("worker 0 done"), result
    assert "worker-2 exited" not in stdout
    assert left == [], "the straggler and the PS are stopped"


def test_a_workers_only_multiworkermirroredstrategy_program_runs_to_success(tmp_path):
    stack = program_stack(tmp_path, "local-mwms", {"source": "tests/team_programs/tf2-mwms",
                                                   "command": ["python", "train.py"], "args": ["--steps", "50"],
                                                   "done": "workers"}, ps=0)
    code, stdout, stderr, left = run_local(tmp_path / "run", stack)
    assert code == 0, stderr[-3000:]
    assert left == []
    result = json.loads(stdout.strip().splitlines()[-1])
    assert result["phase"] == "Succeeded"
    assert "50 steps over 2 workers" in result["log"], result
    assert not (tmp_path / "run" / "ps-0").exists(), "workers only: no PS"


def test_a_failing_program_ends_the_run_naming_the_task_and_its_last_line(tmp_path):
    stack = program_stack(tmp_path, "local-fails", {
        "command": ["sleep", "3600"],
        "roles": {"chief": {"command": ["python", "-c", "import sys; sys.exit('cannot open /data/vocabulary.txt')"]}},
    })
    code, stdout, stderr, left = run_local(tmp_path / "run", stack)
    assert code == 1
    assert "chief-0 exited 1: cannot open /data/vocabulary.txt" in stderr
    assert left == [], "the sleeping PS and workers are stopped too"


def test_what_cannot_run_here_is_refused_before_anything_starts(tmp_path):
    stack = program_stack(tmp_path, "local-entrypoint", {"args": ["--epochs", "1"]})
    code, _, stderr, _ = run_local(tmp_path / "run", stack)
    assert code == 1 and "the image's entrypoint cannot run as a local process; give command" in stderr
    assert not (tmp_path / "run" / "ps-0").exists()
    secret = program_stack(tmp_path, "local-secret", {"command": ["sleep", "1"],
                                                      "env": {"DATA_TOKEN_FOR_TEST": {"secret": "creds", "key": "t"}}})
    code, _, stderr, _ = run_local(tmp_path / "run2", secret)
    assert code == 1 and "DATA_TOKEN_FOR_TEST come from Secrets" in stderr


def test_ctrl_c_stops_every_task_of_a_program(tmp_path):
    stack = program_stack(tmp_path, "local-sleeps", {"command": ["sleep", "3600"]})
    launcher = subprocess.Popen(
        [sys.executable, "-m", "trainer.local", "--workdir", str(tmp_path / "run"), "--stack", stack],
        cwd=PROJECT_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=ctrl_c_as_in_a_terminal,
    )
    try:
        deadline = time.monotonic() + 60
        while len(tasks_of(launcher.pid)) < 5:  # the chief, 2 PS and 2 workers
            assert time.monotonic() < deadline and launcher.poll() is None, "the tasks did not start"
            time.sleep(0.2)
        launcher.send_signal(signal.SIGINT)
        assert launcher.wait(timeout=60) == 130
    finally:
        if launcher.poll() is None:
            launcher.kill()
    assert tasks_of(launcher.pid) == []


def test_a_killed_launcher_takes_its_program_tasks_with_it(tmp_path):
    """`sleep` knows nothing of tfk8s: the kernel ends it with its launcher (no chance to stop it)."""
    stack = program_stack(tmp_path, "local-orphans", {"command": ["sleep", "3600"]})
    launcher = subprocess.Popen(
        [sys.executable, "-m", "trainer.local", "--workdir", str(tmp_path / "run"), "--stack", stack],
        cwd=PROJECT_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while len(tasks_of(launcher.pid)) < 5:
        assert time.monotonic() < deadline and launcher.poll() is None, "the tasks did not start"
        time.sleep(0.2)
    launcher.kill()
    launcher.wait(timeout=10)
    deadline = time.monotonic() + 10
    while tasks_of(launcher.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = tasks_of(launcher.pid)
    for pid in left:  # a failing run must not leave its tasks to the next test
        os.kill(pid, signal.SIGKILL)
    assert left == []


def test_a_malformed_export_is_refused_in_one_line_before_anything_starts(tmp_path):
    """An export (python -m components export's JSON, trainer/stack_export.py) whose program is not of its
    shape: the launcher names the key and starts nothing."""
    export = tmp_path / "hand-written.json"
    export.write_text(json.dumps({
        "stack": "s", "placement": "colocated", "ps": 0, "workers": 1, "evaluator": 0, "trainer": {},
        "program": {"argv": {"chief": None, "ps": None, "worker": "python train.py"}, "env": {}, "source": None,
                    "done": "workers"},
    }))
    code, stdout, stderr, left = run_local(tmp_path / "run", str(export))
    assert code == 2, stderr
    assert f"trainer.local: stack '{export}': program.argv.worker should be a list of words or null (got 'python train.py')" in stderr
    assert left == [] and stdout == ""
