"""How a stack file's reader keeps what YAML reads otherwise than written (components/spec/strict_yaml.py):
each such value known by its text, and written back as it was written (tools/engine hands a stack's
values to Pulumi's engine, whose YAML 1.2 must read them as it reads the stack file itself)."""

from __future__ import annotations

import datetime

import pytest
import yaml

from components.spec.strict_yaml import YamlReading, load_yaml, plain_values


@pytest.mark.parametrize(
    "written, value, ambiguous",
    [
        pytest.param("1:30", 90, True, id="base 60"),
        pytest.param("1:30.5", 90.5, True, id="base 60 with a fraction"),
        pytest.param("010", 8, True, id="octal"),
        pytest.param("0b101", 5, True, id="binary"),
        pytest.param("1_000", 1000, True, id="underscores"),
        pytest.param("yes", True, True, id="yes"),
        pytest.param("Off", False, True, id="Off"),
        pytest.param("2026-01-01", datetime.date(2026, 1, 1), True, id="a date"),
        pytest.param("", None, True, id="nothing"),
        pytest.param("~", None, True, id="~"),
        pytest.param("1.10", 1.1, False, id="a fraction's last 0"),
        pytest.param("0x1F", 31, False, id="hexadecimal"),
        pytest.param(".inf", float("inf"), False, id=".inf"),
    ],
)
def test_a_value_yaml_reads_otherwise_is_known_by_its_text(written, value, ambiguous):
    read = load_yaml(f"key: {written}\n")["key"]
    assert isinstance(read, YamlReading)
    assert (read.written, read.value, read.ambiguous) == (written, value, ambiguous)


@pytest.mark.parametrize("written", ["5", "-3", "0.5", "2.0", "true", "False", "text", "'1:30'", '"yes"'])
def test_a_value_read_as_written_is_plain(written):
    assert not isinstance(load_yaml(f"key: {written}\n")["key"], YamlReading)


def test_yaml_only_types_are_known_as_such():
    read = load_yaml("a: !!set {x, y}\nb: !!binary aGk=\nc: !!omap [{k: 1}]\n")
    assert [read[key].written for key in "abc"] == ["!!set", "!!binary aGk=", "!!omap"]
    assert plain_values(read) == {"a": {"x", "y"}, "b": b"hi", "c": [("k", 1)]}


def test_values_are_written_back_as_written():
    """As tools/engine/workspace.py writes a stack's config for the engine (block style, keys in order)."""
    text = "config:\n  tfk8s:cluster:\n    ratio: 1:10\n    strict: yes\n    image: 1.10\n    egress:\n    n: 5\n"
    assert yaml.safe_dump(load_yaml(text), sort_keys=False) == text
