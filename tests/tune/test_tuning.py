"""The rounds in order under mocks: each round runs the stack the one before wrote, named
`<stack>-tuneN` beside it, until the stop rules say; `tune` refuses a stack already up and changes
nothing."""

from __future__ import annotations

import shutil

import pytest

from components.cli.main import main
from components.spec.stack_changes import Change
from components.spec.stack_files import STACKS_DIR
from components.tune.rounds import Round
from components.tune.tuning import tune

from .fakes import RecordingEngine, round_run

MORE_PS = Change("tfk8s:cluster.ps.replicas", 3, 6)


def _scripted(throughputs):
    """A round function that reports the given examples/s in turn and proposes one more line of text."""
    ran = []

    def one_round(run, stack_file, next_name, made_by_tune):
        assert made_by_tune == (len(ran) > 0)
        ran.append((stack_file.name, next_name))
        examples = throughputs[len(ran) - 1]
        text = stack_file.read_text() + f"# round {len(ran)}\n"
        return Round(stack_file.stem.removeprefix("Pulumi."), str(stack_file), examples, "ps-bound", "high", (MORE_PS,)), text

    return one_round, ran


@pytest.fixture
def first(tmp_path):
    path = tmp_path / "Pulumi.scene1-case2.yaml"
    shutil.copy(STACKS_DIR / "Pulumi.scene1-case2.yaml", path)
    return path


def test_each_round_runs_the_stack_the_round_before_wrote(first):
    one_round, ran = _scripted([100.0, 130.0, 150.0, 151.0])
    tuning = tune(round_run(RecordingEngine()), first, rounds=10, one_round=one_round)
    assert ran == [
        ("Pulumi.scene1-case2.yaml", "scene1-case2-tune1"),
        ("Pulumi.scene1-case2-tune1.yaml", "scene1-case2-tune2"),
        ("Pulumi.scene1-case2-tune2.yaml", "scene1-case2-tune3"),
        ("Pulumi.scene1-case2-tune3.yaml", "scene1-case2-tune4"),
    ]
    assert tuning.best.stack == "scene1-case2-tune2" and "not 5% more" in tuning.stopped
    # The last round's proposal is not written: no round will run it.
    assert sorted(p.name for p in first.parent.iterdir()) == [
        "Pulumi.scene1-case2-tune1.yaml", "Pulumi.scene1-case2-tune2.yaml", "Pulumi.scene1-case2-tune3.yaml",
        "Pulumi.scene1-case2.yaml",
    ]
    assert (first.parent / "Pulumi.scene1-case2-tune2.yaml").read_text().endswith("# round 1\n# round 2\n")


def test_it_stops_after_the_rounds_asked(first):
    one_round, ran = _scripted([100.0, 200.0, 400.0])
    tuning = tune(round_run(RecordingEngine()), first, rounds=2, one_round=one_round)
    assert len(ran) == 2 and tuning.stopped == "ran the 2 rounds asked (--rounds 2)"


def test_it_never_writes_over_a_file_and_takes_the_next_name(first):
    keep = first.parent / "Pulumi.scene1-case2-tune1.yaml"
    keep.write_text("# the user's\n")
    one_round, ran = _scripted([100.0, 200.0])
    tune(round_run(RecordingEngine()), first, rounds=2, one_round=one_round)
    assert keep.read_text() == "# the user's\n"
    assert ran[1][0] == "Pulumi.scene1-case2-tune2.yaml"


def test_tune_refuses_a_stack_already_up_and_touches_nothing(capsys):
    engine = RecordingEngine(up_already=("Pulumi.scene1-case2.yaml",))
    code = main(["tune", "scene1-case2", "--kubeconfig", "/nonexistent"], engine)
    assert code == 2 and engine.calls == []
    assert "stack 'scene1-case2' is already up" in capsys.readouterr().err


@pytest.mark.parametrize("rounds", ["0", "11", "two", "1.5"])
def test_rounds_outside_one_to_ten_are_refused(rounds, capsys):
    with pytest.raises(SystemExit) as exited:
        main(["tune", "scene1-case2", "--rounds", rounds], RecordingEngine())
    assert exited.value.code == 2 and "--rounds: must be a whole number from 1 to 10" in capsys.readouterr().err


def test_a_stack_file_outside_stacks_is_refused_for_the_users_engine(tmp_path, capsys):
    path = tmp_path / "Pulumi.mine.yaml"
    shutil.copy(STACKS_DIR / "Pulumi.scene1-case2.yaml", path)
    assert main(["tune", str(path)]) == 2
    assert "is not in" in capsys.readouterr().err
