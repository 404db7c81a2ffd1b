"""`trainer.report --cluster`: a run made of `top --json` samples (no cluster; real pods in tests/realpods)."""

from __future__ import annotations

import json

import pytest

from trainer.report.cluster import Sample, Sampling, cluster_run, cpu_seconds, ps_cpu_timeline, training_window
from trainer.local.stacks import StackExperiment
from components.insight.report_figures import finding
from trainer.report.command import main, report_markdown, write_report


LOSS = {100: 0.5, 200: 0.4, 300: 0.3, 400: 0.2}


def _view(phase: str, step, cores: list, chief_cores=0.2) -> dict:
    tasks = [{"task": "chief-0", "node": "srv-00", "cpu_cores": chief_cores, "memory_bytes": 3 << 28}]
    tasks += [{"task": f"ps-{i}", "node": "srv-00" if c is not None else None, "cpu_cores": c,
               "memory_bytes": 1 << 28 if c is not None else None} for i, c in enumerate(cores)]
    progress = {"step": step, "steps": 400, "loss": LOSS.get(step),
                "examples_per_sec": 5000.0 if step is not None else None}
    return {"phase": phase, "tasks": tasks, "ps_imbalance": None, "progress": progress}


def _sampling(stack: str, hot: bool, summary=None) -> Sampling:
    """Pending while not applied, then PS CPU rates: one PS hot (partition none) or all level."""
    views = [_view("Pending", None, [None, None, None]), _view("Running", None, [0.1, 0.1, 0.1])]
    for step in (100, 200, 300):
        views.append(_view("Running", step, [0.05, 0.05, 0.5] if hot else [0.2, 0.2, 0.2]))
    views.append(_view("Succeeded", 400, [None, None, None]))
    sampling = Sampling(stack, None, 2.0)
    sampling.samples = [Sample(10.0 + 2 * i, view) for i, view in enumerate(views)]
    sampling.summary = summary
    return sampling


def _experiment(stack: str, partition: str) -> StackExperiment:
    return StackExperiment(stack, "colocated", 3, 2, {"partition": partition, "steps": 400})


def test_cpu_seconds_integrate_the_rates_between_samples():
    assert cpu_seconds([[0, 0.5], [2, 0.5], [4, 1.5]]) == 3.0
    assert cpu_seconds([[0, 0.5]]) == 0.0
    assert cpu_seconds([]) == 0.0


def test_the_timeline_starts_with_the_experiments_first_figures_and_skips_unknowns():
    timeline = ps_cpu_timeline(_sampling("a", hot=True).samples)
    assert sorted(timeline) == ["ps-0", "ps-1", "ps-2"]
    assert timeline["ps-2"] == [[0.0, 0.1], [2.0, 0.5], [4.0, 0.5], [6.0, 0.5]]


def test_training_runs_from_the_chiefs_first_step_to_its_last():
    samples = _sampling("a", hot=True).samples
    assert training_window(samples) == (14.0, 20.0)
    assert training_window(samples[:2]) is None  # no step yet
    # Finished early: the last step is the one its summary gives, first seen at 18 s.
    early = samples[:4] + [Sample(18.0, _view("Running", 200, [0.05, 0.05, 0.5])),
                           Sample(20.0, _view("Succeeded", 200, [None, None, None]))]
    assert training_window(early) == (14.0, 16.0)


def test_a_run_from_samples_has_the_local_runs_figures():
    summary = {"steps": 400, "examples_per_sec": 5100.0, "loss_last": 0.2, "bytes_per_ps": [10, 10, 900],
               "ps_of_shard": [2]}
    run = cluster_run(_sampling("hot", hot=True, summary=summary), _experiment("hot", "none"),
                      replay=lambda settings, ps: [1000])
    # While the chief trained (steps 100 to 400, 14 s to 20 s): ps-2 0.5 x 4 s, the others 0.05 x 4 s;
    # not the 0.1 cores each spent before the first step.
    assert run["ps_cpu_seconds"] == [0.2, 0.2, 2.0]
    assert run["ps_cpu_imbalance"] == 2.5
    assert run["rows_per_ps"] == [0, 0, 1000]  # the one shard, on the PS the chief says holds it
    assert (run["steps"], run["examples_per_sec"], run["loss_first"], run["loss_last"]) == (400, 5100.0, 0.5, 0.2)
    assert run["loss_curve"] == [[100, 0.5], [200, 0.4], [300, 0.3], [400, 0.2]]
    assert run["phase"] == "Succeeded" and run["source"] == "cluster" and run["sampled_seconds"] == 6.0


def test_without_the_chiefs_summary_what_only_it_knows_is_not_known(tmp_path):
    runs = [
        cluster_run(_sampling("hot", hot=True), _experiment("hot", "none"), replay=lambda settings, ps: [1000]),
        cluster_run(_sampling("level", hot=False), _experiment("level", "auto"), replay=lambda settings, ps: [1] * 3),
    ]
    assert runs[0]["rows_per_ps"] is None and runs[0]["bytes_per_ps"] is None
    # The last progress the chief logged.
    assert runs[0]["steps"] == 400 and runs[0]["loss_last"] == 0.2
    assert finding(runs).startswith("With partition none the busiest of 3 PS does 83% of the PS CPU work")
    assert "(hot and level)" in finding(runs)
    markdown = report_markdown("r", runs)
    assert "| rows per PS (first 50 batches) | not known (no summary from the chief: it had not finished) |" in markdown
    assert "![PS CPU cores over time](ps_cpu_over_time.png)" in markdown
    written = {path.name for path in write_report("r", runs, tmp_path)}
    assert {"report.json", "report.md", "ps_cpu.png", "rows_per_ps.png", "ps_cpu_over_time.png"} <= written
    assert json.loads((tmp_path / "report.json").read_text())["runs"][0]["ps_cpu_timeline"]["ps-2"][1] == [2.0, 0.5]


def test_cluster_reports_take_no_local_run_flags(capsys):
    for extra in (["--stacks", "scene1-case1"], ["--partitions", "none"], ["--batch-size", "64"]):
        with pytest.raises(SystemExit) as exit:
            main(["--cluster", "scene1-case1", *extra])
        assert exit.value.code == 2
        assert "apply to local runs only" in capsys.readouterr().err


def test_a_bad_cluster_stack_fails_before_any_sampling(tmp_path, capsys):
    assert main(["--cluster", "no-such-stack", "--out", str(tmp_path)]) == 2
    assert "stack 'no-such-stack': no file" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
