"""`python -m components top`: what it makes of the kubelet's Summary API and the chief's log (no cluster)."""

from __future__ import annotations

import io
import json

import pytest

from components.cli.main import main
from components.live.top import watch
from trainer.log_lines import EvaluationLine, evaluation_event, evaluation_line, event_line, progress_line
from components.live.usage import (
    Progress, TaskUsage, TopView, chief_progress, imbalance, last_evaluation, pod_usage, top_text,
)

# A node's Summary API document as a kubelet serves it (trimmed to what top reads, plus neighbours).
SUMMARY = {
    "node": {"nodeName": "srv-00", "cpu": {"usageNanoCores": 1_900_000_000}},
    "pods": [
        {
            "podRef": {"name": "tf-ps-srv-00-0-0-jwjsr", "namespace": "tf-demo", "uid": "8f85"},
            "cpu": {"time": "2026-11-24T02:33:19Z", "usageNanoCores": 273_148_393, "usageCoreNanoSeconds": 9_100_000_000},
            "memory": {"workingSetBytes": 256_999_424, "usageBytes": 300_000_000},
            "containers": [{"name": "tensorflow", "cpu": {"usageNanoCores": 321_524_052}}],
        },
        # A pod that just started: the kubelet has no CPU rate for it yet.
        {"podRef": {"name": "tf-worker-srv-00-0-0-75dvr", "namespace": "tf-demo"}, "cpu": {}, "memory": {}},
        # Sampled not yet: the kubelet reports zeros.
        {
            "podRef": {"name": "tf-worker-srv-00-0-1-2s5dc", "namespace": "tf-demo"},
            "cpu": {"usageNanoCores": 0, "usageCoreNanoSeconds": 0},
            "memory": {"workingSetBytes": 0},
        },
        # Idle, with a working set: a real zero.
        {"podRef": {"name": "tf-chief-0-0-x", "namespace": "tf-demo"}, "cpu": {"usageNanoCores": 0}, "memory": {"workingSetBytes": 9}},
        {"podRef": {"name": "coredns-7c", "namespace": "kube-system"}, "cpu": {"usageNanoCores": 1_000_000}},
    ],
}


def test_pod_usage_is_the_pods_cpu_in_cores_and_its_working_set():
    usage = pod_usage(SUMMARY)
    ps = usage[("tf-demo", "tf-ps-srv-00-0-0-jwjsr")]
    assert ps.cpu_cores == 0.273 and ps.memory_bytes == 256_999_424
    starting = usage[("tf-demo", "tf-worker-srv-00-0-0-75dvr")]
    assert starting.cpu_cores is None and starting.memory_bytes is None
    not_sampled = usage[("tf-demo", "tf-worker-srv-00-0-1-2s5dc")]
    assert not_sampled.cpu_cores is None and not_sampled.memory_bytes is None
    assert usage[("tf-demo", "tf-chief-0-0-x")].cpu_cores == 0.0


CHIEF_LOG = "\n".join([
    event_line("start", step=0, ps=2, workers=2),
    progress_line(52, 0.6931, 9200.5),
    progress_line(104, 0.5120, 9506.1),
    event_line("checkpoint", step=100),
    "chief: a PS cannot reach the chief yet to save; retrying",
    "",
])


def test_progress_is_the_chiefs_last_progress_line_against_the_steps_asked():
    assert chief_progress(CHIEF_LOG, 1000) == Progress(step=104, steps=1000, loss=0.512, examples_per_sec=9506.1)


def test_progress_of_a_finished_chief_is_its_summary():
    summary = {"event": "summary", "steps": 1000, "loss_last": 0.1535, "examples_per_sec": 10998.3}
    log = CHIEF_LOG + progress_line(1000, 0.16, 10990.0) + "\n" + json.dumps(summary) + "\n"
    assert chief_progress(log, 1000) == Progress(1000, 1000, 0.1535, 10998.3)


def test_progress_before_the_first_step_is_unknown_but_says_the_steps_asked():
    assert chief_progress(event_line("start", step=0) + "\n", 500) == Progress(steps=500)
    assert chief_progress("", 500) == Progress(steps=500)


def test_imbalance_is_the_busiest_over_the_mean_and_unknown_until_every_value_is():
    assert imbalance([0.9, 0.05, 0.05]) == 2.7
    assert imbalance([0.3, None]) is None
    assert imbalance([0.0, 0.0]) is None
    assert imbalance([]) is None


def _view(**changes) -> TopView:
    values = dict(
        stack="demo",
        namespace="tf-demo",
        phase="Running",
        phase_detail="",
        tasks=[
            TaskUsage("chief-0", "srv-00", 0.2, 300 * 2**20),
            TaskUsage("ps-0", "srv-00", 0.9, 250 * 2**20),
            TaskUsage("ps-1", "srv-01", 0.1, 240 * 2**20),
            TaskUsage("worker-0", None, None, None),
        ],
        progress=Progress(104, 1000, 0.512, 9506.1),
    )
    values.update(changes)
    return TopView(**values)


def test_json_has_exactly_the_public_shape_with_null_for_what_is_not_known():
    printed = _view(metrics_source="metrics.k8s.io").to_json()
    assert list(printed) == ["phase", "tasks", "ps_imbalance", "progress", "metrics_source", "metrics_unreadable"]
    assert printed["metrics_source"] == "metrics.k8s.io" and printed["metrics_unreadable"] is None
    assert printed["tasks"][1] == {"task": "ps-0", "node": "srv-00", "cpu_cores": 0.9, "memory_bytes": 250 * 2**20}
    assert printed["tasks"][3] == {"task": "worker-0", "node": None, "cpu_cores": None, "memory_bytes": None}
    assert printed["ps_imbalance"] == 1.8
    assert printed["progress"] == {"step": 104, "steps": 1000, "loss": 0.512, "examples_per_sec": 9506.1}
    assert json.loads(json.dumps(printed)) == printed


def test_text_names_the_nodes_without_metrics_instead_of_printing_zeros():
    view = _view(
        tasks=[TaskUsage("ps-0", "srv-03", None, None), TaskUsage("ps-1", "srv-04", None, None)],
        without_metrics={"srv-03": "a kwok node (no kubelet, so no Summary API)", "srv-04": "a kwok node (no kubelet, so no Summary API)"},
    )
    text = top_text(view)
    assert "srv-03 reports no metrics: a kwok node" in text
    assert "srv-04 reports no metrics" in text
    rows = [line.split() for line in text.splitlines() if line.startswith("ps-")]
    assert rows == [["ps-0", "srv-03", "no", "metrics", "no", "metrics"], ["ps-1", "srv-04", "no", "metrics", "no", "metrics"]]
    assert "0.00" not in text and "0 MiB" not in text
    assert "PS imbalance (busiest PS's CPU over the mean): not known" in text


def test_text_shows_cores_memory_progress_and_imbalance():
    text = top_text(_view())
    assert "phase: Running" in text
    assert "progress: step 104 of 1000 · loss 0.5120 · 9506.1 examples/s" in text
    assert "PS imbalance (busiest PS's CPU over the mean): 1.80" in text
    assert ["ps-0", "srv-00", "0.90", "250", "MiB"] in [line.split() for line in text.splitlines()]


def test_watch_refreshes_until_the_experiment_ends_then_prints_its_final_phase(monkeypatch):
    monkeypatch.setattr("components.live.top.time.sleep", lambda seconds: None)
    views = iter([_view(), _view(), _view(phase="Succeeded", phase_detail="1000 steps")])
    out = io.StringIO()
    assert watch(lambda: next(views), 2.0, as_json=False, out=out) == 0
    printed = out.getvalue()
    assert printed.count("progress: step 104") == 3
    assert printed.rstrip().splitlines()[-1] == "the experiment ended: Succeeded (1000 steps)"


def test_watch_json_prints_one_object_per_line_and_fails_with_the_experiment(monkeypatch):
    monkeypatch.setattr("components.live.top.time.sleep", lambda seconds: None)
    views = iter([_view(), _view(phase="Failed", phase_detail="ps-0 failed")])
    out = io.StringIO()
    assert watch(lambda: next(views), 1.0, as_json=True, out=out) == 1
    lines = out.getvalue().splitlines()
    assert [json.loads(line)["phase"] for line in lines] == ["Running", "Failed"]


def test_watch_needs_a_positive_number_of_seconds(capsys):
    with pytest.raises(SystemExit) as exit:
        main(["top", "scene1-case1", "--watch", "0"])
    assert exit.value.code == 2
    assert "--watch: must be a number of seconds above 0 (got '0')" in capsys.readouterr().err


def test_top_without_a_kubeconfig_names_the_file(tmp_path, capsys):
    assert main(["top", "scene1-case1", "--kubeconfig", str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err
    assert f"no kubeconfig at {tmp_path / 'none'}" in err and "stack 'scene1-case1'" in err


def test_one_ps_doing_most_of_the_work_is_named_with_the_usual_cause():
    text = top_text(_view())  # ps-0 at 0.9 cores, ps-1 at 0.1
    assert "ps-0 does most of the PS work; the usual cause is a variable that is not partitioned" in text
    level = _view(tasks=[TaskUsage("ps-0", "srv-00", 0.5, 1), TaskUsage("ps-1", "srv-01", 0.45, 1)])
    assert "does most of the PS work" not in top_text(level)
    alone = _view(tasks=[TaskUsage("ps-0", "srv-00", 0.5, 1)])
    assert "does most of the PS work" not in top_text(alone)


def test_a_program_that_prints_no_progress_line_has_null_progress():
    assert chief_progress("epoch 1/3 ... done\n", steps_asked=None) is None
    view = _view(progress=None)
    assert view.to_json()["progress"] is None
    assert "progress: not reported (the program prints no progress line" in top_text(view)
    # The same line tfk8s's trainer prints is read from a program's log too.
    assert chief_progress(progress_line(936, 0.3176, 9506.1) + "\n", steps_asked=None) == Progress(
        936, None, 0.3176, 9506.1)


def test_watch_prints_to_standard_output_as_it_is_when_called(capsys):
    """A default bound when the module was imported kept the stdout of then: in one pytest
    session, a later test's `top` wrote to an earlier test's closed capture."""
    assert watch(lambda: _view(phase="Succeeded"), None, True) == 0
    assert json.loads(capsys.readouterr().out)["phase"] == "Succeeded"


def test_the_evaluators_last_evaluation_is_shown_with_its_task():
    log = "\n".join([
        "evaluator-0: waiting for the first checkpoint in /checkpoints",
        evaluation_event(100, 0.6812, "/checkpoints/ckpt-100"),
        evaluation_line(100, 0.6812),
        evaluation_event(200, 0.5120, "/checkpoints/ckpt-200"),
        evaluation_line(200, 0.5120),
    ]) + "\n"
    evaluation = last_evaluation(log)
    assert evaluation == EvaluationLine(200, 0.512)
    for broken in ('{"event": "evaluation", "step": 3}', '{"event": "evaluation", "step": "x", "eval_loss": 1}',
                   '{"event": "evaluation", "step": 3, "eval_loss": null}', '{"event": "evaluation", "step": true, "eval_loss": 1}'):
        assert last_evaluation(log + broken + "\n") == evaluation, broken
    assert last_evaluation("evaluator-0: waiting for the first checkpoint\n") is None
    view = _view(tasks=[*_view().tasks, TaskUsage("evaluator-0", "srv-00", 0.5, 900 * 2**20)], evaluation=evaluation)
    text = top_text(view)
    assert "evaluation: step 200 · eval_loss 0.5120" in text
    assert ["evaluator-0", "srv-00", "0.50", "900", "MiB"] in [line.split() for line in text.splitlines()]
    assert "evaluation" not in top_text(_view()), "no evaluator, no line"
    assert list(view.to_json()) == list(_view().to_json()), "top --json keeps its public shape"
