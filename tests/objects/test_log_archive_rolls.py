"""Which pods a change of the log archive's code rolls (tfk8s:logs): a task's pod template changes
only when what that task runs changes (the shipper and the protocol it imports: every task, tfk8s's
trainer's and a team's program's alike), the collector's when its own code does (the collector and
the protocol). Its code is a mounted ConfigMap, which restarts no running pod: only a changed pod
template does, as `pulumi up` applies it."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest

from components.objects.experiment_objects import experiment_objects
from components.objects.loading import load_experiment_values
from components.plan import labels as L
from components.plan.experiment import Experiment
from components.plan.trainer_bundle import TrainerBundle, load_trainer_bundle
from components.spec.stack_files import PROJECT_ROOT, read_stack_values
from tests.objects.test_program import TF2_SOURCE, program_values
from trainer import log_protocol

COLLECTOR_DEPLOYMENT = "tfk8s-logs"


def _values(kind: str, logs: bool) -> tuple[str, dict[str, Any]]:
    if kind == "trainer":
        name, values = read_stack_values("scene1-case1")
        values = copy.deepcopy(values)
    elif kind == "program":
        name, values = program_values({"source": TF2_SOURCE, "command": ["python", "train.py"]})
    else:
        name, values = program_values({"source": TF2_SOURCE, "command": ["python", "train.py"]}, workload="statefulset")
    if logs:
        values["tfk8s:logs"] = {}
    return name, values


def _experiment(kind: str, bundle: TrainerBundle, logs: bool = True) -> Experiment:
    return load_experiment_values(*_values(kind, logs), bundle)


def _pod_templates(experiment: Experiment) -> dict[str, dict]:
    """Each workload's pod template, by the workload's name (a JobSet's by its replicated Job's)."""
    templates = {}
    for obj in experiment_objects(experiment):
        manifest = obj.manifest
        if obj.kind == "JobSet":
            for job in manifest["spec"]["replicatedJobs"]:
                templates[job["name"]] = job["template"]["spec"]["template"]
        elif obj.kind in ("Job", "StatefulSet", "Deployment"):
            templates[manifest["metadata"]["name"]] = manifest["spec"]["template"]
    return templates


def _tasks(templates: dict[str, dict]) -> dict[str, dict]:
    return {name: template for name, template in templates.items() if name != COLLECTOR_DEPLOYMENT}


def _edited(bundle: TrainerBundle, name: str) -> TrainerBundle:
    files = dict(bundle.log_archive_files)
    files[name] += "\n# edited\n"
    return dataclasses.replace(bundle, log_archive_files=files)


def _rolled(before: dict[str, dict], after: dict[str, dict]) -> set[str]:
    assert before.keys() == after.keys()
    return {name for name in before if before[name] != after[name]}


KINDS = ["trainer", "program", "program-statefulset"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_change_of_the_collectors_code_rolls_the_collector_and_no_task(kind):
    bundle = load_trainer_bundle(PROJECT_ROOT)
    before = _pod_templates(_experiment(kind, bundle))
    after = _pod_templates(_experiment(kind, _edited(bundle, log_protocol.COLLECTOR)))
    assert len(_tasks(before)) >= 2, "the stack has its tasks' workloads"
    assert _rolled(before, after) == {COLLECTOR_DEPLOYMENT}
    annotations = after[COLLECTOR_DEPLOYMENT]["metadata"]["annotations"]
    assert annotations[L.LOG_COLLECTOR_HASH_ANNOTATION] != before[COLLECTOR_DEPLOYMENT]["metadata"]["annotations"][
        L.LOG_COLLECTOR_HASH_ANNOTATION
    ]


@pytest.mark.parametrize("kind", KINDS)
def test_a_change_of_the_shippers_code_rolls_every_task_and_not_the_collector(kind):
    """The shipper runs in every task's pod, beside tfk8s's trainer or a team's program alike."""
    bundle = load_trainer_bundle(PROJECT_ROOT)
    before = _pod_templates(_experiment(kind, bundle))
    after = _pod_templates(_experiment(kind, _edited(bundle, log_protocol.SHIPPER)))
    assert _rolled(before, after) == set(_tasks(before))
    for name, template in _tasks(after).items():
        hashes = (before[name]["metadata"]["annotations"], template["metadata"]["annotations"])
        assert hashes[0][L.TRAINER_HASH_ANNOTATION] != hashes[1][L.TRAINER_HASH_ANNOTATION], name


def test_a_change_of_the_protocol_rolls_every_pod_of_the_archive():
    bundle = load_trainer_bundle(PROJECT_ROOT)
    before = _pod_templates(_experiment("trainer", bundle))
    after = _pod_templates(_experiment("trainer", _edited(bundle, log_protocol.PROTOCOL)))
    assert _rolled(before, after) == set(before)


@pytest.mark.parametrize("kind", KINDS)
def test_without_logs_the_archives_code_rolls_nothing(kind):
    bundle = load_trainer_bundle(PROJECT_ROOT)
    edited = bundle
    for name in log_protocol.ARCHIVE_FILES:
        edited = _edited(edited, name)
    before = _pod_templates(_experiment(kind, bundle, logs=False))
    assert COLLECTOR_DEPLOYMENT not in before
    assert _rolled(before, _pod_templates(_experiment(kind, edited, logs=False))) == set()


def test_the_collectors_pod_carries_its_codes_hash_and_the_tasks_carry_none_of_it():
    bundle = load_trainer_bundle(PROJECT_ROOT)
    templates = _pod_templates(_experiment("trainer", bundle))
    collector = templates[COLLECTOR_DEPLOYMENT]["metadata"]["annotations"]
    assert collector == {L.LOG_COLLECTOR_HASH_ANNOTATION: bundle.collector_sha256}
    for name, template in _tasks(templates).items():
        assert L.LOG_COLLECTOR_HASH_ANNOTATION not in template["metadata"]["annotations"], name
