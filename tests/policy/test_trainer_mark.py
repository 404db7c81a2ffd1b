"""The pack knows tfk8s's own trainer by the mark on its task pods (trainer/shared_names.py PROGRAM:
TRAINER_PROGRAM), never by their command: with `tfk8s:logs` on the trainer is the argument of the log
shell, and every rule derived from tfk8s's model must still check the experiment. A team's program's
pods carry no mark, and none of those rules judges them.
"""

from __future__ import annotations

import ast
import copy
import json
import re
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

import pytest

from components.plan.labels import WORKLOAD
from components.spec.stack_files import read_stack_values
from tests.harness import ProgramRun, run_program
from tests.pods import pods_of
from tests.policy_harness import POLICIES, Object, objects_of, tripped, violations
from trainer.settings import TrainerSettings
from trainer.shared_names import COMPONENT, PROGRAM, SETTINGS_ENV, TRAINER_PROGRAM

SHARDS_RULE = "tfk8s-embedding-shards-match-ps"
LOGS = pytest.mark.parametrize("logs", [False, True], ids=["logs off", "logs on"])
WORKLOADS = pytest.mark.parametrize("workload", ["jobset", "statefulset"])

Values = dict[str, Any]
_runs: dict[tuple, ProgramRun] = {}


def experiment(
    stack: str, logs: bool, workload: str = "jobset", edit: Optional[Callable[[Values], None]] = None
) -> list[Object]:
    """The objects of `stack` under `workload`, with `tfk8s:logs` on or off, its values changed by `edit`."""
    key = (stack, logs, workload, edit)
    if key not in _runs:
        name, values = read_stack_values(stack)
        values = copy.deepcopy(values)
        values["tfk8s:cluster"]["workload"] = workload
        if logs:
            values["tfk8s:logs"] = {}
        if edit is not None:
            edit(values)
        _runs[key] = run_program(name, values)
    return objects_of(_runs[key])


def task_templates(objects: list[Object], role: Optional[str] = None) -> Iterator[dict]:
    """The pod templates of the experiment's tasks (of `role`), editable in place: a JobSet's, one per
    replicated Job; a StatefulSet's or a Job's."""
    for obj in objects:
        if obj.kind == "JobSet":
            templates = [job["template"]["spec"]["template"] for job in obj.props["spec"]["replicatedJobs"]]
        elif obj.kind in ("StatefulSet", "Job"):
            templates = [obj.props["spec"]["template"]]
        else:
            continue
        for template in templates:
            if role is None or template["metadata"]["labels"][COMPONENT] == role:
                yield template


def main_container(template: dict) -> dict:
    (container,) = template["spec"]["containers"]
    return container


def settings_map(objects: list[Object]) -> dict:
    (data,) = [o.props["data"] for o in objects if o.kind == "ConfigMap" and SETTINGS_ENV in o.props.get("data", {})]
    return data


# -- a change to each trainer rule's input that the rule must report -------------------------------


def worker_with_other_settings(objects: list[Object]) -> str:
    """One worker given a literal TFK8S_TRAINER, as a transform or a hand edit adds: it overrides the
    shared ConfigMap, and that worker would shard the table by range. Its task group's name."""
    settings = json.loads(settings_map(objects)[SETTINGS_ENV])
    assert settings["partition"] == "auto"
    other = json.dumps(settings | {"partition": "range"})
    TrainerSettings.from_json(other)  # settings the trainer accepts
    worker = next(task_templates(objects, "worker"))
    main_container(worker)["env"].append({"name": SETTINGS_ENV, "value": other})
    return worker["metadata"]["labels"][WORKLOAD]


def ps_short_of_its_shard(objects: list[Object]) -> None:
    for ps in task_templates(objects, "ps"):
        main_container(ps)["resources"]["requests"]["memory"] = "1Mi"


def unpartitioned(objects: list[Object]) -> None:
    data = settings_map(objects)
    data[SETTINGS_ENV] = json.dumps(json.loads(data[SETTINGS_ENV]) | {"partition": "none"})


def checkpoints_on_scratch(values: Values) -> None:
    del values["tfk8s:cluster"]["chief"]  # the long run's checkpoint volume


# rule: (stack, its values changed, its objects changed, what the rule says)
TRAINER_RULE_CASES: dict[str, tuple[str, Optional[Callable], Optional[Callable], str]] = {
    SHARDS_RULE: (
        "scene1-case2",
        None,
        worker_with_other_settings,
        "gets other trainer settings than the chief (partition 'range', 5 embedding shards, "
        "against the chief's 'auto', 5 shards for 5 PS)",
    ),
    "tfk8s-ps-memory-fits-shard": ("scene1-case2", None, ps_short_of_its_shard, "requests 1Mi but its embedding shard"),
    "tfk8s-unpartitioned-embedding": ("scene1-case2", None, unpartitioned, "partition: none keeps the whole embedding"),
    "tfk8s-checkpoints-outlive-the-chief": (
        "scene1-case2-durable",
        checkpoints_on_scratch,
        None,
        "100 checkpoint intervals of training keep their checkpoints on the pod's scratch space",
    ),
}


def _rules_reading_trainer_experiments() -> set[str]:
    """The policies whose validator calls `trainer_clusters`, read from the pack's source: in each
    module, a policy's `name=` and the function its `validate=` names."""
    import tfk8s_policies

    found = set()
    for path in Path(tfk8s_policies.__path__[0]).glob("*.py"):
        tree = ast.parse(path.read_text())
        functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
        for call in [node for node in ast.walk(tree) if isinstance(node, ast.Call)]:
            keywords = {keyword.arg: keyword.value for keyword in call.keywords}
            name, validate = keywords.get("name"), keywords.get("validate")
            if isinstance(name, ast.Constant) and isinstance(validate, ast.Name) and validate.id in functions:
                calls = ast.walk(functions[validate.id])
                if any(isinstance(node, ast.Name) and node.id == "trainer_clusters" for node in calls):
                    found.add(name.value)
    return found


def test_every_trainer_rule_of_the_pack_is_tested_here():
    """The rules that judge tfk8s's trainer only (they read `trainer_clusters`, and say so in their
    descriptions) are exactly those this module breaks with logs on and off: a new one fails here."""
    by_code = _rules_reading_trainer_experiments()
    by_description = {name for name, policy in POLICIES.items() if "tfk8s's own trainer only" in policy.description}
    assert by_code == by_description == set(TRAINER_RULE_CASES)
    for name in by_description:
        assert f"{PROGRAM}: {TRAINER_PROGRAM}" in POLICIES[name].description, "it names the mark it reads"


@LOGS
@WORKLOADS
@pytest.mark.parametrize("rule", list(TRAINER_RULE_CASES))
def test_every_trainer_rule_reports_its_case_with_logs_on_and_off(rule, workload, logs):
    stack, edit_values, edit_objects, said = TRAINER_RULE_CASES[rule]
    assert violations(rule, experiment("scene1-case2", logs, workload)) == [], "the seed experiment passes"
    objects = experiment(stack, logs, workload, edit_values)
    if logs:
        assert all(main_container(t)["command"][:2] == ["/bin/sh", "-c"] for t in task_templates(objects)), (
            "the trainer is the log shell's argument"
        )
    if edit_objects is not None:
        edit_objects(objects)
    found = violations(rule, objects)
    assert found and all(said in message for message in found), found


@LOGS
@WORKLOADS
def test_a_worker_given_other_trainer_settings_than_the_chief_stops_up_with_logs_on_and_off(workload, logs):
    objects = experiment("scene1-case2", logs, workload)
    group = worker_with_other_settings(objects)
    found = tripped(objects)
    assert list(found) == [SHARDS_RULE], found
    (said,) = found[SHARDS_RULE]
    # The objects come in the order the mocks registered them: whichever worker group was edited.
    where = f"tf/{group}" if workload == "jobset" else group
    assert f"{where} gets other trainer settings than the chief" in said, said


@LOGS
def test_the_mark_decides_not_the_command(logs):
    """Without the mark on any task the rules take the experiment for a team's program and skip it,
    whatever it runs; one task still marked (a transform stripped the others) is enough."""
    objects = experiment("scene1-case2", logs)
    worker_with_other_settings(objects)
    templates = list(task_templates(objects))
    for template in templates:
        assert template["metadata"]["labels"].pop(PROGRAM) == TRAINER_PROGRAM
    assert violations(SHARDS_RULE, objects) == []
    templates[0]["metadata"]["labels"][PROGRAM] = TRAINER_PROGRAM
    assert len(violations(SHARDS_RULE, objects)) == 1
    # A command the pack never knew (the trainer started another way) changes nothing.
    for template in templates:
        main_container(template)["command"] = ["/usr/bin/env", "python3", "-m", "trainer"]
        main_container(template).pop("args", None)
    assert len(violations(SHARDS_RULE, objects)) == 1


def team_program(values: Values) -> None:
    values.pop("tfk8s:trainer", None)
    values["tfk8s:program"] = {"source": "tests/team_programs/tf2-ps", "command": ["python", "train.py"]}
    values["tfk8s:cluster"].setdefault("ps", {})["memory"] = "4Gi"


@LOGS
@WORKLOADS
def test_a_team_programs_pods_carry_no_mark_and_get_no_trainer_rule(workload, logs):
    """What each trainer rule would report, done to a team's program (a literal TFK8S_TRAINER its
    program never reads, a PS below the trainer's shard, a long run on scratch): none is reported.
    Marked as the trainer, the same pods are judged (the program reads no trainer settings)."""
    objects = experiment("scene1-case2", logs, workload, team_program)
    templates = list(task_templates(objects))
    assert templates and all(PROGRAM not in t["metadata"]["labels"] for t in templates)
    worker = next(task_templates(objects, "worker"))
    main_container(worker)["env"].append({"name": SETTINGS_ENV, "value": json.dumps({"partition": "range"})})
    ps_short_of_its_shard(objects)
    assert {rule: violations(rule, objects) for rule in TRAINER_RULE_CASES} == dict.fromkeys(TRAINER_RULE_CASES, [])
    assert tripped(objects) == {}
    for template in templates:
        template["metadata"]["labels"][PROGRAM] = TRAINER_PROGRAM
    found = violations(SHARDS_RULE, objects)
    assert len(found) == 1 and "no readable trainer settings" in found[0], found


def with_tensorboard(values: Values) -> None:
    values["tfk8s:tensorboard"] = {"image": "localhost/tfk8s/tensorboard:2.21.0"}


def with_tensorboard_and_an_evaluator(values: Values) -> None:  # an evaluator needs workload: jobset
    with_tensorboard(values)
    values["tfk8s:cluster"]["evaluator"] = {"replicas": 1}


def _paths_with_key(value: Any, key: str, path: str = "") -> Iterator[str]:
    if isinstance(value, dict):
        if key in value:
            yield path
        for name, item in value.items():
            yield from _paths_with_key(item, key, f"{path}.{name}" if path else name)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths_with_key(item, key, f"{path}[{index}]")


POD_TEMPLATE_LABELS = re.compile(r"spec(\.replicatedJobs\[\d+\]\.template\.spec)?\.template\.metadata\.labels")


@WORKLOADS
def test_the_mark_is_on_every_trainer_task_pod_and_only_in_their_templates_labels(workload):
    """Every task pod (evaluator included) carries it, no pod beside the tasks (TensorBoard, the log
    collector) does, and it is in no selector: an addition to the pod templates only."""
    edit = with_tensorboard_and_an_evaluator if workload == "jobset" else with_tensorboard
    objects = experiment("scene1-case2-durable", True, workload, edit)
    pods = pods_of(_runs[("scene1-case2-durable", True, workload, edit)])
    roles = {"chief", "ps", "worker"} | ({"evaluator"} if workload == "jobset" else set())
    assert {pod.labels[COMPONENT] for pod in pods} == roles
    assert all(pod.labels[PROGRAM] == TRAINER_PROGRAM for pod in pods)
    for obj in objects:
        found = list(_paths_with_key(obj.props, PROGRAM))
        if obj.kind in ("JobSet", "StatefulSet", "Job"):
            assert found and all(POD_TEMPLATE_LABELS.fullmatch(path) for path in found), (obj.name, found)
        else:
            assert found == [], (obj.kind, obj.name, found)
    assert {o.kind for o in objects} >= {"Deployment", "NetworkPolicy", "Service"}, "side pods were looked at"
