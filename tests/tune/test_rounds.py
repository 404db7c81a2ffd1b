"""When tune stops, and what it says: the stop rules on the rounds' figures, the names of the stacks
it writes, and the JSON other tools read."""

from __future__ import annotations

import pytest

from components.spec.stack_changes import Change
from components.tune.round_names import round_names
from components.tune.rounds import MIN_GAIN, Round, Tuning, stop_reason, tuning_json

PARTITION = Change("tfk8s:trainer.partition", "none", "auto")
MORE_PS = Change("tfk8s:cluster.ps.replicas", 3, 6)


def _round(stack: str, examples: float | None, changes=(PARTITION,), failed=None, bottleneck="hot-ps") -> Round:
    return Round(stack, f"stacks/Pulumi.{stack}.yaml", examples, bottleneck, "high", tuple(changes), failed=failed)


def test_a_round_faster_by_the_gain_goes_on():
    tuning = Tuning((_round("a", 100.0), _round("a-tune1", 100.0 * (1 + MIN_GAIN))))
    assert stop_reason(tuning, rounds=4) is None


def test_a_round_not_faster_by_the_gain_stops_it():
    tuning = Tuning((_round("a", 100.0), _round("a-tune1", 104.9)))
    assert "not 5% more than the best so far (a, 100.0)" in stop_reason(tuning, rounds=4)


def test_the_best_so_far_is_the_bar_not_the_round_before():
    rounds = (_round("a", 100.0), _round("a-tune1", 200.0, (MORE_PS,)), _round("a-tune2", 150.0))
    assert "best so far (a-tune1, 200.0)" in stop_reason(Tuning(rounds), rounds=4)


def test_a_finding_that_changes_no_key_stops_it_with_the_advice():
    last = Round("a", "f", 100.0, "hot-ps", "high", (), ("partition the variable `embedding` over every PS",))
    reason = stop_reason(Tuning((last,)), rounds=4)
    assert "changes no stack key" in reason and "partition the variable `embedding`" in reason


def test_a_failed_round_stops_it_named():
    tuning = Tuning((_round("a", 100.0), _round("a-tune1", None, failed="the experiment failed: ps-0 OOMKilled")))
    assert stop_reason(tuning, rounds=4) == "round 1 (a-tune1) failed: the experiment failed: ps-0 OOMKilled"


def test_the_rounds_asked_end_it():
    tuning = Tuning((_round("a", 100.0), _round("a-tune1", 200.0)))
    assert stop_reason(tuning, rounds=2) == "ran the 2 rounds asked (--rounds 2)"


def test_the_json_has_each_round_the_best_and_why():
    tuning = Tuning((_round("a", 100.0), _round("a-tune1", 160.0, (MORE_PS,))), stopped="ran the 2 rounds asked")
    shown = tuning_json(tuning)
    assert shown["best"] == {"stack": "a-tune1", "file": "stacks/Pulumi.a-tune1.yaml", "examples_per_s": 160.0, "ratio": 1.6}
    assert [r["ratio"] for r in shown["rounds"]] == [1.0, 1.6]
    assert shown["rounds"][0]["changes"] == [{"key": "tfk8s:trainer.partition", "from": "none", "to": "auto"}]
    assert set(shown) == {"rounds", "best", "stopped"}
    assert set(shown["rounds"][0]) == {"stack", "file", "bottleneck", "confidence", "changes", "examples_per_s", "ratio"}


def test_no_best_where_round_zero_failed():
    tuning = Tuning((_round("a", None, failed="no progress line"),), stopped="round 0 (a) failed")
    assert tuning_json(tuning)["best"] is None


@pytest.mark.parametrize(
    "present, expected",
    [((), ["a-tune1", "a-tune2"]), (("a-tune1", "a-tune2"), ["a-tune3", "a-tune4"]), (("a-tune7",), ["a-tune8", "a-tune9"])],
)
def test_the_rounds_are_named_after_the_stack_past_those_written(tmp_path, present, expected):
    for name in (*present, "a-tuned", "ab-tune9"):
        (tmp_path / f"Pulumi.{name}.yaml").write_text("config: {}\n")
    names = round_names("a", tmp_path)
    assert [next(names), next(names)] == expected
