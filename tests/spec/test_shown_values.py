"""A value as every message quotes it (components/spec/shown_values.py): whole where short, else its
start and its length; one helper for the stack's errors, YAML's readings and the command line's flags."""

from __future__ import annotations

import re

import pytest

from components.cli.main import main
from components.spec.loading import load_stack_config
from components.spec.models import StackConfigError
from components.spec.shown_values import SHOWN_CHARS, shown
from components.spec.stack_files import PROJECT_ROOT
from components.spec.strict_yaml import described


@pytest.mark.parametrize(
    "value, quoted",
    [
        pytest.param("srv-00", "'srv-00'", id="short text, whole"),
        pytest.param("image:2 ", "'image:2 '", id="a space at the end shows"),
        pytest.param("a\nb", "'a\\nb'", id="a line break shows, on one line"),
        pytest.param(True, "true", id="a boolean as YAML writes it"),
        pytest.param("x" * 100, "'" + "x" * (SHOWN_CHARS - 1) + "... (100 characters)", id="long text: the user's 100"),
        pytest.param(10**99, "1" + "0" * (SHOWN_CHARS - 1) + "... (100 characters)", id="a number of 100 digits"),
    ],
)
def test_a_value_is_quoted_whole_or_by_its_start_and_its_length(value, quoted):
    assert shown(value) == quoted


def test_yaml_readings_describe_long_text_by_the_same_helper():
    assert described("y" * 500) == f"the text {shown('y' * 500, 40)}"
    assert described("y" * 500).endswith("... (500 characters)")


def test_a_long_value_reads_the_same_in_a_stack_error_and_in_a_flag_error(capsys):
    long = "7" * 5000
    with pytest.raises(StackConfigError) as refused:
        load_stack_config(
            "long",
            {
                "tfk8s:nodePools": [{"name": "servers", "nodes": ["srv-00"]}],
                "tfk8s:cluster": {
                    "placement": "colocated",
                    "ratio": f"1:{long}",
                    "workers": {"replicas": 2, "pool": "servers"},
                },
            },
        )
    with pytest.raises(SystemExit):
        main(["tensorboard", "scene1-case1", "--port", long])
    flag_error = capsys.readouterr().err
    assert f"(got {shown(f'1:{long}')})" in str(refused.value) and long not in str(refused.value), refused.value
    assert f"(got {shown(long)})" in flag_error and long not in flag_error, flag_error


def test_one_helper_shortens_a_value_for_a_message():
    """The mark of a cut value, `... (N characters)`, is written in shown_values.py alone."""
    writers = [
        str(path.relative_to(PROJECT_ROOT))
        for folder in ("components/spec", "components/cli")
        for path in sorted((PROJECT_ROOT / folder).glob("*.py"))
        if re.search(r"\.\.\. \(\{[^}]*\} ?characters\)", path.read_text(encoding="utf-8"))
    ]
    assert writers == ["components/spec/shown_values.py"]
