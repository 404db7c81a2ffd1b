"""The local launcher with real processes: training, faults, restarts, cleanup.

Small sizes and hard timeouts; no assertion on throughput.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable

import pytest

from tests.terminal import ctrl_c_as_in_a_terminal
from tests.trainer.conftest import PROJECT_ROOT

SMALL = ["--embedding-rows", "20000", "--batch-size", "128", "--progress-every", "10"]
# Each task's TensorFlow start is 6 to 9 CPU-seconds here: a test runs as few tasks as what it shows needs.
FEWEST = ["--ps", "1", "--workers", "1"]
RUN_TIMEOUT = 240
# Runs that wait for an event train until the test has seen it: never a step count raced against it.
UNTIL_STOPPED = "10000000"
SUMMARY_KEYS = {"steps", "examples_per_sec", "loss_first", "loss_last", "ps_cpu_seconds", "ps_imbalance", "bytes_per_ps"}


def processes_under(folder: Path) -> list[int]:
    """PIDs whose working directory is inside `folder`: tasks the launcher started."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if cwd.startswith(str(folder)):
            found.append(int(entry.name))
    return found


def launch(workdir: Path, *args: str) -> tuple[int, list[str], dict]:
    launcher = subprocess.Popen(
        [sys.executable, "-m", "trainer.local", "--workdir", str(workdir), *SMALL, *args],
        cwd=PROJECT_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        stdout, stderr = launcher.communicate(timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        # SIGTERM, not SIGKILL: the launcher stops its tasks before it exits.
        launcher.terminate()
        launcher.communicate(timeout=60)
        raise
    lines = stdout.strip().splitlines()
    last = json.loads(lines[-1]) if lines else {}
    assert processes_under(workdir) == [], "the launcher must stop every process it started"
    return launcher.returncode, lines, last | {"_stderr": stderr}


def test_two_ps_two_workers_train_and_clean_up(tmp_path):
    code, lines, summary = launch(tmp_path, "--ps", "2", "--workers", "2", "--steps", "50")
    assert code == 0, summary["_stderr"][-2000:]
    assert SUMMARY_KEYS <= set(summary)
    assert summary["steps"] == 50
    assert summary["loss_last"] < summary["loss_first"]
    assert len(summary["ps_cpu_seconds"]) == 2 and all(c > 0 for c in summary["ps_cpu_seconds"])
    table_bytes = 20000 * 16 * 4 // 2
    assert all(b >= table_bytes for b in summary["bytes_per_ps"]), "a table shard on each PS"
    assert any(line.startswith("step ") for line in lines), "progress is shown"
    metrics = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert metrics[-1]["step"] == 50


@pytest.mark.slow
def test_killed_worker_does_not_stop_training_and_rejoins(tmp_path):
    # Two workers: the other one trains on while worker-1 is away.
    launcher = start_launcher(tmp_path, "--ps", "1", "--workers", "2", "--kill", "worker-1@20")

    def rejoined_and_checkpointed(lines: list[str]) -> bool:
        # Training goes on until the restarted worker-1 ran steps and a checkpoint followed.
        joined = [i for i, line in enumerate(lines) if line.startswith("worker joined") and ": worker-1@" in line]
        return len(joined) == 2 and any(line.startswith("checkpoint at") for line in lines[joined[1]:])

    code, lines, summary = finish(launcher, lines_until(launcher, rejoined_and_checkpointed))
    assert code == 0, summary["_stderr"][-2000:]
    assert "fault drill: killing worker-1" in summary["_stderr"]
    # Checkpoints every 500 steps: a call run again after the kill does not shift their numbers
    # (the last one is where the chief was asked to finish).
    checkpoints = [int(line.split()[-1]) for line in lines if line.startswith("checkpoint at")]
    assert checkpoints[:-1] == list(range(500, 500 * len(checkpoints), 500)), checkpoints
    assert checkpoints[-1] == summary["steps"] and any(line.startswith("finishing early at step") for line in lines)
    assert summary["worker_restarts"] >= 1
    # Steps are counted per worker process: the restarted worker-1 is a second process, and it ran steps.
    worker_1 = [steps for process, steps in summary["steps_by_worker_process"].items() if process.startswith("worker-1@")]
    assert len(worker_1) == 2, summary["steps_by_worker_process"]
    assert worker_1[1] > 0, "the restarted worker must run steps after its restart"


@pytest.mark.slow
def test_lost_ps_stops_the_chief_naming_it(tmp_path):
    started = time.monotonic()
    code, _, result = launch(tmp_path, *FEWEST, "--steps", "100000", "--kill", "ps-0@30")
    assert code == 1
    assert "chief exited with code 3: ps-0 (127.0.0.1:" in result["error"]
    assert time.monotonic() - started < 120


@pytest.mark.slow
def test_restart_resumes_from_checkpoint_into_more_ps(tmp_path):
    code, _, first = launch(tmp_path, "--ps", "2", "--workers", "1", "--steps", "60", "--checkpoint-every", "30")
    assert code == 0, first["_stderr"][-2000:]
    assert first["steps"] == 60
    code, lines, second = launch(tmp_path, "--ps", "3", "--workers", "1", "--steps", "90", "--checkpoint-every", "30")
    assert code == 0, second["_stderr"][-2000:]
    assert "training: 3 PS, 1 workers, from step 60" in lines
    assert second["steps"] == 90 and second["steps_this_run"] == 30 and second["resumed_from_step"] == 60
    assert second["shards"] == 3
    # The restored model carries on: no jump back to the untrained loss.
    assert second["loss_first"] < first["loss_first"] - 0.02


LAUNCHER_STDERR = "launcher-stderr.log"


def start_launcher(workdir: Path, *args: str) -> subprocess.Popen:
    """A launcher that trains until it is stopped (Ctrl-C) or asked to finish (`finish`)."""
    workdir.mkdir(parents=True, exist_ok=True)
    with open(workdir / LAUNCHER_STDERR, "w") as stderr:  # kept for a failing test's message
        return subprocess.Popen(
            [sys.executable, "-m", "trainer.local", "--workdir", str(workdir), *SMALL, "--steps", UNTIL_STOPPED, *args],
            cwd=PROJECT_ROOT,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            preexec_fn=ctrl_c_as_in_a_terminal,
        )


class Output:
    """A launcher's stdout lines, read as they come until it exits."""

    def __init__(self, launcher: subprocess.Popen) -> None:
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read, args=(launcher,), daemon=True)
        self.reader.start()

    def _read(self, launcher: subprocess.Popen) -> None:
        for line in launcher.stdout:
            self.lines.append(line.rstrip("\n"))


def lines_until(launcher: subprocess.Popen, seen: Callable[[list[str]], bool]) -> Output:
    """Read the launcher's lines until `seen(lines)` holds; the launcher is killed if it never does."""
    output = Output(launcher)
    deadline = time.monotonic() + RUN_TIMEOUT
    while not seen(list(output.lines)):
        if time.monotonic() > deadline or launcher.poll() is not None:
            launcher.kill()
            launcher.wait()
            raise AssertionError(f"not seen within {RUN_TIMEOUT} s (exit {launcher.returncode}): {output.lines[-20:]}")
        time.sleep(0.2)
    return output


def finish(launcher: subprocess.Popen, output: Output) -> tuple[int, list[str], dict]:
    """Ask the chief to finish where it stands (SIGUSR1 to the launcher); as `launch` returns."""
    launcher.send_signal(signal.SIGUSR1)
    try:
        code = launcher.wait(timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        launcher.terminate()
        launcher.wait(timeout=60)
        raise
    output.reader.join(timeout=30)
    workdir = Path(launcher.args[launcher.args.index("--workdir") + 1])
    assert processes_under(workdir) == [], "the launcher must stop every process it started"
    lines = output.lines
    last = json.loads(lines[-1]) if lines and lines[-1].startswith("{") else {}
    return code, lines, last | {"_stderr": (workdir / LAUNCHER_STDERR).read_text()}


def training_launcher(workdir: Path) -> subprocess.Popen:
    """A launcher with a long run of a chief, a PS and a worker, returned once its first step is
    reported (its tasks all running)."""
    launcher = start_launcher(workdir, *FEWEST)
    lines_until(launcher, lambda lines: any(line.startswith("step ") for line in lines))
    return launcher


@pytest.mark.slow
def test_ctrl_c_stops_every_process(tmp_path):
    launcher = training_launcher(tmp_path)
    try:
        assert processes_under(tmp_path), "tasks are running"
        launcher.send_signal(signal.SIGINT)
        try:
            code = launcher.wait(timeout=60)
        except subprocess.TimeoutExpired:
            said = (tmp_path / LAUNCHER_STDERR).read_text()[-3000:]
            pytest.fail(f"the launcher still runs 60 s after SIGINT; tasks {processes_under(tmp_path)}; it said:\n{said}")
        assert code == 130
    finally:
        if launcher.poll() is None:
            launcher.kill()
    assert processes_under(tmp_path) == []


def test_a_sigkilled_launcher_leaves_no_task_behind(tmp_path):
    launcher = training_launcher(tmp_path)
    try:
        assert len(processes_under(tmp_path)) >= 3, "the chief, the PS and the worker are running"
        launcher.kill()  # no chance to stop its tasks: the kernel ends them
        launcher.wait(timeout=10)
        deadline = time.monotonic() + 10
        while processes_under(tmp_path) and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        if launcher.poll() is None:
            launcher.kill()
        left = processes_under(tmp_path)
        for pid in left:  # a failing run must not leave its tasks to the next test
            os.kill(pid, signal.SIGKILL)
    assert left == []


def test_a_task_whose_launcher_is_already_gone_exits_at_once():
    code = "from trainer.lifeline import die_with_launcher; die_with_launcher({'TFK8S_LAUNCHER_PID': '1'}); print('ran')"
    done = subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=30)
    assert (done.returncode, done.stdout) == (1, "")


def test_stacks_are_validated_by_the_one_schema_and_scaled_to_this_machine():
    from trainer.local import LaunchError, read_stack, scale_to_machine

    experiment = read_stack("scene1-case3")
    assert (experiment.ps, experiment.workers, experiment.placement) == (10, 100, "colocated")
    assert read_stack("gpu-p40").trainer["embeddingRows"] == 20000000
    # At least 2 PS when the stack has 2 or more; the ratio kept where the workers fit.
    assert scale_to_machine(10, 100).ps == 2 and scale_to_machine(10, 100).workers == 6
    assert "1:10 would need 20 workers for 2 PS, at most 6 run here: 1:3 instead" in scale_to_machine(10, 100).notes[-1]
    assert (scale_to_machine(5, 10).ps, scale_to_machine(5, 10).workers) == (3, 6)
    assert scale_to_machine(5, 10).notes[-1] == "PS:worker ratio 1:2 kept"
    assert (scale_to_machine(1, 3).ps, scale_to_machine(1, 3).workers) == (1, 3)
    assert scale_to_machine(1, 3).notes == ("PS:worker ratio 1:3 kept",)
    # The project's validation, not a YAML read of its own: a bad stack is named as the program names it.
    with pytest.raises(LaunchError, match=r"stack 'no-such-stack': no file"):
        read_stack("no-such-stack")


def test_a_bad_stack_file_fails_before_anything_runs(tmp_path):
    bad = tmp_path / "Pulumi.bad.yaml"
    bad.write_text("config:\n  tfk8s:nodePools: [{name: s, nodes: [a]}]\n"
                   "  tfk8s:cluster: {placement: colocated, ps: {replicas: '2', pool: s}, workers: {replicas: 4, pool: s}}\n")
    code, _, result = launch(tmp_path / "run", "--stack", str(bad))
    assert code == 2
    assert "tfk8s:cluster.ps.replicas: Input should be a valid integer (got '2')" in result["_stderr"]
    assert not (tmp_path / "run" / "ps-0").exists()


@pytest.mark.slow
def test_trains_from_tfrecord_files(tmp_path):
    from trainer.data import write_tfrecords
    from trainer.settings import TrainerSettings

    data = tmp_path / "data"
    data.mkdir()
    settings = TrainerSettings(embedding_rows=20000, ids_per_example=8)
    for part in range(3):  # fewer files than records per worker: sharding is by record
        write_tfrecords(str(data / f"part-{part}.tfrecord"), settings, 200)
    # Two workers: each reads its share of the records.
    code, _, summary = launch(
        tmp_path / "run", "--ps", "1", "--workers", "2", "--steps", "30", "--data", str(data / "part-*.tfrecord")
    )
    assert code == 0, summary["_stderr"][-2000:]
    assert summary["steps"] == 30


# -- the launcher's own process handling --------------------------------------------


@pytest.mark.slow
def test_no_restart_and_every_worker_dead_stops_with_a_message(tmp_path):
    started = time.monotonic()
    code, _, result = launch(
        tmp_path, "--ps", "1", "--workers", "1", "--steps", "100000", "--no-restart", "--kill", "worker-0@20"
    )
    assert code == 1
    assert "every worker has exited and none is restarted (--no-restart)" in result["error"]
    assert time.monotonic() - started < 120


def test_signal_reaches_the_group_after_its_leader_exited(tmp_path):
    from trainer.local import Task

    # The leader starts a child in its group and exits at once.
    task = Task("worker-0", dict(os.environ), tmp_path, command=("bash", "-c", "sleep 300 & echo $! > child.pid"))
    task.start()
    task.process.wait(timeout=10)
    child = int((tmp_path / "child.pid").read_text())
    assert Path(f"/proc/{child}").exists()
    task.signal(signal.SIGTERM)
    deadline = time.monotonic() + 10
    while Path(f"/proc/{child}").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not Path(f"/proc/{child}").exists(), "the leader's child must get the signal"
    task.close_log()


@pytest.mark.slow
def test_a_taken_port_is_retried_and_no_file_stays_open(tmp_path, monkeypatch):
    import socket as socket_module

    from trainer import local
    from trainer.local import cluster as local_cluster
    from trainer.settings import TrainerSettings

    # Another process holds the port picked for ps-0 in the first topology.
    taken = socket_module.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    real_free_ports = local_cluster.free_ports
    calls = []

    def free_ports(count):
        ports = real_free_ports(count)
        calls.append(ports)
        if len(calls) == 1:
            ports[1] = taken.getsockname()[1]  # [chief, ps-0, workers...]
        return ports

    monkeypatch.setattr(local_cluster, "free_ports", free_ports)
    settings = TrainerSettings(embedding_rows=20000, batch_size=128, steps=20)
    cluster = local.LocalCluster(settings, ps=1, workers=1, workdir=tmp_path, progress_every=10)
    try:
        summary = cluster.run(out=open(os.devnull, "w"))
    finally:
        cluster.stop()
        taken.close()
    assert summary["steps"] == 20
    assert len(calls) == 2, "a second set of ports after the clash"
    open_files = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            open_files.append(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            pass  # the descriptor listdir itself used
    assert not [f for f in open_files if f.startswith(str(tmp_path))], "task logs and the chief's log are closed"


@pytest.mark.slow
def test_a_replaced_chief_resumes_from_the_last_checkpoint(tmp_path):
    # The chief's pod replaced: a new chief process on the same checkpoint folder, PS and workers kept.
    launcher = start_launcher(tmp_path, *FEWEST, "--checkpoint-every", "30", "--kill", "chief-0@50")

    def resumed_and_trained(lines: list[str]) -> bool:
        restarted = [i for i, line in enumerate(lines) if line.startswith("restarting chief-0 from its last checkpoint")]
        return bool(restarted) and any(line.startswith("step ") for line in lines[restarted[0]:])

    code, lines, summary = finish(launcher, lines_until(launcher, resumed_and_trained))
    assert code == 0, summary["_stderr"][-2000:]
    assert "fault drill: killing chief-0" in summary["_stderr"]
    resumed = summary["resumed_from_step"]
    assert resumed >= 30 and resumed % 30 == 0, "from a checkpoint, not from step 0"
    assert f"training: 1 PS, 1 workers, from step {resumed}" in lines
    assert summary["steps"] > resumed and summary["steps_this_run"] == summary["steps"] - resumed
    assert summary["chief_restarts"] == 1


def test_ps_cpu_counts_from_the_first_finished_call_not_from_start_up(tmp_path):
    """TensorFlow's import, variable creation and tracing happen before the first call finishes;
    counted, they mute the hot PS of an unpartitioned table (the report's whole point)."""
    import io
    import types

    from trainer.local import LocalCluster
    from trainer.settings import TrainerSettings

    # PS CPU seconds as the chief's events go by: start-up, then training.
    cpu_when = {"start": [0.6, 0.6], "worker_joined": [1.0, 1.0], "summary": [5.0, 1.2]}
    lines = [json.dumps({"event": name, "step": 0, "ps": 2, "workers": 1, "worker": "worker-0@x"}) for name in cpu_when]
    cluster = LocalCluster(TrainerSettings(), ps=2, workers=1, workdir=tmp_path)
    current = {"cpu": [0.0, 0.0]}

    def log_lines():
        for line in lines:
            current["cpu"] = cpu_when[json.loads(line)["event"]]
            yield line + "\n"

    # A chief that has exited as far as the per-task CPU sampler asks (poll), whose log is still read.
    cluster.chief = types.SimpleNamespace(stdout=log_lines(), pid=None, poll=lambda: 0)
    cluster._ps_cpu = lambda: list(current["cpu"])
    summary, failure = cluster._follow_chief(io.StringIO())
    assert failure is None
    assert summary["ps_cpu_seconds"] == pytest.approx([4.0, 0.2])


def test_each_fault_drill_runs_once_when_its_step_is_reached():
    from trainer.local.drills import FaultDrills, parse_kill

    drills = FaultDrills(dict([parse_kill("worker-1@100"), parse_kill("ps-0@250")]))
    assert drills.due(96) == []
    assert drills.due(104) == ["worker-1"]
    assert drills.due(300) == ["ps-0"] and drills.due(400) == []
