"""One round under mocks: whatever ends it (a finding, a failed `up`, an experiment that never trains,
Ctrl-C), what it brought up is taken down, and what could not be is said."""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from components.spec.stack_changes import Change
from components.spec.stack_files import STACKS_DIR
from components.tune import round_run
from components.tune.round_run import RoundFailed, run_round

from .fakes import FakeClock, RecordingEngine, round_run as make_run

PROGRESS = "2026-12-07T10:00:01.000000000Z step     100  loss 0.3100      2000.0 examples/s\n"
PARTITION = Change("tfk8s:trainer.partition", "none", "auto")


@pytest.fixture
def stack_file(tmp_path) -> Path:
    path = tmp_path / "Pulumi.scene1-case1.yaml"
    shutil.copy(STACKS_DIR / "Pulumi.scene1-case1.yaml", path)
    return path


@pytest.fixture
def cluster(monkeypatch):
    """A cluster whose experiment trains at once, prints one progress line, and is gone when destroyed."""
    calls = SimpleNamespace(waited=0, gone=0)

    def trains(run, experiment, started):
        calls.waited += 1
        return SimpleNamespace(phase=SimpleNamespace(name="Running"))

    monkeypatch.setattr(round_run, "wait_until_training", trains)
    monkeypatch.setattr(round_run, "wait_until_gone", lambda run, experiment: setattr(calls, "gone", calls.gone + 1))
    monkeypatch.setattr(round_run, "read_status", lambda api, experiment: None)
    monkeypatch.setattr(round_run, "progress_log", lambda api, experiment, status, seconds: PROGRESS)
    return calls


def _diagnosis(changes=(PARTITION,), new_text="config: {}\n"):
    finding = SimpleNamespace(bottleneck="hot-ps", confidence="high", changes=changes, advice=())
    window = SimpleNamespace(seconds=30.0, ended=None)
    return SimpleNamespace(finding=finding, sampled=SimpleNamespace(window=window), new_text=new_text, next_stack=None)


def test_a_round_measures_judges_and_takes_itself_down(monkeypatch, stack_file, cluster):
    monkeypatch.setattr(round_run, "diagnose_running", lambda *args: _diagnosis())
    engine = RecordingEngine()
    measured, next_text = run_round(make_run(engine), stack_file, "scene1-case1-tune1", False)
    assert measured.examples_per_s == 2000.0 and measured.bottleneck == "hot-ps" and measured.changes == (PARTITION,)
    assert next_text == "config: {}\n"
    assert engine.calls == [("up", stack_file.name), ("destroy", stack_file.name)] and cluster.gone == 1


def test_a_failed_up_is_taken_down_and_named(stack_file, cluster):
    engine = RecordingEngine(fail_up=True)
    measured, next_text = run_round(make_run(engine), stack_file, "x", False)
    assert "a mandatory policy" in measured.failed and next_text is None
    assert engine.calls[-1] == ("destroy", stack_file.name)


def test_an_experiment_that_never_trains_is_taken_down(monkeypatch, stack_file, cluster):
    def never(run, experiment, started):
        raise RoundFailed("not training after 900 s (Pending): ps-0 Pending")

    monkeypatch.setattr(round_run, "wait_until_training", never)
    engine = RecordingEngine()
    measured, _ = run_round(make_run(engine), stack_file, "x", False)
    assert measured.failed == "not training after 900 s (Pending): ps-0 Pending"
    assert engine.calls == [("up", stack_file.name), ("destroy", stack_file.name)]


def test_no_progress_line_fails_the_round_by_name(monkeypatch, stack_file, cluster):
    monkeypatch.setattr(round_run, "diagnose_running", lambda *args: _diagnosis())
    monkeypatch.setattr(round_run, "progress_log", lambda *args: "training...\n")
    measured, _ = run_round(make_run(RecordingEngine()), stack_file, "x", False)
    assert "chief-0 printed no progress line in the 332 s from the window's start" in measured.failed
    assert "examples/s" in measured.failed


def test_ctrl_c_takes_the_round_down_then_ends_tune(monkeypatch, stack_file, cluster):
    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(round_run, "diagnose_running", interrupted)
    engine = RecordingEngine()
    with pytest.raises(KeyboardInterrupt):
        run_round(make_run(engine), stack_file, "x", False)
    assert engine.calls == [("up", stack_file.name), ("destroy", stack_file.name)]


def test_what_cannot_be_taken_down_is_said(monkeypatch, stack_file, cluster):
    monkeypatch.setattr(round_run, "diagnose_running", lambda *args: _diagnosis())
    run = make_run(RecordingEngine(fail_destroy=True))
    run_round(run, stack_file, "x", False)
    assert run.left_behind == [
        "scene1-case1: pulumi destroy failed for stack 'Pulumi.scene1-case1.yaml': the API server does not answer; "
        "finish it with `destroy Pulumi.scene1-case1.yaml`"
    ]


def test_a_stack_already_up_is_never_touched(stack_file, cluster):
    engine = RecordingEngine(up_already=(stack_file.name,))
    measured, _ = run_round(make_run(engine), stack_file, "x", False)
    assert "already up" in measured.failed and engine.calls == []


def _status(*phases: str, phase: str = "Running"):
    tasks = [SimpleNamespace(task=f"worker-{i}", phase=p) for i, p in enumerate(phases)]
    tasks.append(SimpleNamespace(task="evaluator-0", phase="Pending"))  # outside the training cluster: not waited for
    return SimpleNamespace(phase=SimpleNamespace(name=phase), tasks=tasks)


def _waiting(monkeypatch, statuses, logs):
    """wait_until_training against a cluster whose status and chief's log follow the given lists."""
    clock = FakeClock()
    monkeypatch.setattr(round_run, "read_status", lambda api, experiment: statuses[min(int(clock.now // 2), len(statuses) - 1)])
    monkeypatch.setattr(round_run, "progress_log", lambda *args: logs[min(int(clock.now // 2), len(logs) - 1)])
    run = make_run(RecordingEngine())
    run.clock, run.sleep = clock, clock.sleep
    experiment = SimpleNamespace(plan=SimpleNamespace(deciding_role=lambda: SimpleNamespace(name="chief")))
    return run, experiment, clock


def test_the_wait_ends_at_the_first_progress_line_once_every_task_runs(monkeypatch):
    statuses = [_status("Pending", "Running"), _status("Running", "Running")]
    run, experiment, clock = _waiting(monkeypatch, statuses, ["", "", "", PROGRESS])
    round_run.wait_until_training(run, experiment, 0.0)
    assert clock.now == 6.0


def test_a_program_that_prints_no_progress_line_is_named_after_the_ceiling(monkeypatch):
    run, experiment, clock = _waiting(monkeypatch, [_status("Running")], ["training\n"])
    run.first_line_ceiling_s = 20.0
    with pytest.raises(RoundFailed, match="chief-0 printed no progress line in the 20 s after every task ran"):
        round_run.wait_until_training(run, experiment, 0.0)
    assert 20.0 < clock.now <= 24.0


def test_tasks_that_never_all_run_are_named(monkeypatch):
    run, experiment, _ = _waiting(monkeypatch, [_status("Running", "Pending")], [""])
    run.start_ceiling_s = 10.0
    with pytest.raises(RoundFailed, match="not every task ran within 10 s .*worker-1 Pending"):
        round_run.wait_until_training(run, experiment, 0.0)


def test_an_experiment_that_ends_first_fails_the_round(monkeypatch):
    run, experiment, _ = _waiting(monkeypatch, [_status("Running", phase="Failed")], [""])
    with pytest.raises(RoundFailed, match="ended before it trained"):
        round_run.wait_until_training(run, experiment, 0.0)


def test_ctrl_c_during_up_still_takes_the_round_down(stack_file, cluster):
    class Interrupted(RecordingEngine):
        def up(self, stack_file):
            super().up(stack_file)
            raise KeyboardInterrupt

    engine = Interrupted()
    with pytest.raises(KeyboardInterrupt):
        run_round(make_run(engine), stack_file, "x", True)
    assert engine.calls == [("up", stack_file.name), ("destroy and forget", stack_file.name)]


def test_a_cluster_that_stops_answering_fails_the_round_and_it_is_still_taken_down(monkeypatch, stack_file, cluster):
    from urllib3.exceptions import MaxRetryError

    def lost(*args):
        raise MaxRetryError(None, "/api/v1/pods", "connection refused")

    monkeypatch.setattr(round_run, "diagnose_running", lost)
    engine = RecordingEngine()
    measured, _ = run_round(make_run(engine), stack_file, "x", False)
    assert measured.failed.startswith("the cluster did not answer") and engine.calls[-1][0] == "destroy"


def test_an_experiment_that_ends_in_the_window_fails_the_round(monkeypatch, stack_file, cluster):
    ended = _diagnosis()
    ended.sampled.window.ended = "Succeeded"
    monkeypatch.setattr(round_run, "diagnose_running", lambda *args: ended)
    measured, next_text = run_round(make_run(RecordingEngine()), stack_file, "x", False)
    assert "ended (Succeeded) during the window" in measured.failed and next_text is None


def test_a_progress_line_after_the_window_is_waited_for(monkeypatch, stack_file, cluster):
    """A program prints a line every so many steps, which may be longer apart than the window."""
    monkeypatch.setattr(round_run, "diagnose_running", lambda *args: _diagnosis())
    logs = iter(["", "", PROGRESS])
    monkeypatch.setattr(round_run, "progress_log", lambda *args: next(logs))
    measured, _ = run_round(make_run(RecordingEngine()), stack_file, "x", False)
    assert measured.examples_per_s == 2000.0
