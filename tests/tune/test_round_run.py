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

from .fakes import RecordingEngine, round_run as make_run

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
    window = SimpleNamespace(seconds=30.0)
    return SimpleNamespace(finding=finding, sampled=SimpleNamespace(window=window), new_text=new_text, next_stack=None)


def test_a_round_measures_judges_and_takes_itself_down(monkeypatch, stack_file, cluster):
    monkeypatch.setattr(round_run, "diagnose_running", lambda *args: _diagnosis())
    engine = RecordingEngine()
    measured, next_text = run_round(make_run(engine), stack_file, "scene1-case1-tune1")
    assert measured.examples_per_s == 2000.0 and measured.bottleneck == "hot-ps" and measured.changes == (PARTITION,)
    assert next_text == "config: {}\n"
    assert engine.calls == [("up", stack_file.name), ("destroy", stack_file.name)] and cluster.gone == 1


def test_a_failed_up_is_taken_down_and_named(stack_file, cluster):
    engine = RecordingEngine(fail_up=True)
    measured, next_text = run_round(make_run(engine), stack_file, "x")
    assert "a mandatory policy" in measured.failed and next_text is None
    assert engine.calls[-1] == ("destroy", stack_file.name)


def test_an_experiment_that_never_trains_is_taken_down(monkeypatch, stack_file, cluster):
    def never(run, experiment, started):
        raise RoundFailed("not training after 900 s (Pending): ps-0 Pending")

    monkeypatch.setattr(round_run, "wait_until_training", never)
    engine = RecordingEngine()
    measured, _ = run_round(make_run(engine), stack_file, "x")
    assert measured.failed == "not training after 900 s (Pending): ps-0 Pending"
    assert engine.calls == [("up", stack_file.name), ("destroy", stack_file.name)]


def test_no_progress_line_fails_the_round_by_name(monkeypatch, stack_file, cluster):
    monkeypatch.setattr(round_run, "diagnose_running", lambda *args: _diagnosis())
    monkeypatch.setattr(round_run, "progress_log", lambda *args: "training...\n")
    measured, _ = run_round(make_run(RecordingEngine()), stack_file, "x")
    assert "chief-0 printed no progress line" in measured.failed and "examples/s" in measured.failed


def test_ctrl_c_takes_the_round_down_then_ends_tune(monkeypatch, stack_file, cluster):
    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(round_run, "diagnose_running", interrupted)
    engine = RecordingEngine()
    with pytest.raises(KeyboardInterrupt):
        run_round(make_run(engine), stack_file, "x")
    assert engine.calls == [("up", stack_file.name), ("destroy", stack_file.name)]


def test_what_cannot_be_taken_down_is_said(monkeypatch, stack_file, cluster):
    monkeypatch.setattr(round_run, "diagnose_running", lambda *args: _diagnosis())
    run = make_run(RecordingEngine(fail_destroy=True))
    run_round(run, stack_file, "x")
    assert run.left_behind == [
        "scene1-case1: pulumi destroy failed for stack 'Pulumi.scene1-case1.yaml': the API server does not answer"
    ]


def test_a_stack_already_up_is_never_touched(stack_file, cluster):
    engine = RecordingEngine(up_already=(stack_file.name,))
    measured, _ = run_round(make_run(engine), stack_file, "x")
    assert "already up" in measured.failed and engine.calls == []
