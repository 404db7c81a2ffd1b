"""`python -m components diagnose`: its flags, its text and its one JSON object, `--write` and what it
refuses, run as a user runs it (`main([...])` against a fake API server, the sampling clock moved by the
test). The finding is the test's own here (the rules have tests of their own, tests/diagnose/)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Iterator

import pytest

from components.cli.main import main
from components.objects.loading import load_experiment
from components.plan.experiment import Experiment
from components.spec.stack_files import STACKS_DIR
from components.insight import bottleneck
from tests.diagnose.test_sampling import CPU, METRICS_PATH, STACK, Clock, pod_metrics, running
from tests.live.fake_api import FakeCluster, serve

PARTITION = bottleneck.Change("tfk8s:trainer.partition", "none", "auto")
HOT_PS = bottleneck.Finding(
    bottleneck="hot-ps",
    summary="ps-0 does most of the PS work (0.19 of 0.21 cores), the other PS idle",
    evidence={"ps_imbalance": 2.714, "hot_ps": ["ps-0"], "ps_cores": {"ps-0": 0.19, "ps-1": 0.01, "ps-2": 0.01}},
    confidence="high",
    confidence_reason="10 of 10 samples agree",
    changes=(PARTITION,),
    advice=("partition none puts the whole table on ps-0; auto gives one shard per PS",),
)


@pytest.fixture
def cluster(tmp_path) -> Iterator[FakeCluster]:
    yield from serve(tmp_path)


@pytest.fixture
def experiment() -> Experiment:
    return load_experiment(STACK)


@pytest.fixture
def measured_by(monkeypatch):
    """The measurements the rules were given, and the finding they return (HOT_PS unless set)."""
    given: dict = {"finding": HOT_PS}

    def rules(measured, shape):
        given["measured"], given["shape"] = measured, shape
        return given["finding"]

    monkeypatch.setattr(bottleneck, "diagnose", rules)
    return given


@pytest.fixture
def clock(monkeypatch, cluster, experiment) -> Clock:
    """The experiment running, its figures the same at each sample, on a clock that waits for nothing."""
    pods = running(cluster, experiment)
    fake = Clock(lambda index: cluster.routes.update({METRICS_PATH: pod_metrics(pods, CPU)}))
    monkeypatch.setattr("components.live.diagnose.time", SimpleNamespace(monotonic=fake, sleep=fake.sleep))
    return fake


@pytest.fixture
def stack_file(tmp_path) -> Path:
    """The stack given by its path, in a folder of its own (where --write writes beside it)."""
    folder = tmp_path / "stacks"
    folder.mkdir()
    path = folder / f"Pulumi.{STACK}.yaml"
    shutil.copy(STACKS_DIR / f"Pulumi.{STACK}.yaml", path)
    return path


def diagnose(cluster: FakeCluster, stack: str, *flags: str) -> int:
    return main(["diagnose", stack, "--kubeconfig", cluster.kubeconfig, *flags])


def test_json_is_one_object_with_the_finding_the_next_stack_and_the_window(cluster, clock, measured_by, capsys):
    assert diagnose(cluster, STACK, "--json") == 0
    out = capsys.readouterr().out
    view = json.loads(out)  # the whole output: one object
    assert {"bottleneck", "evidence", "confidence", "next", "metrics_source"} <= set(view)
    assert view["bottleneck"] == "hot-ps" and view["bottleneck"] in bottleneck.BOTTLENECKS
    assert view["evidence"] == HOT_PS.evidence and view["confidence"] == "high"
    assert view["next"]["changes"] == [{"key": "tfk8s:trainer.partition", "from": "none", "to": "auto"}]
    assert view["next"]["stack_diff"].startswith(
        f"--- Pulumi.{STACK}.yaml\n+++ Pulumi.{STACK}-next.yaml\n"
    )
    assert "-    partition: none\n+    partition: auto\n" in view["next"]["stack_diff"]
    assert view["metrics_source"] == "metrics.k8s.io"
    assert view["window"] == {"seconds": 45.0, "samples": 10, "every_s": 5.0, "ended": None}
    measured = measured_by["measured"]
    assert measured.samples == 10 and {task.task for task in measured.tasks} >= {"ps-0", "worker-1"}
    assert measured_by["shape"].partition == "none" and measured_by["shape"].ps_replicas == 3
    assert not (STACKS_DIR / f"Pulumi.{STACK}-next.yaml").exists(), "nothing written without --write"


def test_text_names_the_bottleneck_its_evidence_how_sure_the_window_the_advice_and_the_diff(
    cluster, clock, measured_by, capsys
):
    assert diagnose(cluster, STACK) == 0
    text = capsys.readouterr().out
    assert "bottleneck: hot-ps\n  ps-0 does most of the PS work" in text
    assert "confidence: high (10 of 10 samples agree)" in text
    assert "sampled 45 s (10 samples, one every 5 s); CPU from the metrics API (metrics.k8s.io, metrics-server)" in text
    evidence = text.split("evidence:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert [line.split()[0] for line in evidence] == ["ps_imbalance", "hot_ps", "ps_cores"]
    assert "  - partition none puts the whole table on ps-0" in text
    assert f"next experiment ({STACK}-next):\n  tfk8s:trainer.partition: none -> auto" in text
    assert "+    partition: auto" in text
    assert f"python -m components diagnose {STACK} --write NEW-STACK" in text
    assert "tfk8s's trainer: " in text
    assert "network: not read" in text


def test_write_puts_the_new_stack_beside_the_old_and_says_what_to_run(cluster, clock, measured_by, stack_file, capsys):
    assert diagnose(cluster, str(stack_file), "--write", "hot-auto-try") == 0
    out = capsys.readouterr().out
    target = stack_file.parent / "Pulumi.hot-auto-try.yaml"
    old, new = stack_file.read_text(), target.read_text()
    assert new == old.replace("    partition: none\n", "    partition: auto\n")
    assert load_experiment(str(target)).config.trainer.partition == "auto"
    assert "pulumi up --stack hot-auto-try" in out and "pulumi stack init hot-auto-try" in out
    assert "Pulumi reads stack files from stacks/" in out  # this folder is not the project's stacks/
    assert f"--- Pulumi.{STACK}.yaml\n+++ Pulumi.hot-auto-try.yaml" in out
    assert sorted(p.name for p in stack_file.parent.iterdir()) == ["Pulumi.hot-auto-try.yaml", stack_file.name]


def test_write_never_overwrites_and_refuses_before_sampling(cluster, clock, measured_by, stack_file, capsys):
    existing = stack_file.parent / "Pulumi.taken.yaml"
    existing.write_text("# someone's own\n")
    assert diagnose(cluster, str(stack_file), "--write", "taken") == 2
    err = capsys.readouterr().err
    assert "Pulumi.taken.yaml exists: diagnose never writes over a stack file" in err and "nothing written" in err
    assert existing.read_text() == "# someone's own\n"
    assert cluster.asked == [] and clock.sleeps == [], "refused before the window"


def test_write_refuses_a_stack_sharing_values_through_anchors_before_sampling(
    cluster, clock, measured_by, stack_file, capsys
):
    text = stack_file.read_text()
    shared = text.replace("ps: {replicas: 3, pool: servers, cpu: 200m}", "ps: {replicas: 3, pool: servers, cpu: &small 200m}")
    shared = shared.replace("chief: {cpu: 200m}", "chief: {cpu: *small}")
    assert shared != text
    stack_file.write_text(shared)
    assert diagnose(cluster, str(stack_file), "--write", "hot-auto-try") == 2
    err = capsys.readouterr().err
    assert err == (
        "diagnose: --write hot-auto-try: the stack file shares values through YAML anchors (*small), so one key "
        "cannot be changed alone; make the change by hand; nothing sampled, nothing written\n"
    )
    assert cluster.asked == [] and clock.sleeps == [], "refused before the window"
    assert list(stack_file.parent.iterdir()) == [stack_file]


@pytest.mark.parametrize("name, said", [
    pytest.param(
        "Tf_Next",
        "diagnose: --write 'Tf_Next': the new stack's namespace would be 'tf-Tf_Next' (the stack sets no "
        "tfk8s:cluster.namespace), which is no DNS label: give a name of at most 60 lower-case letters, digits "
        "and '-', ending in a letter or digit; nothing sampled, nothing written",
        id="no namespace of it",
    ),
    pytest.param(
        "n" * 64,
        "the new stack's name is a label of its objects: at most 63 letters, digits, '-', '_' and '.'",
        id="too long a label",
    ),
])
def test_write_refuses_a_name_plan_would_refuse(name, said, cluster, clock, measured_by, stack_file, capsys):
    assert diagnose(cluster, str(stack_file), "--write", name) == 2
    err = capsys.readouterr().err
    assert said in err
    assert err.count("\n") == 1, "one line, naming --write and what it takes"
    assert cluster.asked == [] and list(stack_file.parent.iterdir()) == [stack_file]


@pytest.mark.parametrize("name, cluster_values, refused", [
    pytest.param("Tf_Next", {}, True, id="tf-Tf_Next is no namespace"),
    pytest.param("Tf_Next", {"namespace": "team-a"}, False, id="the stack names its namespace"),
    pytest.param("Tf_Next", {"namespace": {"name": "team-a", "existing": True}}, False, id="a team's namespace"),
    pytest.param("n" * 61, {}, True, id="tf- and 61 characters is past a DNS label"),
    pytest.param("n" * 60, {}, False, id="tf- and 60 characters is a DNS label"),
    pytest.param("n" * 64, {"namespace": "team-a"}, True, id="past a label value, whatever the namespace"),
])
def test_which_names_write_takes_depends_on_whether_the_stack_names_its_namespace(name, cluster_values, refused):
    from components.cli.diagnose_command import _name_problem

    assert (_name_problem(name, {"tfk8s:cluster": cluster_values}) is not None) == refused


@pytest.mark.parametrize("flags, said", [
    pytest.param(["--seconds", "10"], "argument --seconds: must be at least 30 seconds (got '10')", id="too short"),
    pytest.param(["--seconds", "3601"], "argument --seconds: must be at most 3600 seconds, an hour (got '3601')",
                 id="too long"),
    pytest.param(["--seconds", "1e9"], "must be at most 3600 seconds", id="a typo's billion"),
    pytest.param(["--seconds", "nan"], "argument --seconds: must be a number of seconds above 0 (got 'nan')", id="nan"),
    pytest.param(["--write", "a b"], "argument --write: 'a b' is not a stack name: letters, digits", id="bad name"),
    pytest.param(["--write", ""], "argument --write: '' is not a stack name", id="empty name"),
    pytest.param(
        ["--write", "Pulumi.next.yaml"],
        "argument --write: 'Pulumi.next.yaml' is a file's name; --write takes the new stack's name and writes "
        "Pulumi.<NEW-STACK>.yaml beside the stack file: give 'next'",
        id="a stack file's name",
    ),
    pytest.param(
        ["--write", "stacks/Pulumi.next.yaml"],
        "argument --write: 'stacks/Pulumi.next.yaml' is a file's name; --write takes the new stack's name",
        id="a stack file's path",
    ),
    pytest.param(["--write", "next.yml"], "'next.yml' is a file's name; --write takes", id="a .yml file"),
])
def test_flags_not_of_their_form_are_refused_with_exit_2(flags, said, capsys):
    with pytest.raises(SystemExit) as exited:
        main(["diagnose", STACK, *flags])
    assert exited.value.code == 2
    assert said in capsys.readouterr().err


def test_a_change_plan_refuses_is_named_as_a_fault_of_the_rules_and_nothing_is_written(
    cluster, clock, measured_by, stack_file, capsys
):
    measured_by["finding"] = bottleneck.Finding(
        "ps-bound", "the PS are saturated", {}, "medium", "7 of 10 samples agree",
        (bottleneck.Change("tfk8s:cluster.ps.cpu", "200m", "lots"),),
    )
    assert diagnose(cluster, str(stack_file), "--json", "--write", "more-cpu") == 2
    captured = capsys.readouterr()
    view = json.loads(captured.out)
    assert view["next"]["stack_diff"] is None
    assert "the rules proposed a stack that plan refuses" in view["next"]["refused"]
    assert "tfk8s:cluster.ps.cpu" in captured.err and "nothing written" in captured.err
    assert list(stack_file.parent.iterdir()) == [stack_file]


def test_a_finding_with_no_stack_change_writes_nothing(cluster, clock, measured_by, stack_file, capsys):
    measured_by["finding"] = bottleneck.Finding(
        "idle", "everyone waits", {"mean_cpu_share": 0.05}, "low", "3 of 10 samples agree", (),
        ("the workers wait on their input: give the input pipeline more threads",),
    )
    assert diagnose(cluster, str(stack_file), "--write", "idle-try") == 1
    captured = capsys.readouterr()
    assert "next experiment: no stack key to change" in captured.out
    assert "the finding changes no stack key; nothing written" in captured.err
    assert list(stack_file.parent.iterdir()) == [stack_file]


def test_an_experiment_that_ended_before_sampling_has_nothing_to_diagnose(cluster, clock, experiment, measured_by, capsys):
    jobset_path = next(path for path in cluster.routes if "/jobsets/" in path)
    cluster.routes[jobset_path] = (200, {"metadata": {"name": "x"}, "spec": {}, "status": {"terminalState": "Completed"}})
    assert diagnose(cluster, STACK) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"stack '{STACK}': the experiment ended (Succeeded) before a sample: nothing to diagnose" in captured.err
    assert "measured" not in measured_by, "the rules are not asked without figures"


def test_an_experiment_that_fails_in_the_window_is_diagnosed_and_exits_1(cluster, clock, experiment, measured_by, capsys):
    jobset_path = next(path for path in cluster.routes if "/jobsets/" in path)
    before = clock.before_sample

    def failing(index: int) -> None:
        before(index)
        if index == 5:
            cluster.routes[jobset_path] = (200, {"metadata": {"name": "x"}, "spec": {}, "status": {"terminalState": "Failed"}})

    clock.before_sample = failing
    assert diagnose(cluster, STACK) == 1
    text = capsys.readouterr().out
    assert "sampled 20 s (5 samples, one every 5 s); the experiment ended (Failed) during the window" in text
    assert measured_by["measured"].samples == 5


def test_without_a_cluster_it_exits_2_naming_the_kubeconfig(tmp_path, capsys):
    assert main(["diagnose", STACK, "--kubeconfig", str(tmp_path / "none")]) == 2
    assert f"stack '{STACK}': no kubeconfig at" in capsys.readouterr().err


def test_help_lists_its_exit_codes(capsys):
    with pytest.raises(SystemExit):
        main(["diagnose", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert "1 nothing to diagnose: the experiment ended before a sample" in shown
    assert "2 the stack or the kubeconfig cannot be read" in shown


def test_through_the_real_rules_an_unpartitioned_embedding_is_a_hot_ps_and_the_written_stack_partitions_it(
    cluster, clock, stack_file, capsys
):
    """No finding of the test's own: components/insight/bottleneck.py reads what was sampled (ps-0 near its request,
    the other PS idle, the workers busy) and proposes the next stack, which is written and loads."""
    assert diagnose(cluster, str(stack_file), "--json", "--write", "hot-auto") == 0
    view = json.loads(capsys.readouterr().out)
    assert view["bottleneck"] == "hot-ps" and "ps-0" in view["summary"]
    assert view["next"]["changes"] == [{"key": "tfk8s:trainer.partition", "from": "none", "to": "auto"}]
    assert view["next"]["written"].endswith("Pulumi.hot-auto.yaml")
    written = load_experiment(str(stack_file.parent / "Pulumi.hot-auto.yaml"))
    assert written.config.trainer.partition == "auto" and written.config.cluster.ps_count == 3

    assert diagnose(cluster, str(stack_file)) == 0
    text = capsys.readouterr().out
    assert "bottleneck: hot-ps" in text
    tasks = text.split("\n  tasks:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert tasks[0].split()[:3] == ["ROLE", "NODE", "CORES"]
    assert [row.split()[:4] for row in tasks[1:] if row.split()[0] == "ps-0"] == [["ps-0", "ps", "srv-00", "0.19"]]


def test_a_team_programs_stack_with_secrets_is_written_with_them_as_they_were(
    cluster, monkeypatch, measured_by, tmp_path, capsys
):
    from tests.diagnose.test_stack_edit import SECRET_STACK

    folder = tmp_path / "team"
    folder.mkdir()
    stack_file = folder / "Pulumi.team.yaml"
    stack_file.write_text(SECRET_STACK)
    experiment = load_experiment(str(stack_file))
    pods = running(cluster, experiment)
    fake = Clock(lambda index: cluster.routes.update({
        f"/apis/metrics.k8s.io/v1beta1/namespaces/{experiment.namespace}/pods": pod_metrics(
            pods, {task: 0.5 for task in pods}, experiment.namespace
        )
    }))
    monkeypatch.setattr("components.live.diagnose.time", SimpleNamespace(monotonic=fake, sleep=fake.sleep))
    measured_by["finding"] = bottleneck.Finding(
        "worker-bound", "the workers are busy", {}, "high", "every sample agrees",
        (bottleneck.Change("tfk8s:cluster.workers.replicas", 4, 8),),
    )

    assert diagnose(cluster, str(stack_file), "--write", "team-more") == 0
    out = capsys.readouterr().out
    assert "a team's program: judged from what the cluster measures alone" in out
    assert measured_by["measured"].trainer is None and measured_by["shape"].partition is None
    new = (folder / "Pulumi.team-more.yaml").read_text()
    assert new == SECRET_STACK.replace("replicas: 4, pool: servers}", "replicas: 8, pool: servers}")
    assert "its secret values are team's, encrypted as they were" in out
    assert "pulumi config set --secret --stack team-more" in out
