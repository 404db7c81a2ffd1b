"""Every flag of `python -m components` is honoured or refused, never taken and ignored; every value a
flag converts is refused in the flag's own words (never argparse's, naming the converter); and every
hint a command prints runs as printed."""

from __future__ import annotations

import argparse
import shlex
import shutil
import subprocess
import sys

import pytest

from components.cli.main import _parser, main
from tests.harness import PROJECT_ROOT


def _exit(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exited:  # argparse's usage errors
        return int(exited.code or 0)


@pytest.mark.parametrize(
    "flags",
    [
        pytest.param(["--previous"], id="--previous"),
        pytest.param(["--follow"], id="--follow"),
        pytest.param(["-f"], id="-f"),
        pytest.param(["--previous", "--follow"], id="--previous --follow"),
    ],
)
def test_logs_flags_for_one_task_are_refused_without_a_task(flags, capsys):
    assert _exit(["logs", "scene1-case1", *flags]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    said = err.splitlines()[-1]  # after argparse's usage lines
    given = " and ".join(dict.fromkeys("--follow" if flag == "-f" else flag for flag in flags))
    assert said.startswith(f"python -m components logs: error: {given} read")
    assert "one task's log: give TASK (e.g. `python -m components logs scene1-case1 worker-0 " in said


@pytest.mark.parametrize(
    "flags, where",
    [
        pytest.param(["-o", "yaml", "--force"], "-o yaml", id="-o yaml --force"),
        pytest.param(["--out", "-", "--force"], "--out -", id="--out - --force"),
    ],
)
def test_render_force_with_standard_output_is_refused(flags, where, capsys):
    assert _exit(["render", "scene1-case1", *flags]) == 2
    said = capsys.readouterr()
    assert said.out == "", "nothing rendered"
    assert said.err == (
        f"render: {where} writes to standard output, and --force is for writing into a folder (--out DIR): "
        "drop --force, or give --out DIR\n"
    )


def _converted_flags() -> list[tuple[str, str, argparse.Action]]:
    """(command, flag, action) for every flag whose value a function of tfk8s converts."""
    (commands,) = [action for action in _parser()._actions if action.dest == "command"]
    assert isinstance(commands.choices, dict)
    found = []
    for name, command in commands.choices.items():
        for action in command._actions:
            if callable(action.type) and action.option_strings:
                found.append((name, action.option_strings[-1], action))
    return found


ODD_VALUES = ["", " ", "x", "-1", "nan", "inf", "1e400", "²", "１", "0x10", "1" * 5000, "0" * 5000 + "1", ",", "\n"]
# No flag of any form takes these: each converter must refuse them, not only fail cleanly.
NEVER_A_VALUE = {"", " ", "\n"}


@pytest.mark.parametrize("command, flag, action", _converted_flags(), ids=lambda v: v if isinstance(v, str) else "")
def test_every_converted_flag_refuses_odd_values_in_its_own_words(command, flag, action):
    assert action.type is not None
    for value in ODD_VALUES:
        try:
            action.type(value)  # type: ignore[operator]
        except argparse.ArgumentTypeError as error:
            assert len(str(error)) < 400, "a long value is shown by its start"
        except Exception as error:  # argparse would say "invalid <function name> value"
            pytest.fail(f"{command} {flag} {value[:20]!r}: {type(error).__name__} {error}")
        else:
            assert value not in NEVER_A_VALUE, f"{command} {flag} took {value!r}"


def test_a_port_of_thousands_of_digits_is_refused_naming_the_flag(capsys):
    assert _exit(["tensorboard", "scene1-case1", "--port", "1" * 5000]) == 2
    err = capsys.readouterr().err
    assert "argument --port: must be a port number from 0 to 65535 (got '1111" in err and "(5,000 characters)" in err
    assert "local_port" not in err


def test_a_number_of_seconds_too_large_for_a_float_is_refused_saying_so(capsys):
    assert _exit(["top", "scene1-case1", "--watch", "1e400"]) == 2
    assert (
        "argument --watch: must be a number of seconds above 0 (got '1e400') (too large: no finite number)"
        in capsys.readouterr().err
    )


def test_the_local_cluster_hint_for_a_stack_given_by_path_names_the_path(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "team stacks"
    folder.mkdir()
    stack_file = folder / "Pulumi.mine.yaml"
    shutil.copy(PROJECT_ROOT / "stacks" / "Pulumi.scene1-case1.yaml", stack_file)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.chdir(folder)
    assert main(["status", "Pulumi.mine.yaml"]) == 2
    err = capsys.readouterr().err
    hinted = [part for part in err.split("`") if part.startswith("make ")]
    assert hinted == [f"make cluster-up 'STACK={stack_file}'", f"make status 'STACK={stack_file}'"], err
    # What `make status STACK=...` runs, from the project's folder, finds the very stack file.
    (stack_value,) = {shlex.split(hint)[-1].removeprefix("STACK=") for hint in hinted}
    plan = subprocess.run(
        [sys.executable, "-m", "components", "plan", stack_value],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert plan.returncode == 0, plan.stderr
    assert plan.stdout.startswith("stack mine ")


def test_the_local_cluster_hint_for_a_stack_given_by_name_names_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    assert main(["top", "scene1-case1"]) == 2
    err = capsys.readouterr().err
    assert "`make cluster-up STACK=scene1-case1` and then `make status STACK=scene1-case1`" in err


def test_the_logs_hint_of_a_finished_experiment_names_the_stack_as_given(tmp_path, monkeypatch):
    from components.live.phase import Phase
    from components.live.tasks import ExperimentStatus, status_table
    from components.objects.loading import load_experiment

    folder = tmp_path / "team stacks"
    folder.mkdir()
    shutil.copy(PROJECT_ROOT / "stacks" / "Pulumi.scene1-case1.yaml", folder / "Pulumi.mine.yaml")
    monkeypatch.chdir(tmp_path)
    given = "team stacks/Pulumi.mine.yaml"
    said = status_table(load_experiment(given), ExperimentStatus(Phase("Succeeded"), []), given).splitlines()[-1]
    command = said[said.index("python -m components logs") :].split(")")[0]
    assert command == "python -m components logs 'team stacks/Pulumi.mine.yaml' TASK"
    assert load_experiment(shlex.split(command)[4]).stack == "mine", "the command finds the stack it was given"


@pytest.mark.parametrize(
    "argv, missing",
    [
        pytest.param([], "COMMAND", id="no command"),
        pytest.param(["plan"], "STACK", id="plan without a stack"),
        pytest.param(["diff", "scene1-case1"], "B", id="diff with one stack"),
    ],
)
def test_a_missing_argument_is_named_as_usage_and_docs_write_it(argv, missing, capsys):
    assert _exit(argv) == 2
    assert capsys.readouterr().err.splitlines()[-1].endswith(f"error: the following arguments are required: {missing}")
