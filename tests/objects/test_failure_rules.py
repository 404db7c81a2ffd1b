"""`failOn` and disruptions (components/objects/failure_rules.py): which exits end the experiment,
and which losses never count, as the Job and JobSet controllers read the objects."""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
from typing import Any

import pytest

from components.objects.failure_rules import (
    disruption_message_pattern,
    exit_code_message_pattern,
    failed_on_exit,
)
from components.objects.loading import load_experiment_values
from components.objects.start_barrier import BARRIER_SCRIPT, START_DEADLINE_EXIT, TERMINATION_LOG
from components.plan.trainer_bundle import load_trainer_bundle
from components.spec.models import StackConfigError
from components.spec.stack_files import PROJECT_ROOT, read_stack_values
from tests.harness import run_program
from tests.pods import replicated_jobs

DISRUPTED = {"type": "DisruptionTarget", "status": "True"}
# The Job controller's condition messages, as Kubernetes 1.34 writes them (pod_failure_policy.go).
EXIT_MESSAGE = "Container tensorflow for pod team-a/tf-worker-0-1-x7kq2 failed with exit code 3 matching FailJob rule at index 1"
DISRUPTION_MESSAGE = "Pod team-a/tf-ps-0-0-a1b2c has condition DisruptionTarget matching FailJob rule at index 0"


def stack_values(edit, stack: str = "scene1-case2") -> tuple[str, dict[str, Any]]:
    name, values = read_stack_values(stack)
    values = copy.deepcopy(values)
    edit(values["tfk8s:cluster"])
    return name, values


def jobs_by_role(run) -> dict[str, dict]:
    return {job.manifest["metadata"]["name"]: job.manifest["spec"] for job in replicated_jobs(run)}


def test_fail_on_fails_the_roles_job_at_once_and_the_experiment_with_it():
    def edit(cluster):
        cluster["workers"]["failOn"] = [42, "3-5"]
        cluster["ps"]["failOn"] = [2]

    run = run_program(*stack_values(edit))
    jobs = jobs_by_role(run)
    assert jobs["worker"]["podFailurePolicy"]["rules"] == [
        {"action": "Ignore", "onPodConditions": [DISRUPTED]},
        {"action": "FailJob", "onExitCodes": {"containerName": "tensorflow", "operator": "In", "values": [3, 4, 5, 42]}},
    ]
    assert jobs["ps"]["podFailurePolicy"]["rules"] == [
        {"action": "FailJob", "onPodConditions": [DISRUPTED]},
        {"action": "FailJob", "onExitCodes": {"containerName": "tensorflow", "operator": "In", "values": [2]}},
    ]
    assert jobs["chief"]["podFailurePolicy"]["rules"] == [{"action": "Ignore", "onPodConditions": [DISRUPTED]}]
    (jobset,) = run.of_kind("JobSet")
    rules = jobset.manifest["spec"]["failurePolicy"]["rules"]
    # The exit-code rule comes first: a permanent failure wins over a PS restart seen at the same time.
    assert [rule["name"] for rule in rules] == ["FailedOnExitCode", "ChiefFailed", "PSDisrupted"]
    assert rules[0]["action"] == "FailJobSet" and rules[0]["onJobFailureReasons"] == ["PodFailurePolicy"]
    (pattern,) = rules[0]["onJobFailureMessagePatterns"]
    assert re.match(pattern, EXIT_MESSAGE) and not re.match(pattern, DISRUPTION_MESSAGE)


def test_an_evicted_task_never_counts_and_an_evicted_ps_restarts_the_experiment_uncounted():
    run = run_program(*stack_values(lambda cluster: None))
    jobs = jobs_by_role(run)
    for role in ("chief", "worker"):
        assert jobs[role]["podFailurePolicy"]["rules"] == [{"action": "Ignore", "onPodConditions": [DISRUPTED]}]
    # A Pod failure policy needs every retry to be a new pod.
    assert {spec["template"]["spec"]["restartPolicy"] for spec in jobs.values()} == {"Never"}
    (jobset,) = run.of_kind("JobSet")
    disrupted = jobset.manifest["spec"]["failurePolicy"]["rules"][-1]
    assert disrupted["action"] == "RestartJobSetAndIgnoreMaxRestarts" and disrupted["targetReplicatedJobs"] == ["ps"]
    (pattern,) = disrupted["onJobFailureMessagePatterns"]
    assert re.match(pattern, DISRUPTION_MESSAGE) and not re.match(pattern, EXIT_MESSAGE)
    # The PS's failOn rule is at index 1: its exit never reads as a disruption.
    assert not re.match(pattern, DISRUPTION_MESSAGE.replace("index 0", "index 1"))
    assert "FailedOnExitCode" not in {rule["name"] for rule in jobset.manifest["spec"]["failurePolicy"]["rules"]}


def test_the_statefulset_models_chief_job_has_the_same_rules():
    def edit(cluster):
        cluster["workload"] = "statefulset"
        cluster["chief"] = {**cluster.get("chief", {}), "failOn": [2]}

    run = run_program(*stack_values(edit))
    (chief,) = run.of_kind("Job")
    assert chief.manifest["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    assert chief.manifest["spec"]["podFailurePolicy"]["rules"][1]["onExitCodes"]["values"] == [2]


@pytest.mark.parametrize(
    "edit, expected",
    [
        (lambda c: c["workers"].update(failOn=[3, 3]), "tfk8s:cluster.workers.failOn: lists 3 more than once"),
        (lambda c: c["workers"].update(failOn=[0]), "tfk8s:cluster.workers.failOn[0]: Input should be greater than or equal to 1"),
        (lambda c: c["ps"].update(failOn=[256]), "tfk8s:cluster.ps.failOn[0]: Input should be less than or equal to 255"),
        (lambda c: c["ps"].update(failOn="3"), "tfk8s:cluster.ps.failOn: should be a list"),
        (lambda c: c["ps"].update(failOn=["0-5"]), "tfk8s:cluster.ps.failOn: the range 0-5 must run upwards within 1-255"),
        (lambda c: c["ps"].update(failOn=["9-3"]), "tfk8s:cluster.ps.failOn: the range 9-3 must run upwards"),
        (lambda c: c["ps"].update(failOn=["two"]), "tfk8s:cluster.ps.failOn[0]: must be an exit code (1 to 255) or a range"),
        (lambda c: c["ps"].update(failOn=[3, "1-5"]), "tfk8s:cluster.ps.failOn: lists 3 more than once"),
        (lambda c: c.update(workload="statefulset") or c["workers"].update(failOn=[3]),
         "workers.failOn need workload: jobset (a StatefulSet restarts its pods whatever their exit code)"),
    ],
)
def test_bad_fail_on_is_refused_naming_the_field(edit, expected):
    with pytest.raises(StackConfigError) as error:
        load_experiment_values(*stack_values(edit), load_trainer_bundle(PROJECT_ROOT))
    assert "stack 'scene1-case2'" in str(error.value)
    assert expected in str(error.value)


def test_the_task_and_code_are_read_from_the_job_controllers_message():
    exited = failed_on_exit(EXIT_MESSAGE)
    assert exited is not None and (exited.container, exited.pod, exited.code) == ("tensorflow", "tf-worker-0-1-x7kq2", 3)
    assert failed_on_exit(DISRUPTION_MESSAGE) is None
    assert failed_on_exit("") is None
    assert re.match(exit_code_message_pattern("tensorflow"), EXIT_MESSAGE)
    assert not re.match(exit_code_message_pattern("other"), EXIT_MESSAGE)
    assert re.match(disruption_message_pattern(0), DISRUPTION_MESSAGE)


# -- ttlSecondsAfterFinished -----------------------------------------------------------------


def test_ttl_seconds_after_finished_is_the_jobsets_and_needs_one():
    run = run_program(*stack_values(lambda cluster: cluster.update(ttlSecondsAfterFinished=600)))
    (jobset,) = run.of_kind("JobSet")
    assert jobset.manifest["spec"]["ttlSecondsAfterFinished"] == 600
    (plain,) = run_program(*stack_values(lambda cluster: None)).of_kind("JobSet")
    assert "ttlSecondsAfterFinished" not in plain.manifest["spec"], "kept until destroyed, as before"
    with pytest.raises(StackConfigError) as error:
        load_experiment_values(*stack_values(lambda c: c.update(ttlSecondsAfterFinished=60, workload="statefulset")),
                               load_trainer_bundle(PROJECT_ROOT))
    assert "ttlSecondsAfterFinished needs workload: jobset" in str(error.value)
    with pytest.raises(StackConfigError) as error:
        load_experiment_values(*stack_values(lambda c: c.update(ttlSecondsAfterFinished=-1)),
                               load_trainer_bundle(PROJECT_ROOT))
    assert "tfk8s:cluster.ttlSecondsAfterFinished: Input should be greater than or equal to 0" in str(error.value)


# -- startDeadline ---------------------------------------------------------------------------


def test_a_start_deadline_waits_in_an_init_container_and_ends_the_experiment_past_it():
    run = run_program(*stack_values(lambda cluster: cluster.update(startDeadline="10m")))
    jobs = jobs_by_role(run)
    for role, spec in jobs.items():
        pod = spec["template"]["spec"]
        (barrier,) = pod["initContainers"]
        (main,) = pod["containers"]
        assert barrier["name"] == "start-barrier" and barrier["command"][:2] == ["python3", "-c"]
        assert barrier["command"][-1] == "600", "10m in seconds"
        assert {e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] for e in barrier["env"]} == {
            "TFK8S_EARLIER_FAILURES": "metadata.annotations['batch.kubernetes.io/job-index-failure-count']",
            "TFK8S_EARLIER_IGNORED_FAILURES":
                "metadata.annotations['batch.kubernetes.io/job-index-ignored-failure-count']",
        }, "a replacement pod knows it is one"
        assert (barrier["image"], barrier["envFrom"], barrier["securityContext"]) == (
            main["image"], main["envFrom"], main["securityContext"])
        rules = spec["podFailurePolicy"]["rules"]
        # The disruption rule keeps index 0 (a PS's disruption pattern names it).
        assert rules[0]["onPodConditions"] == [DISRUPTED], role
        assert rules[1] == {"action": "FailJob", "onExitCodes": {
            "containerName": "start-barrier", "operator": "In", "values": [75]}}
    (jobset,) = run.of_kind("JobSet")
    first = jobset.manifest["spec"]["failurePolicy"]["rules"][0]
    assert first["name"] == "StartDeadlineExceeded" and first["action"] == "FailJobSet"
    barrier_message = EXIT_MESSAGE.replace("Container tensorflow", "Container start-barrier").replace("code 3", "code 75")
    assert re.match(first["onJobFailureMessagePatterns"][0], barrier_message)
    assert not re.match(first["onJobFailureMessagePatterns"][0], EXIT_MESSAGE), "a failOn exit is not a late start"
    # Without it, no init container and no rule: a task waits for its peers as TensorFlow does.
    plain = jobs_by_role(run_program(*stack_values(lambda cluster: None)))
    assert all("initContainers" not in spec["template"]["spec"] for spec in plain.values())


@pytest.mark.parametrize("value, seconds", [(90, 90), ("90s", 90), ("10m", 600), ("1h", 3600)])
def test_start_deadline_takes_seconds_or_a_unit(value, seconds):
    experiment = load_experiment_values(*stack_values(lambda c: c.update(startDeadline=value)),
                                        load_trainer_bundle(PROJECT_ROOT))
    assert experiment.config.cluster.start_deadline == seconds


@pytest.mark.parametrize("edit, expected", [
    (lambda c: c.update(startDeadline="10 minutes"), "tfk8s:cluster.startDeadline: '10 minutes' is no duration"),
    (lambda c: c.update(startDeadline=0), "tfk8s:cluster.startDeadline: Input should be greater than or equal to 1"),
    (lambda c: c.update(startDeadline="2d"), "tfk8s:cluster.startDeadline: '2d' is no duration"),
    (lambda c: c.update(startDeadline="48h"), "tfk8s:cluster.startDeadline: Input should be less than or equal to 86400"),
    (lambda c: c.update(startDeadline="5m", workload="statefulset"), "startDeadline needs workload: jobset"),
])
def test_bad_start_deadlines_are_refused_naming_the_field(edit, expected):
    with pytest.raises(StackConfigError) as error:
        load_experiment_values(*stack_values(edit), load_trainer_bundle(PROJECT_ROOT))
    assert expected in str(error.value)


def test_the_barrier_passes_once_every_name_resolves_and_gives_up_naming_the_others(tmp_path):
    log = tmp_path / "termination-log"
    script = BARRIER_SCRIPT.replace(TERMINATION_LOG, str(log))
    cluster = {"chief": ["localhost:2222"], "worker": ["localhost:2222", "worker-1.never.invalid:2222"]}
    env = {**os.environ, "TFK8S_CLUSTER": json.dumps(cluster)}
    env.pop("TFK8S_CLUSTER_FILE", None)
    late = subprocess.run([sys.executable, "-c", script, "1"], env=env, capture_output=True, text=True, timeout=60)
    assert late.returncode == START_DEADLINE_EXIT
    assert log.read_text() == "not running within startDeadline (1 s): worker-1"
    cluster["worker"].pop()
    env["TFK8S_CLUSTER"] = json.dumps(cluster)
    ready = subprocess.run([sys.executable, "-c", script, "30"], env=env, capture_output=True, text=True, timeout=60)
    assert ready.returncode == 0, ready.stderr

    # A replacement pod (the Job counted an earlier failure of its task) does not wait: the run started.
    cluster["worker"].append("worker-1.never.invalid:2222")
    env["TFK8S_CLUSTER"] = json.dumps(cluster)
    for counted in ("TFK8S_EARLIER_FAILURES", "TFK8S_EARLIER_IGNORED_FAILURES"):
        replaced = subprocess.run([sys.executable, "-c", script, "30"], env={**env, counted: "1"},
                                  capture_output=True, text=True, timeout=60)
        assert replaced.returncode == 0, replaced.stderr
    first = subprocess.run([sys.executable, "-c", script, "1"], env={**env, "TFK8S_EARLIER_FAILURES": ""},
                           capture_output=True, text=True, timeout=60)
    assert first.returncode == START_DEADLINE_EXIT, "no earlier failure: the first pod of its task waits"
