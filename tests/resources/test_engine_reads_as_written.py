"""`pulumi preview` / `up` refuse what `plan` refuses in the stack file as written. The engine hands
the program values already parsed (a key left empty as null, `1:30` as YAML 1.2's text), so without
reading the file the program would take a nested empty key for its default and a misread value as
whatever YAML 1.2 made of it (components/resources/entry_point.py)."""

from __future__ import annotations

import copy

import pulumi
import pytest
import yaml

from components.cli.main import main as components_main
from components.spec.stack_files import read_stack_values
from tests.harness import reset_pulumi, run_program

STACK = "scene1-case2"


def stack_file_with(tmp_path, text_edit) -> tuple[object, dict]:
    """The seed's stack file, edited as text as a user edits it; its path, and the values the engine
    would pass (the seed's, as parsed)."""
    _, values = read_stack_values(STACK)
    text = text_edit(yaml.safe_dump({"config": copy.deepcopy(values)}, sort_keys=False))
    path = tmp_path / f"Pulumi.{STACK}.yaml"
    path.write_text(text)
    program = tmp_path / "__main__.py"
    program.write_text(
        f"from pathlib import Path\nfrom components.resources.entry_point import main\nmain(Path({str(path)!r}))\n"
    )
    return path, program


@pytest.mark.parametrize(
    "edit, refused",
    [
        pytest.param(
            lambda text: text.replace("    placement: colocated\n", "    placement: colocated\n    egress:\n"),
            "tfk8s:cluster.egress: empty",
            id="egress left empty",
        ),
        pytest.param(
            lambda text: text.replace("    placement: colocated\n", "    placement: colocated\n    ratio: 1:10\n"),
            "tfk8s:cluster.ratio: 1:10, unquoted",
            id="a base-60 number",
        ),
    ],
)
def test_preview_refuses_what_plan_refuses_in_the_stack_file(tmp_path, capsys, edit, refused):
    path, program = stack_file_with(tmp_path, edit)
    assert components_main(["plan", str(path)]) == 2
    assert refused in capsys.readouterr().err
    _, values = read_stack_values(STACK)
    try:
        with pytest.raises(pulumi.RunError) as error:
            run_program(STACK, values, preview=True, program=program)
    finally:
        reset_pulumi()
    assert refused in str(error.value)


def test_preview_of_the_stack_file_as_shipped_goes_on(tmp_path):
    path, program = stack_file_with(tmp_path, lambda text: text)
    _, values = read_stack_values(STACK)
    try:
        run = run_program(STACK, values, preview=True, program=program)
    finally:
        reset_pulumi()
    assert run.resources


def test_preview_logs_the_unreachable_storage_warning(monkeypatch):
    """A stack that is valid but never reaches its storage: preview goes on, and says so."""
    warned = []
    monkeypatch.setattr(pulumi.log, "warn", lambda message, *args, **kwargs: warned.append(message))
    _, values = read_stack_values(STACK)
    values = copy.deepcopy(values)
    values["tfk8s:cluster"]["egress"] = []
    values["tfk8s:trainer"] = {**values.get("tfk8s:trainer", {}), "checkpointDir": "gs://team/ckpt"}
    try:
        run_program("egress-closed", values, preview=True)
    finally:
        reset_pulumi()
    assert any("tfk8s:trainer.checkpointDir names 'gs://team/ckpt'" in line for line in warned), warned
