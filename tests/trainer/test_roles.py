"""The trainer's role table (trainer/shared_names.py): what the trainer, its local launcher and the
export do differently for each role is read from it, and it agrees with components/'s table, which
the trainer cannot import."""

from __future__ import annotations

import argparse

import pytest

from components.spec import task_roles
from trainer.cluster import ROLES
from trainer.local.drills import parse_kill
from trainer.shared_names import EVALUATOR, SERVING_ROLES, TRAINER_ROLES, role_of, role_of_task
from trainer.stack_export import PROGRAM_ROLES, ProgramExport


@pytest.mark.parametrize("row", TRAINER_ROLES, ids=lambda row: row.name)
def test_each_row_agrees_with_components_table(row):
    table = task_roles.role_of(row.name)
    assert row.in_training_cluster == table.in_training_cluster
    assert row.one_task == table.one_task
    assert row.serves == table.ready_when_serving  # "ready" is its gRPC server answering
    assert row.runs_steps == (table.load == "steps")
    assert row.coordinates == (table.load == "coordination")
    assert row.may_decide_outcome == table.may_decide_outcome
    assert row.restarted_when_lost == (table.retries == "always")
    assert row.borrows_command_of == table.borrows_command_of


def test_the_table_has_every_role_of_components_in_its_order():
    assert [row.name for row in TRAINER_ROLES] == [role.name for role in task_roles.ROLES]
    assert ROLES == task_roles.TRAINING_CLUSTER
    assert PROGRAM_ROLES == tuple(role.name for role in task_roles.ROLES)
    assert SERVING_ROLES == ("ps", "worker")  # the order the launcher starts them in


def test_a_task_name_or_type_without_a_row_has_no_role():
    assert role_of("scorer") is None
    assert role_of_task("worker-3") is role_of("worker")
    for name in ("scorer-0", "worker", "worker-x"):
        with pytest.raises(ValueError):
            role_of_task(name)


@pytest.mark.parametrize("drill", ["worker-1@100", "ps-0@5", "chief-0@100"])
def test_a_fault_drill_kills_a_task_of_the_training_cluster(drill):
    name, step = drill.split("@")
    assert parse_kill(drill) == (name, int(step))


@pytest.mark.parametrize("drill", ["chief-1@100", "evaluator-0@100", "scorer-0@100", "worker@100"])
def test_a_fault_drill_of_no_task_of_the_training_cluster_is_refused(drill):
    with pytest.raises(argparse.ArgumentTypeError, match="expected TASK@STEP"):
        parse_kill(drill)


def test_a_role_without_its_own_command_runs_the_one_it_borrows():
    export = ProgramExport({"chief": ["c"], "ps": None, "worker": ["w"]}, {}, None, "chief")
    assert export.argv_of(EVALUATOR) == ["w"]
    assert export.argv_of("ps") is None  # the image's entrypoint: no local process
    assert ProgramExport({**export.argv, EVALUATOR: None}, {}, None, "chief").argv_of(EVALUATOR) is None
    assert ProgramExport({"worker": ["w"]}, {}, None, "workers").argv_of("chief") is None


@pytest.mark.parametrize("done, exited_0, decided", [
    ("worker-0", {"worker-1", "worker-2"}, False),
    ("worker-0", {"worker-0"}, True),
    ("workers", {"worker-0", "worker-1"}, False),
    ("workers", {"worker-0", "worker-1", "worker-2"}, True),
    ({"workers": 2}, {"worker-1", "worker-2"}, True),
    ({"workers": 2}, {"worker-0"}, False),
])
def test_which_workers_exiting_0_end_an_experiment_without_a_chief(done, exited_0, decided):
    assert ProgramExport({"worker": ["w"]}, {}, None, done).workers_decide(exited_0, replicas=3) is decided
