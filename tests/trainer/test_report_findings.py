"""The bottleneck finding of each experiment a report ran (`make report`, `trainer.report --cluster`),
from recorded figures: no TensorFlow process and no cluster (the sweep itself: test_report.py, slow)."""

from __future__ import annotations

import json
import os
import sys
from types import SimpleNamespace

import pytest

import trainer.report.cluster as cluster_report
from components.insight.bottleneck import BUSY, IDLE
from components.insight.report_figures import finding
from components.insight.report_findings import LOCAL_SOURCE, finding_lines, findings_text, local_measurements
from trainer.report.cluster import Sample, Sampling
from trainer.local.cpu_sampling import CpuSampler
from trainer.local.stacks import cpu_allowance
from trainer.report.command import main, report_markdown, write_report
from trainer.report.local_diagnosis import local_diagnosis
from trainer.stack_export import ClusterExport, StackExport

REQUESTS = {"ps": 2.0, "worker": 1.0, "chief": 1.0}


def export(partition: str = "none", cluster: bool = True, **changes) -> StackExport:
    """scene1-case1-hot-none's export, as `python -m components export` prints it."""
    shape = {
        "pools": {"servers": ["srv-00"]},
        "ratio": None,
        "ps_replicas": 3,
        "ps_pool": "servers",
        "ps_cpu": "200m",
        "ps_cpu_cores": 0.2,
        "worker_pool": "servers",
        "worker_cpu": "400m",
        "worker_cpu_cores": 0.4,
        "worker_gpus": 0,
        "chief_cpu": "200m",
        "chief_cpu_cores": 0.2,
    } | changes
    return StackExport(
        "scene1-case1-hot-none", "colocated", 3, 2, {"partition": partition},
        cluster=ClusterExport(**shape) if cluster else None,
    )


def task_cpu(ps: list[float], workers: list[float], chief: float = 0.02, samples: int = 10, **extra) -> dict:
    """trainer.local's `task_cpu` (its summary's last line) for a window in which each task used about
    the given cores, alternating a little above and below them at each sample."""
    level = {f"ps-{i}": cores for i, cores in enumerate(ps)}
    level |= {f"worker-{i}": cores for i, cores in enumerate(workers)} | {"chief-0": chief}
    series = {task: [round(cores * (1.05 if n % 2 else 0.95), 3) for n in range(samples)]
              for task, cores in level.items()}
    return {"every_s": 1.0, "seconds": float(samples), "samples": samples, "cores": series, "restarted": [],
            "step_time_s": 0.109} | extra


# -- the CPU each local task may use ---------------------------------------------------------


@pytest.mark.parametrize(
    "counts, cores, scaled",
    [
        pytest.param({"ps": 3, "worker": 6, "chief": 1}, 2, True, id="13 cores requested on 2: scaled down"),
        pytest.param({"ps": 3, "worker": 6, "chief": 1}, 13, False, id="exactly the machine: as requested"),
        pytest.param({"ps": 3, "worker": 6, "chief": 1}, 64, False, id="a large machine: as requested, not more"),
        pytest.param({"ps": 0, "worker": 2, "chief": 1}, 2, True, id="workers only"),
    ],
)
def test_each_task_may_use_its_request_scaled_to_this_machine(counts, cores, scaled):
    allowance = cpu_allowance(REQUESTS, counts, cores)
    requested = sum(REQUESTS[role] * counts[role] for role in counts)
    if scaled:
        # Together the tasks run here may use the machine, each role keeping its share.
        assert sum(allowance[role] * counts[role] for role in counts) == pytest.approx(cores, abs=0.01)
        assert allowance["ps"] / allowance["worker"] == pytest.approx(REQUESTS["ps"] / REQUESTS["worker"], rel=0.01)
        assert all(allowance[role] < REQUESTS[role] for role in REQUESTS)
    else:
        assert requested <= cores and allowance == REQUESTS


# -- the local run's figures: /proc every second -----------------------------------------------


class FakeProc:
    """CPU seconds per pid as /proc would give them, and a clock."""

    def __init__(self, pids: dict) -> None:
        self.now = 0.0
        self.pids = dict(pids)
        self.cpu = {pid: 0.0 for pid in pids.values()}

    def run(self, seconds: float, cores: dict) -> None:
        self.now += seconds
        for task, used in cores.items():
            self.cpu[self.pids[task]] += used * seconds

    def read(self, pid: int) -> float:
        if pid not in self.cpu:
            raise FileNotFoundError(f"/proc/{pid}/stat")
        return self.cpu[pid]


def test_the_sampler_reads_each_tasks_cores_between_samples_and_the_step_time():
    proc = FakeProc({"ps-0": 11, "worker-0": 12, "worker-1": 13, "chief-0": 14})
    sampler = CpuSampler(lambda: dict(proc.pids), clock=lambda: proc.now, read=proc.read)
    sampler.begin()
    sampler.step(10)
    for _ in range(3):
        proc.run(1.0, {"ps-0": 0.5, "worker-0": 1.0, "worker-1": 0.8, "chief-0": 0.1})
        sampler.sample()
    # worker-1 dies and comes back as a new process (the launcher restarts it, as Kubernetes would).
    proc.pids["worker-1"] = 23
    proc.cpu[23] = 0.0
    proc.run(2.0, {"ps-0": 0.25, "worker-0": 1.0, "worker-1": 0.4, "chief-0": 0.1})
    sampler.sample()
    proc.run(1.0, {"ps-0": 0.25, "worker-0": 1.0, "worker-1": 0.4, "chief-0": 0.1})
    sampler.sample()
    sampler.step(60)
    window = sampler.stop()
    assert window["cores"]["ps-0"] == [0.5, 0.5, 0.5, 0.25, 0.25]
    assert window["cores"]["worker-0"] == [1.0] * 5
    # No figure for the interval in which its process changed; not running for the whole window.
    assert window["cores"]["worker-1"] == [0.8, 0.8, 0.8, 0.4]
    assert window["restarted"] == ["worker-1"]
    assert (window["samples"], window["seconds"]) == (5, 6.0)
    assert window["step_time_s"] == pytest.approx(6.0 / 50)


def test_the_local_runs_measurements_are_its_tasks_on_this_machine_against_their_scaled_requests():
    allowance = cpu_allowance(REQUESTS, {"ps": 3, "worker": 6, "chief": 1}, 2)
    recorded = task_cpu([0.04, 0.04, 0.28], [0.2] * 6, restarted=["worker-5"])
    measured = local_measurements(recorded, allowance, 2, bytes_per_ps=[33024, 768, 512016392], server="dev-box")
    assert [t.task for t in measured.tasks] == ["chief-0", "ps-0", "ps-1", "ps-2", *[f"worker-{i}" for i in range(6)]]
    for task in measured.tasks:
        assert task.role == task.task.split("-")[0] and task.node == "dev-box"
        assert task.cpu_allowed == allowance[task.role]
        assert list(task.cpu_series) == recorded["cores"][task.task]
        assert task.running == (task.task != "worker-5")
    assert [(s.server, s.cores) for s in measured.servers] == [("dev-box", 2.0)]
    assert (measured.source, measured.samples, measured.seconds) == (LOCAL_SOURCE, 10, 10.0)
    assert measured.trainer is not None and measured.trainer.step_time_s == 0.109
    assert measured.trainer.ps_shard_bytes == {"ps-0": 33024, "ps-1": 768, "ps-2": 512016392}


# -- the local run's finding -------------------------------------------------------------------


def summary_of(cpu: dict) -> dict:
    return {"task_cpu": cpu, "bytes_per_ps": [33024, 768, 512016392]}


@pytest.mark.parametrize(
    "partition, ps, workers, bottleneck, change",
    [
        pytest.param("none", [0.037, 0.038, 0.28], [0.25, 0.25], "hot-ps",
                     ("tfk8s:trainer.partition", "none", "auto"), id="one PS busy, partition none"),
        pytest.param("auto", [0.1, 0.1, 0.1], [0.55, 0.55], "worker-bound",
                     ("tfk8s:cluster.workers.replicas", 2, 4), id="workers past their request"),
        pytest.param("auto", [0.3, 0.3, 0.3], [0.1, 0.1], "ps-bound",
                     ("tfk8s:cluster.ps.replicas", 3, 6), id="PS past their request"),
        pytest.param("auto", [0.01, 0.01, 0.01], [0.02, 0.02], "idle", None, id="everyone waits"),
    ],
)
def test_a_local_run_is_judged_by_the_rules_of_diagnose(partition, ps, workers, bottleneck, change):
    # On this machine the stack's 200m PS, 400m workers and 200m chief may be scaled down: the recorded
    # cores are set against what the run gets, so that the finding is the same on any machine.
    cores = os.cpu_count() or 1
    scaled = cpu_allowance({"ps": 0.2, "worker": 0.4, "chief": 0.2}, {"ps": 3, "worker": 2, "chief": 1}, cores)
    factor = scaled["ps"] / 0.2
    recorded = task_cpu([c * factor for c in ps], [c * factor for c in workers])
    diagnosis = local_diagnosis(export(partition), partition, 3, 2, summary_of(recorded))
    assert diagnosis["bottleneck"] == bottleneck
    assert diagnosis["confidence"] == "high", diagnosis["confidence_reason"]
    assert diagnosis["metrics_source"] == LOCAL_SOURCE and diagnosis["window"]["samples"] == 10
    changes = [(c["key"], c["from"], c["to"]) for c in diagnosis["next"]["changes"]]
    assert changes == ([change] if change else [])
    if bottleneck == "worker-bound":
        assert diagnosis["evidence"]["roles"]["workers"]["mean_utilisation"] >= BUSY
    if bottleneck == "idle":
        assert diagnosis["evidence"]["roles"]["workers"]["mean_utilisation"] < IDLE
        assert any("step time" in advice for advice in diagnosis["advice"])


def test_a_local_run_without_figures_or_requests_says_why_it_has_no_finding():
    no_cluster = local_diagnosis(export(cluster=False), "none", 3, 2, summary_of(task_cpu([0.1] * 3, [0.1] * 2)))
    assert no_cluster["bottleneck"] is None
    assert "stack 'scene1-case1-hot-none': its export has no 'cluster'" in no_cluster["reason"]
    no_samples = local_diagnosis(export(), "none", 3, 2, {"task_cpu": None})
    assert no_samples["bottleneck"] is None and "no CPU sample while the chief trained" in no_samples["reason"]


# -- what the report prints and writes ---------------------------------------------------------


def run_of(name: str, partition: str, diagnosis: dict, source: str = "local") -> dict:
    """A report run with its figures (the keys report.md shows) and its diagnosis."""
    return {
        "name": name, "stack": "scene1-case1-hot-none", "partition": partition, "ps": 3, "workers": 2,
        "settings": {"embeddingRows": 1000000, "embeddingDim": 64, "idsPerExample": 128, "batchSize": 1024,
                     "optimizer": "adagrad"},
        "steps": 100, "examples_per_sec": 7136.0, "loss_first": 0.68, "loss_last": 0.667,
        "ps_cpu_seconds": [0.4, 0.4, 2.8], "ps_cpu_imbalance": 2.1, "bytes_per_ps": [1, 1, 9],
        "rows_per_ps": [0, 0, 900], "rows_replayed_batches": 50, "loss_curve": [[100, 0.667]],
        "diagnosis": diagnosis, **({"source": "cluster", "phase": "Succeeded", "sampled_seconds": 30.0,
                                    "ps_cpu_timeline": {}} if source == "cluster" else {}),
    }


def sweep() -> list[dict]:
    hot = local_diagnosis(export("none"), "none", 3, 2, summary_of(task_cpu([0.02, 0.02, 0.4], [0.1, 0.1])))
    idle = local_diagnosis(export("auto"), "auto", 3, 2, summary_of(task_cpu([0.005] * 3, [0.01] * 2)))
    return [run_of("scene1-case1-hot-none-none", "none", hot), run_of("scene1-case1-hot-none-auto", "auto", idle)]


def test_each_run_prints_its_finding_and_the_stack_keys_to_change():
    runs = sweep()
    text = findings_text(runs).splitlines()
    hot = runs[0]["diagnosis"]
    assert text[0] == "scene1-case1-hot-none-none: 3 PS, 2 workers, partition none (local processes)"
    assert text[1] == f"  finding: hot-ps ({hot['confidence']}): {hot['summary']}"
    assert text[2] == "  tfk8s:trainer.partition: none -> auto"
    assert text[4].startswith("  finding: idle (")
    assert text[5].startswith("  no stack key to change: ")
    assert finding_lines({"bottleneck": None, "reason": "diagnose: it ended"}) == ["no finding: diagnose: it ended"]


def test_the_report_lists_the_findings_and_keeps_its_json_keys(tmp_path):
    runs = sweep()
    markdown = report_markdown("sweep", runs)
    assert markdown.splitlines()[2] == finding(runs)  # the seeds' question still answered first
    assert f"- **scene1-case1-hot-none-none**: finding: hot-ps ({runs[0]['diagnosis']['confidence']}): " in markdown
    assert "  - `tfk8s:trainer.partition: none -> auto`" in markdown
    write_report("sweep", runs, tmp_path)
    report = json.loads((tmp_path / "report.json").read_text())
    assert list(report) == ["name", "finding", "runs", "findings"]  # what was there, as it was; one key added
    assert [f["bottleneck"] for f in report["findings"]] == ["hot-ps", "idle"]
    assert report["findings"][0]["changes"] == [{"key": "tfk8s:trainer.partition", "from": "none", "to": "auto"}]
    assert report["runs"][0]["diagnosis"]["bottleneck"] == "hot-ps"


# -- a run on a cluster: what diagnose said --------------------------------------------------

# `python -m components diagnose scene1-case1-hot-none --json` over 30 s of scene1-case1-hot-none on
# one 2-core server (its evidence cut to the figures the report shows; diagnose prints them all).
RECORDED = {
    "bottleneck": "hot-ps",
    "summary": "ps-2 does most of the PS work (2.31 times the PS mean, 0.194 cores) while the other PS idle.",
    "evidence": {"source": "metrics.k8s.io", "window_s": 30.0, "samples": 7, "ps_imbalance": 2.31, "hot_ps": ["ps-2"],
                 "step_time_s": 0.05},
    "confidence": "high",
    "confidence_reason": "7 samples over 30 s; every PS and worker measured; 7 of 7 single samples read hot-ps; "
    "ps imbalance against HOT_PS_IMBALANCE: 54% from it",
    "advice": ["ps-2 does most of the PS work (imbalance 2.31): with partition none one shard holds the whole "
               "embedding, so one PS serves every lookup; auto gives one shard per PS and hashes the ids."],
    "next": {"stack": "scene1-case1-hot-none-next",
             "changes": [{"key": "tfk8s:trainer.partition", "from": "none", "to": "auto"}],
             "stack_diff": "--- scene1-case1-hot-none\n+++ scene1-case1-hot-none-next\n@@ -17 +17 @@\n"
             "-  tfk8s:trainer: {partition: none}\n+  tfk8s:trainer: {partition: auto}\n", "written": None},
    "metrics_source": "metrics.k8s.io",
    "window": {"seconds": 30.0, "samples": 7, "every_s": 5.0, "ended": None},
    "notes": [],
}

TOP_VIEWS = [("Running", None), ("Running", 100), ("Running", 300), ("Succeeded", 400)]


@pytest.fixture
def cluster(monkeypatch):
    """What the report reads of a cluster, faked at the calls it makes into components/ (the stack's
    experiment, loaded once, then `top`'s views, `status`'s summary, `diagnose`'s object); returns
    the calls they got, and sets what diagnose says."""
    calls: list[tuple] = []
    said: list[dict] = []

    def load_stack(stack):
        calls.append(("load", stack))
        return SimpleNamespace(stack=stack)

    def read_views(experiment, kubeconfig, interval_s, seen, stop):
        calls.append(("top", experiment.stack, kubeconfig))
        for phase, step in TOP_VIEWS:
            tasks = [{"task": t, "node": "srv-00", "cpu_cores": 0.1, "memory_bytes": 1} for t in ("chief-0", "ps-0")]
            progress = {"step": step, "steps": 400, "loss": 0.5 if step else None, "examples_per_sec": 5000.0}
            seen({"phase": phase, "tasks": tasks, "ps_imbalance": None, "progress": progress})
            if stop.wait(interval_s):
                return None
        return None

    def read_summary(experiment, kubeconfig):
        calls.append(("status", experiment.stack, kubeconfig))
        return None

    def read_diagnosis(stack, experiment, kubeconfig, seconds):
        assert experiment.stack == stack, "the sampling's own experiment"
        calls.append(("diagnose", stack, kubeconfig, seconds))
        return said[0]

    monkeypatch.setattr(cluster_report, "load_stack", load_stack)
    monkeypatch.setattr(cluster_report, "read_views", read_views)
    monkeypatch.setattr(cluster_report, "read_summary", read_summary)
    monkeypatch.setattr(cluster_report, "read_diagnosis", read_diagnosis)

    def answers(diagnosis: dict) -> list[tuple]:
        said[:] = [diagnosis]
        return calls

    return answers


def view(step) -> dict:
    return {"phase": "Running", "tasks": [], "ps_imbalance": None,
            "progress": {"step": step, "steps": 400, "loss": None, "examples_per_sec": None}}


def test_diagnose_starts_with_the_chiefs_first_step_and_its_json_is_the_runs_finding(cluster):
    calls = cluster(RECORDED)
    sampling = Sampling("scene1-case1-hot-none", "/home/me/kubeconfig", 2.0, diagnose_s=30.0)
    sampling.experiment = SimpleNamespace(stack="scene1-case1-hot-none")  # as its reader loads it
    sampling.seen(Sample(0.0, view(None)))
    assert sampling.diagnosing is None  # not before the training: its window would hold the start
    sampling.seen(Sample(2.0, view(100)))
    sampling.seen(Sample(4.0, view(200)))
    assert sampling.finish_diagnosis() == RECORDED
    assert calls == [("diagnose", "scene1-case1-hot-none", "/home/me/kubeconfig", 30.0)]  # once


def test_where_diagnose_cannot_read_the_cluster_the_run_says_why_in_diagnoses_words(tmp_path):
    """diagnose's own functions, run here: its line for a kubeconfig that is not there."""
    missing = tmp_path / "kubeconfig"
    said = cluster_report.read_diagnosis("scene1-case1", cluster_report.load_stack("scene1-case1"), str(missing), 30.0)
    assert said["bottleneck"] is None
    assert said["reason"].startswith(f"diagnose: stack 'scene1-case1': no kubeconfig at {missing}"), said


def test_a_stack_file_gone_by_diagnoses_window_is_the_runs_reason(tmp_path):
    experiment = cluster_report.load_stack("scene1-case1")
    said = cluster_report.read_diagnosis(str(tmp_path / "Pulumi.gone.yaml"), experiment, None, 30.0)
    assert said["bottleneck"] is None and said["reason"].startswith("diagnose: stack 'scene1-case1': "), said


def test_a_stack_that_cannot_be_loaded_is_the_samplings_error_and_nothing_is_read_of_a_cluster(monkeypatch):
    read = []
    for call in ("read_views", "read_summary", "read_diagnosis"):
        monkeypatch.setattr(cluster_report, call, lambda *args, call=call: read.append(call))
    sampling = Sampling("no-such-stack", None, 0.1)
    sampling.start(0.0)
    sampling.stop()
    assert sampling.error.startswith("stack 'no-such-stack': no file"), sampling.error
    assert read == []


def test_a_cluster_report_prints_and_writes_diagnoses_finding(cluster, tmp_path, capsys):
    calls = cluster(RECORDED)
    stack = tmp_path / "scene1-case1-hot-none.json"
    stack.write_text(json.dumps(export().to_json()))
    out = tmp_path / "reports"
    assert main(["--cluster", str(stack), "--interval", "0.1", "--diagnose-seconds", "30", "--name", "r",
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out.splitlines()
    at = printed.index("scene1-case1-hot-none: 3 PS, 2 workers, partition none (a cluster's pods)")
    assert printed[at + 1] == f"  finding: hot-ps (high): {RECORDED['summary']}"
    assert printed[at + 2] == "  tfk8s:trainer.partition: none -> auto"
    report = json.loads((out / "r" / "report.json").read_text())
    assert report["runs"][0]["diagnosis"] == RECORDED
    assert report["findings"][0]["bottleneck"] == "hot-ps"
    assert sorted(call[0] for call in calls) == ["diagnose", "load", "status", "top"]  # the stack loaded once


def test_a_diagnose_window_shorter_than_diagnose_takes_is_refused_before_sampling(cluster, tmp_path, capsys):
    calls = cluster(RECORDED)
    stack = tmp_path / "s.json"
    stack.write_text(json.dumps(export().to_json()))
    assert main(["--cluster", str(stack), "--diagnose-seconds", "10", "--out", str(tmp_path)]) == 2
    assert "--diagnose-seconds must be at least 30" in capsys.readouterr().err
    assert calls == []
