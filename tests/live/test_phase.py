"""An experiment's phase from its JobSet as the API server returns it."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from components.live.phase import (
    jobset_phase,
    last_error,
    queued_detail,
    statefulset_phase,
    summary_text,
)


def jobset(suspend=False, **status):
    return {"spec": {"suspend": suspend}, "status": status}


@pytest.mark.parametrize("js, queued, all_running, expected", [
    (None, False, False, "Pending (no JobSet yet)"),
    (jobset(suspend=True), True, False, "Queued (waiting for Kueue to admit it)"),
    (jobset(), True, False, "Admitted"),
    (jobset(), False, False, "Pending"),
    (jobset(), False, True, "Running"),
    (jobset(restarts=2, restartsCountTowardsMax=2), False, False, "Restarting (2 of 3)"),
    (jobset(restarts=2), False, True, "Running"),
    (jobset(restarts=3, restartsCountTowardsMax=1), False, False,
     "Restarting (1 of 3, and 2 after a disruption, not counted)"),
    (jobset(restarts=1), False, False, "Restarting (0 of 3, and 1 after a disruption, not counted)"),
    (jobset(terminalState="Completed"), False, False, "Succeeded"),
    (jobset(terminalState="Failed", conditions=[
        {"type": "Failed", "status": "True", "reason": "ReachedMaxRestarts", "message": "jobset failed due to reaching max number of restarts"},
    ]), False, False, "Failed (jobset failed due to reaching max number of restarts)"),
], ids=[
    "no JobSet -> Pending",
    "suspended and queued -> Queued",
    "queued workload admitted -> Admitted",
    "pods not all running -> Pending",
    "every pod running -> Running",
    "restarted, pods starting -> Restarting",
    "restarted, every pod running -> Running",
    "restarted after evictions -> only the counted restarts use up the limit",
    "restarted after an eviction only (JobSet leaves a count of 0 out) -> none counted",
    "completed -> Succeeded",
    "failed at max restarts -> Failed with the reason",
])
def test_the_phase_follows_the_jobset(js, queued, all_running, expected):
    assert str(jobset_phase(js, queued, all_running, max_restarts=3)) == expected


def test_without_its_jobset_an_experiment_with_a_ttl_may_have_ended():
    phase = jobset_phase(None, False, False, max_restarts=3, removed_after_s=600)
    assert str(phase) == (
        "Pending (no JobSet: not created yet, or removed 600 s after it ended (ttlSecondsAfterFinished))"
    )


def test_the_statefulset_model_is_done_when_its_chief_is():
    assert statefulset_phase(True, False, False).name == "Succeeded"
    assert statefulset_phase(False, True, True).name == "Failed"
    assert statefulset_phase(False, False, True).name == "Running"


def test_the_summary_text_names_steps_loss_and_speed():
    summary = {"event": "summary", "steps": 400, "loss_last": 0.41, "examples_per_sec": 42270.0}
    assert summary_text(summary) == "400 steps, final loss 0.41, 42270.0 examples/s"


def test_a_failed_tasks_last_words():
    assert last_error("starting\n\ntrainer: checkpoint 500 could not be written: NOT_FOUND\n") == (
        "trainer: checkpoint 500 could not be written: NOT_FOUND"
    )


def _workload(status: str, message: str) -> dict:
    return {"status": {"conditions": [{"type": "QuotaReserved", "status": status, "message": message, "reason": "Pending"}]}}


@pytest.mark.parametrize("workloads, events, expected", [
    pytest.param([_workload("False", "couldn't assign flavors to pod set worker: insufficient unused quota for cpu "
                            "in flavor default-flavor, 90 more needed")], [],
                 "waiting for Kueue to admit it: couldn't assign flavors to pod set worker: insufficient unused quota "
                 "for cpu in flavor default-flavor, 90 more needed", id="a Workload short of quota: Kueue's words"),
    pytest.param([], [SimpleNamespace(type="Normal", message="ok"),
                      SimpleNamespace(type="Warning", message='Workload.kueue.x-k8s.io "jobset-tf-1" is invalid: '
                                                              'spec.podSets: Too many: 11: must have at most 8 items')],
                 'Kueue has made no Workload for it: Workload.kueue.x-k8s.io "jobset-tf-1" is invalid: spec.podSets: '
                 'Too many: 11: must have at most 8 items', id="no Workload: the JobSet's last warning"),
    pytest.param([], [], "waiting for Kueue to make its Workload", id="nothing said yet"),
    pytest.param([_workload("True", "")], [], "waiting for Kueue to admit it", id="quota reserved, not yet admitted"),
])
def test_a_queued_experiment_says_why_it_waits(workloads, events, expected):
    assert queued_detail(workloads, events) == expected
