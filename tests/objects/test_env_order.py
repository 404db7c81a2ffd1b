"""A program's env in the stack file's order, under `render` and under the Pulumi program alike: the
kubelet expands `$(NAME)` in a value only from the variables set before it, so the order is what a
value holds. The engine hands the program each mapping with its keys sorted, as Go's JSON encoder
writes them (`{Z: z, A: $(Z)}` arrives as `{A: ..., Z: ...}`); the program takes the order back from
the stack file (components/spec/env_order.py)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from components.cli.main import main as components_main
from components.spec.stack_files import read_stack_values
from tests.harness import reset_pulumi, run_program
from tests.pods import config_maps_of, jobset_pods, pods_of

STACK = "scene1-case1"
# Neither sorted nor reverse-sorted: A refers to Z above it, M to A above it.
ENV = {"Z": "zeta", "A": "$(Z)-alpha", "M": "$(A)/$(JOB_NAME)"}


def as_the_engine_passes(values: dict) -> dict:
    """Every mapping with its keys sorted, as the engine hands config to a program."""
    return json.loads(json.dumps(values, sort_keys=True))


def program_stack(tmp_path: Path, env: dict) -> tuple[Path, dict]:
    """A stack file running a program with `env`; its path and its values as written."""
    _, values = read_stack_values(STACK)
    values = copy.deepcopy(values)
    values.pop("tfk8s:trainer")
    values["tfk8s:cluster"]["ps"]["memory"] = "1Gi"
    values["tfk8s:program"] = {"command": ["python", "train.py"], "env": env}
    path = tmp_path / f"Pulumi.{STACK}.yaml"
    path.write_text(yaml.safe_dump({"config": values}, sort_keys=False), encoding="utf-8")
    return path, values


def pulumi_program(tmp_path: Path, stack_file: Path, values: dict):
    """The project's program for `stack_file` under mocks, given the values as the engine passes them."""
    program = tmp_path / "__main__.py"
    program.write_text(
        "from pathlib import Path\n"
        "from components.resources.entry_point import main\n"
        f"main(Path({str(stack_file)!r}))\n"
    )
    try:
        return run_program(STACK, as_the_engine_passes(values), program=program)
    finally:
        reset_pulumi()


def rendered(stack_file: Path, capsys) -> list[dict]:
    assert components_main(["render", str(stack_file), "-o", "yaml"]) == 0, capsys.readouterr().err
    return [document for document in yaml.safe_load_all(capsys.readouterr().out) if document]


def env_names(container: dict) -> list[str]:
    return [item["name"] for item in container["env"]]


def containers(jobset: dict) -> dict[str, dict]:
    return {
        replicated["name"]: replicated["template"]["spec"]["template"]["spec"]["containers"][0]
        for replicated in jobset["spec"]["replicatedJobs"]
    }


def test_render_and_the_pulumi_program_set_env_in_the_stack_files_order(tmp_path, capsys):
    stack_file, values = program_stack(tmp_path, ENV)
    (rendered_jobset,) = [m for m in rendered(stack_file, capsys) if m["kind"] == "JobSet"]
    run = pulumi_program(tmp_path, stack_file, values)
    (registered_jobset,) = run.of_kind("JobSet")
    by_render, by_pulumi = containers(rendered_jobset), containers(registered_jobset.manifest)
    assert by_render.keys() == by_pulumi.keys()
    for role, container in by_render.items():
        assert env_names(container)[-3:] == ["Z", "A", "M"], role
        assert env_names(by_pulumi[role]) == env_names(container), role


def test_a_reference_to_an_earlier_env_name_is_expanded_in_both(tmp_path, capsys):
    """What each task holds, as the kubelet expands it (tests/pods.py fails on a reference left as text)."""
    stack_file, values = program_stack(tmp_path, ENV)
    manifests = rendered(stack_file, capsys)
    (jobset,) = [m for m in manifests if m["kind"] == "JobSet"]
    render_maps = {m["metadata"]["name"]: m.get("data", {}) for m in manifests if m["kind"] == "ConfigMap"}
    run = pulumi_program(tmp_path, stack_file, values)
    for pods, config_maps in [
        (jobset_pods(SimpleNamespace(manifest=jobset)), render_maps),
        (pods_of(run), config_maps_of(run)),
    ]:
        assert pods
        for pod in pods:
            env = pod.env(config_maps)
            assert env["A"] == "zeta-alpha"
            assert env["M"] == f"zeta-alpha/{env['JOB_NAME']}"


@pytest.mark.parametrize("written_first", [True, False], ids=["plan", "the pulumi program"])
def test_a_reference_to_a_name_set_below_it_is_refused_by_both(tmp_path, capsys, written_first):
    """Set below, $(Z) would reach the task as text; sorted, the engine's order would hide that."""
    stack_file, values = program_stack(tmp_path, {"A": "$(Z)-alpha", "Z": "zeta"})
    said = "tfk8s:program.env.A: $(Z) refers to Z, which env sets after A"
    if written_first:
        assert components_main(["plan", str(stack_file)]) == 2
        assert said in capsys.readouterr().err
    else:
        with pytest.raises(Exception, match=r"refers to Z, which env sets after A") as raised:
            pulumi_program(tmp_path, stack_file, values)
        assert said in str(raised.value)
