"""The evaluator as a process: beside a local run of tfk8s's trainer and of a team's TF2 program
(trainer.local), on the checkpoints a real chief wrote, and stopped by SIGTERM.

Every run here ends by itself (the chief's last step, then the evaluator's evaluation of it) or
waits for a line: no step count is raced against an event.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.trainer.conftest import PROJECT_ROOT
from tests.trainer.test_local import SMALL, launch
from tests.trainer.test_local_program import run_local
from trainer.local.program import ProgramExport
from trainer.stack_export import StackExport
from trainer.log_lines import read_evaluation_line, read_event
from trainer.ports import free_ports
from trainer.settings import SETTINGS_ENV, TrainerSettings

STEPS, EVERY = 60, 20  # three checkpoints: the chief keeps three, so none is gone before it is evaluated
RUN = ["--ps", "2", "--workers", "1", "--steps", str(STEPS), "--checkpoint-every", str(EVERY)]
# The settings trainer.local gives its tasks for SMALL and RUN (tests/trainer/test_local.py).
SETTINGS = TrainerSettings.from_config({"embeddingRows": 20000, "batchSize": 128, "steps": STEPS, "checkpointEvery": EVERY})
EVALUATOR_TIMEOUT = 120


@pytest.fixture(scope="module")
def evaluated_run(tmp_path_factory) -> tuple[Path, int, list[str], dict]:
    workdir = tmp_path_factory.mktemp("evaluated-run")
    code, lines, summary = launch(workdir, *RUN, "--evaluator", "1")
    return workdir, code, lines, summary


def test_trainer_local_runs_the_evaluator_beside_the_cluster_to_the_final_step(evaluated_run):
    workdir, code, lines, summary = evaluated_run
    assert SMALL[:4] == ["--embedding-rows", "20000", "--batch-size", "128"], "SETTINGS above are these"
    assert code == 0, summary["_stderr"][-3000:]
    assert summary["steps"] == STEPS
    evaluator = summary["evaluator"]
    assert evaluator["exit_code"] == 0 and evaluator["restarts"] == 0, evaluator
    assert evaluator["evaluations"] == 3 and evaluator["last"]["step"] == STEPS, evaluator
    shown = [read_evaluation_line(line) for line in lines if read_evaluation_line(line) is not None]
    assert [line.step for line in shown if line is not None] == [20, 40, 60]
    assert "evaluator-0 exited 0" in lines
    log = (workdir / "evaluator-0" / "task.log").read_text()
    assert f"evaluator-0: waiting for checkpoints in {workdir / 'checkpoints'}" in log


def evaluator_process(cwd: Path, checkpoint_dir: Path) -> subprocess.Popen:
    """`python -m trainer` as the evaluator, with the environment its pod gets: a cluster whose
    addresses nothing listens on (the evaluator never calls one)."""
    chief, ps0, ps1, worker = [f"127.0.0.1:{port}" for port in free_ports(4)]
    cluster = {"chief": [chief], "ps": [ps0, ps1], "worker": [worker]}
    env = {
        **os.environ,
        "TFK8S_CLUSTER": json.dumps(cluster),
        "TFK8S_TASK_TYPE": "evaluator",
        "TFK8S_FIRST_INDEX": "0",
        "JOB_COMPLETION_INDEX": "0",
        SETTINGS_ENV: json.dumps({**SETTINGS.to_config(), "checkpointDir": str(checkpoint_dir)}),
        "PYTHONPATH": str(PROJECT_ROOT),
        "PYTHONUNBUFFERED": "1",
    }
    env.pop("TF_CONFIG", None)
    return subprocess.Popen(
        [sys.executable, "-m", "trainer"], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def test_the_evaluator_evaluates_each_checkpoint_a_real_chief_wrote_and_exits_0(evaluated_run, tmp_path):
    """Checkpoints of a table sharded over 2 PS, read into the evaluator's one local table."""
    workdir, code, _lines, summary = evaluated_run
    assert code == 0
    checkpoints = workdir / "checkpoints"
    before = sorted((p.name, p.stat().st_mtime_ns) for p in checkpoints.iterdir())
    evaluator = evaluator_process(tmp_path, checkpoints)
    stdout, stderr = evaluator.communicate(timeout=EVALUATOR_TIMEOUT)
    assert evaluator.returncode == 0, stderr[-3000:]
    events = [event for event in map(read_event, stdout.splitlines()) if event and event["event"] == "evaluation"]
    assert [(e["step"], e["checkpoint"]) for e in events] == [(s, str(checkpoints / f"ckpt-{s}")) for s in (20, 40, 60)]
    assert all(math.isfinite(e["eval_loss"]) for e in events)
    assert events[-1]["eval_loss"] == summary["evaluator"]["last"]["eval_loss"], "the same held-out set every time"
    assert f"evaluator-0: evaluated the checkpoint of the final step {STEPS}; done" in stdout
    assert sorted((p.name, p.stat().st_mtime_ns) for p in checkpoints.iterdir()) == before, "nothing written there"


def test_sigterm_stops_a_waiting_evaluator_at_once(tmp_path):
    evaluator = evaluator_process(tmp_path, tmp_path / "no-checkpoints-yet")
    waiting = threading.Event()

    def read() -> None:
        assert evaluator.stdout is not None
        for line in evaluator.stdout:
            if "evaluator-0: waiting for checkpoints in" in line:
                waiting.set()

    threading.Thread(target=read, daemon=True).start()
    try:
        assert waiting.wait(EVALUATOR_TIMEOUT), "the evaluator says that it waits"
        stopped_at = time.monotonic()
        evaluator.send_signal(signal.SIGTERM)
        assert evaluator.wait(timeout=10) == 128 + signal.SIGTERM
        assert time.monotonic() - stopped_at < 5
    finally:
        if evaluator.poll() is None:
            evaluator.kill()
            evaluator.wait()
    assert evaluator.stderr is not None and "evaluator-0: stopping on SIGTERM" in evaluator.stderr.read()


def test_trainer_local_refuses_an_evaluator_without_checkpoints(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "trainer.local", "--workdir", str(tmp_path), "--evaluator", "1", "--checkpoint-every", "0"],
        cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 2
    assert "the evaluator evaluates the chief's checkpoints: checkpointEvery is 0" in result.stderr
    assert not (tmp_path / "ps-0").exists(), "nothing started"


def program_export(folder: Path, argv: list[str], evaluator: object) -> str:
    """What `python -m components export` prints for a program stack with an evaluator."""
    export = {
        "stack": "local-tf2-evaluator", "placement": "colocated", "ps": 2, "workers": 1, "trainer": {},
        "evaluator": evaluator,
        "program": {"argv": {"chief": argv, "ps": argv, "worker": argv}, "env": {},
                    "source": str(PROJECT_ROOT / "tests" / "team_programs" / "tf2-ps-evaluator"), "done": "chief"},
    }
    path = folder / "export.json"
    path.write_text(json.dumps(export))
    return str(path)


def test_a_tf2_program_with_an_evaluator_runs_as_local_processes_to_success(tmp_path):
    """The evaluator runs the workers' command (no roles.evaluator), finds itself in TF_CONFIG as
    TensorFlow's resolver reads it, and follows the chief's checkpoints to the last step."""
    checkpoints = tmp_path / "checkpoints"
    argv = ["python", "train.py", "--steps", str(STEPS), "--checkpoint-every", str(EVERY),
            "--checkpoint-dir", str(checkpoints)]
    code, stdout, stderr, left = run_local(tmp_path / "run", program_export(tmp_path, argv, {"replicas": 1}))
    assert code == 0, stderr[-3000:]
    assert left == [], "every process the launcher started is stopped"
    result = json.loads(stdout.strip().splitlines()[-1])
    assert result["phase"] == "Succeeded" and result["log"].startswith(f"chief: {STEPS} steps in"), result
    assert result["evaluator"]["exit_code"] == 0 and result["evaluator"]["log"].startswith(f"evaluator: step {STEPS} ")
    assert "evaluator-0 exited 0" in stdout
    evaluated = [line for line in (tmp_path / "run" / "evaluator-0" / "task.log").read_text().splitlines()
                 if line.startswith("evaluator: step ")]
    assert evaluated, "the evaluator reported at least one evaluation"
    for line in evaluated:
        _, _, step, _, loss = line.split()
        assert int(step) in (20, 40, 60) and math.isfinite(float(loss))


@pytest.mark.parametrize(
    "evaluator, expected",
    [
        pytest.param(1, 1, id="replicas"),
        pytest.param({"replicas": 1, "pool": "servers", "cpu": "1"}, 1, id="the evaluator's object"),
        pytest.param({"replicas": 0}, 0, id="replicas 0"),
        pytest.param(None, 0, id="none"),
    ],
)
def test_a_stack_export_gives_the_evaluator(evaluator, expected):
    export = {"stack": "s", "placement": "colocated", "ps": 1, "workers": 1, "trainer": {}, "evaluator": evaluator}
    assert StackExport.from_json(export).evaluator == expected
    assert StackExport.from_json({**export, "something_new": True}).evaluator == expected
    del export["evaluator"]
    assert StackExport.from_json(export).evaluator == 0


def test_the_evaluator_runs_its_own_command_else_the_workers():
    argv: dict = {"chief": ["c"], "ps": ["p"], "worker": ["w", "--x"]}
    assert ProgramExport(argv, {}, None, "chief").evaluator_argv() == ["w", "--x"]
    assert ProgramExport({**argv, "evaluator": ["e"]}, {}, None, "chief").evaluator_argv() == ["e"]
