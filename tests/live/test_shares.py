"""Each server against its share of the plan, as the cluster placed the tasks (components/live/shares.py)."""

from __future__ import annotations

import json

from components.live.phase import Phase
from components.live.tasks import ExperimentStatus, TaskStatus, against_shares, status_json, status_table
from components.objects.loading import load_experiment
from tests.stack_variants import write_variant


def uneven(tmp_path):
    """3 PS and 7 workers on 3 servers: one PS each; 3, 2 and 2 workers, the scheduler picks which 3."""
    return load_experiment(write_variant(tmp_path, "scene1-case1", "uneven", lambda v: (
        v["tfk8s:nodePools"][0].update(nodes=["srv-00", "srv-01", "srv-02"]),
        v["tfk8s:cluster"]["ps"].update(replicas=3),
        v["tfk8s:cluster"]["workers"].update(replicas=7),
    )))


def running(placed: dict[str, str]) -> list[TaskStatus]:
    return [TaskStatus(task, "servers", None, node, "Running", True) for task, node in placed.items()]


def test_each_server_shows_the_indexes_the_scheduler_put_there(tmp_path):
    experiment = uneven(tmp_path)
    placed = {"chief-0": "srv-01", "ps-0": "srv-02", "ps-1": "srv-00", "ps-2": "srv-01",
              **{f"worker-{i}": f"srv-0{i % 3}" for i in range(7)}}  # 3, 2, 2
    tasks, servers = against_shares(experiment, running(placed))
    assert all(t.as_planned for t in tasks)
    assert [(s.server, s.share, s.tasks) for s in servers] == [
        ("srv-00", {"ps": "1", "worker": "2-3"}, ["ps-1", "worker-0", "worker-3", "worker-6"]),
        ("srv-01", {"ps": "1", "worker": "2-3"}, ["chief-0", "ps-2", "worker-1", "worker-4"]),
        ("srv-02", {"ps": "1", "worker": "2-3"}, ["ps-0", "worker-2", "worker-5"]),
    ]


def test_a_server_over_its_share_puts_its_tasks_off_the_plan(tmp_path):
    experiment = uneven(tmp_path)
    placed = {"ps-0": "srv-00", "ps-1": "srv-00", "ps-2": "srv-01", **{f"worker-{i}": "srv-02" for i in range(4)}}
    tasks, _ = against_shares(experiment, running(placed) + [
        TaskStatus(f"worker-{i}", "servers", None, None, "Pending", False, "0/3 nodes are available") for i in (4, 5, 6)
    ])
    off = {t.task: t.reason for t in tasks if not t.as_planned}
    assert off == {
        "ps-0": "srv-00 holds 2 ps tasks, its share is 1", "ps-1": "srv-00 holds 2 ps tasks, its share is 1",
        **{f"worker-{i}": "srv-02 holds 4 worker tasks, its share is 2-3" for i in range(4)},
        **{f"worker-{i}": "0/3 nodes are available" for i in (4, 5, 6)},
    }


def test_the_statefulset_model_pins_tasks_and_has_no_shares_to_check(tmp_path):
    experiment = load_experiment(write_variant(tmp_path, "scene1-case2", "sts",
                                               lambda v: v["tfk8s:cluster"].update(workload="statefulset")))
    tasks = running({"ps-0": "srv-00", "ps-1": "srv-00"})
    assert against_shares(experiment, tasks) == (tasks, [])


def test_the_status_table_and_json_show_each_server_against_its_share(tmp_path):
    experiment = uneven(tmp_path)
    placed = {"ps-0": "srv-02", "ps-1": "srv-00", "ps-2": "srv-01", **{f"worker-{i}": f"srv-0{i % 3}" for i in range(7)}}
    tasks, servers = against_shares(experiment, running(placed))
    status = ExperimentStatus(Phase("Running"), tasks, servers=servers)
    table = status_table(experiment, status).splitlines()
    assert table[-4].split() == ["SERVER", "PS", "WORKERS", "TASKS", "(as", "the", "scheduler", "placed", "them)"]
    assert table[-3].split() == ["srv-00", "1/1", "3/2-3", "ps-1,", "worker-0,", "worker-3,", "worker-6"]
    assert json.loads(status_json(experiment, status))["servers"]["srv-02"] == {
        "share": {"ps": "1", "worker": "2-3"}, "tasks": ["ps-0", "worker-2", "worker-5"], "ps": 1, "worker": 2,
    }
