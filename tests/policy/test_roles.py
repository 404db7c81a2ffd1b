"""The pack treats one role unlike another by the traits of its copy of the role table, never by a
role's name: a row renamed in the copy is checked as the row it is (tests/policy/test_copies.py holds
the copy equal to components/spec/task_roles.py; tests/plan/test_task_roles.py finds a name compared)."""

from __future__ import annotations

import copy
import dataclasses
import importlib

import pytest

from components.spec.stack_files import read_stack_values
from tests.harness import run_program
from tests.policy_harness import Object, objects_of, tfk8s_policies, tripped

facts = importlib.import_module(f"{tfk8s_policies.__name__}.facts")
TF_CONFIG = "tfk8s-tf-config-consistent"
WHERE = "experiment scene1-case2-durable in tf-scene1-case2-durable"


@pytest.fixture(scope="module")
def run_with_an_evaluator():
    name, values = read_stack_values("scene1-case2-durable")
    values = copy.deepcopy(values)
    values["tfk8s:cluster"]["evaluator"] = {"replicas": 1}
    return run_program(name, values)


def _outside_task_renamed(run, task_type: str, tasks: int = 1) -> list[Object]:
    """The run's objects with the evaluator's tasks given another task type (the one the trainer reads
    TF_CONFIG's task from), `tasks` of them."""
    objects = objects_of(run)
    (jobset,) = [obj for obj in objects if obj.kind == "JobSet"]
    (job,) = [job for job in jobset.props["spec"]["replicatedJobs"] if job["name"] == "evaluator"]
    job["template"]["spec"]["completions"] = job["template"]["spec"]["parallelism"] = tasks
    for container in job["template"]["spec"]["template"]["spec"]["containers"]:
        for variable in container.get("env", []):
            if variable["name"] == facts.TASK_TYPE_ENV:
                variable["value"] = task_type
    return objects


def _renamed_outside_row(name: str) -> tuple:
    return tuple(role if role.in_training_cluster else dataclasses.replace(role, name=name) for role in facts.ROLES)


def test_a_role_outside_the_training_cluster_passes_by_its_trait_whatever_its_name(run_with_an_evaluator, monkeypatch):
    """The mandatory TF_CONFIG policy does not refuse a task outside the cluster for not being named
    `evaluator`: the row's trait decides, and a second task of a one-task role is still refused."""
    monkeypatch.setattr(facts, "ROLES", _renamed_outside_row("judge"))
    assert tripped(_outside_task_renamed(run_with_an_evaluator, "judge"), [TF_CONFIG]) == {}
    assert tripped(_outside_task_renamed(run_with_an_evaluator, "judge", tasks=2), [TF_CONFIG]) == {
        TF_CONFIG: [
            f"{WHERE}: JobSet tf/evaluator is task judge-1: TensorFlow runs one judge, judge-0, and no cluster lists it"
        ]
    }


def test_a_task_type_without_a_row_is_held_to_the_cluster(run_with_an_evaluator):
    """A task type the table has no row for is no exception: no cluster lists it, so it is outside."""
    assert tripped(_outside_task_renamed(run_with_an_evaluator, "judge"), [TF_CONFIG]) == {
        TF_CONFIG: [f"{WHERE}: task judge-0 of JobSet tf/evaluator is outside the cluster"]
    }
