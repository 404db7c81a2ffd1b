"""The make targets as a user types them: a missing variable is a usage line naming it, and a value is
one word for the command, never flags of its own."""

from __future__ import annotations

import subprocess

import pytest

from components.spec.stack_files import PROJECT_ROOT


def make(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["make", "--no-print-directory", *args], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300
    )


@pytest.mark.parametrize(
    "args, usage",
    [
        (["diff"], "usage: make diff A=<stack> B=<stack>"),
        (["diff", "A=scene1-case1"], "usage: make diff A=<stack> B=<stack>"),
        (["cluster-user", "NAME=alice"], "usage: make cluster-user NAME=<user> NAMESPACE=<namespace> [LABEL_NODES=1]"),
        (["render", "STACK="], "usage: make render STACK=<stack>"),
        (["plan", "STACK= "], "usage: make plan STACK=<stack>"),
        (["load-image"], "usage: make load-image ARCHIVE=<file>"),
    ],
)
def test_a_target_without_its_variables_prints_its_usage(args, usage):
    result = make(*args)
    assert result.returncode == 2, result.stdout + result.stderr
    assert usage in result.stderr and "argument" not in result.stderr, result.stderr


def test_a_stack_is_one_word_never_flags_of_its_own(tmp_path):
    out = tmp_path / "elsewhere"
    result = make("render", f"STACK=scene1-case1 --out {out}")
    assert result.returncode != 0
    assert f"stack file 'scene1-case1 --out {out}': no such file" in result.stderr, result.stderr
    assert not out.exists()


def test_a_target_given_its_variables_runs_the_command():
    result = make("diff", "A=scene1-case1", "B=scene1-case1")
    assert result.returncode == 0, result.stderr
    assert "scene1-case1 and scene1-case1: the same experiment" in result.stdout


@pytest.mark.parametrize(
    "args, usage",
    [
        (["pulumi", "STACK=", "ARGS=stack ls"], "usage: make pulumi STACK=<stack>"),
        (["-n", "up", "STACK="], "usage: make up STACK=<stack>"),
        (["-n", "image", "NAME="], "usage: make image NAME=<name> REQUIREMENTS=<file>"),
        (["-n", "cluster-up", "STACK=", "REAL=srv-00"], "usage: make cluster-up STACK=<stack>"),
        (["-n", "cluster-up", "STACK=scene1-case1", "TFJOB=yes"], "TFJOB takes 1 or nothing, not 'yes'"),
        (["-n", "tune", "STACK= "], "usage: make tune STACK=<stack>"),
    ],
)
def test_a_missing_variable_is_said_before_any_prerequisite_is_built_dry_run_included(args, usage):
    """The toolchain (half an hour on a fresh machine) and the node image are never started, nor
    listed by `make -n`, for a command that cannot run."""
    result = make(*args)
    assert result.returncode == 2, result.stdout + result.stderr
    assert usage in result.stderr, result.stderr
    for prerequisite in ("tools/toolchain/build.sh", "tools.nodeimage", "venv.sh"):
        assert prerequisite not in result.stdout + result.stderr, result.stdout


def test_make_diff_of_two_different_experiments_carries_diffs_code_in_makes_error_line():
    result = make("diff", "A=scene1-case1", "B=scene1-case2")
    assert result.returncode == 2 and "diff] Error 1" in result.stderr, result.stderr
    refused = make("diff", "A=scene1-case1", "B=no-such-stack")
    assert refused.returncode == 2 and "diff] Error 2" in refused.stderr, refused.stderr
