"""How a task stands against the plan, from its pod as the API server returns it (components/live/tasks.py)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Optional

import pytest

from components.live.tasks import task_status
from components.plan.planner import Task, TaskPlacement

NODES = {"srv-00": object(), "srv-01": object()}


def pod(node: Optional[str], phase: str, unschedulable: str = "") -> SimpleNamespace:
    conditions = [SimpleNamespace(type="PodScheduled", status="False", message=unschedulable, reason="Unschedulable")]
    return SimpleNamespace(spec=SimpleNamespace(node_name=node),
                           status=SimpleNamespace(phase=phase, conditions=conditions if unschedulable else []))


PINNED = TaskPlacement(Task("worker", 3), "servers", "srv-00")
UNPINNED = TaskPlacement(Task("worker", 3), "managed", None)


@pytest.mark.parametrize("placement, the_pod, strict, event, finished, expected", [
    pytest.param(PINNED, pod("srv-00", "Running"), True, "", False, ("Running", True, ""),
                 id="running on its server -> as planned"),
    pytest.param(UNPINNED, pod("srv-01", "Running"), True, "", False, ("Running", True, ""),
                 id="unpinned, running anywhere in its pool -> as planned"),
    pytest.param(PINNED, pod("srv-01", "Running"), True, "", False, ("Running", False, "on srv-01, not on srv-00"),
                 id="strict, on another server -> off plan"),
    pytest.param(PINNED, pod("srv-01", "Running"), False, "", False,
                 ("Running", False, "moved from srv-00 to srv-01"), id="not strict, moved -> off plan, said so"),
    pytest.param(PINNED, pod(None, "Pending", "0/2 nodes are available"), True, "", False,
                 ("Pending", False, "0/2 nodes are available"), id="unscheduled -> the scheduler's message"),
    pytest.param(PINNED, None, True, "pods is forbidden: violates PodSecurity", False,
                 ("Missing", False, "pods is forbidden: violates PodSecurity"), id="no pod -> the controller's event"),
    pytest.param(PINNED, None, True, "", False, ("Missing", False, "no pod yet"), id="no pod, no event -> no pod yet"),
    pytest.param(PINNED, None, True, "", True, ("Succeeded", True, "finished; its pod is gone"),
                 id="finished, pod cleaned up -> Succeeded"),
    pytest.param(TaskPlacement(Task("ps", 0), "servers", "srv-09"), None, True, "", False,
                 ("Missing", False, "server srv-09 is not in the cluster; no pod yet"), id="planned server missing"),
])
def test_a_task_against_its_plan(placement, the_pod, strict, event, finished, expected):
    status = task_status(placement, the_pod, NODES, strict, event, finished=finished)
    assert (status.phase, status.as_planned, status.reason) == expected


def test_a_task_the_scheduler_placed_outside_its_pool_is_off_the_plan():
    status = task_status(UNPINNED, pod("gpu-00", "Running"), NODES, True, "", pool_servers=frozenset(NODES))
    assert (status.as_planned, status.reason) == (False, "on gpu-00, outside pool managed")
    assert task_status(UNPINNED, pod("srv-01", "Running"), NODES, True, "", pool_servers=frozenset(NODES)).as_planned


def test_a_finished_experiments_status_says_where_its_tasks_logs_are(tmp_path):
    from components.live.phase import Phase
    from components.live.tasks import ExperimentStatus, status_table
    from components.objects.loading import load_experiment
    from tests.stack_variants import write_variant

    plain = load_experiment(write_variant(tmp_path, "scene1-case1", "plain", lambda values: None))
    archived = load_experiment(write_variant(tmp_path, "scene1-case1", "kept", lambda v: v.update({"tfk8s:logs": {}})))
    for phase in ("Succeeded", "Failed"):
        said = status_table(plain, ExperimentStatus(Phase(phase), [])).splitlines()
        assert said[-1].startswith("logs: ") and "tfk8s:logs keeps them" in said[-1]
        said = status_table(archived, ExperimentStatus(Phase(phase), [])).splitlines()
        assert said[-1] == "logs: every task's, from its pod or the log archive: python -m components logs kept TASK"
    running = status_table(archived, ExperimentStatus(Phase("Running"), []))
    assert "logs:" not in running, "a running experiment's logs are its pods'"
