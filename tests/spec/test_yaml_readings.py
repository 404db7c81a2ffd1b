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
        # Text to PyYAML, numbers to YAML 1.2 (Pulumi's engine, kubectl).
        pytest.param("1e-3", "1e-3", True, id="an exponent without a dot"),
        pytest.param("1.0e3", "1.0e3", True, id="an exponent without a sign"),
        pytest.param("0o17", "0o17", True, id="a 0o octal"),
    ],
)
def test_a_value_yaml_reads_otherwise_is_known_by_its_text(written, value, ambiguous):
    read = load_yaml(f"key: {written}\n")["key"]
    assert isinstance(read, YamlReading)
    assert (read.written, read.value, read.ambiguous) == (written, value, ambiguous)


@pytest.mark.parametrize(
    "written", ["5", "-3", "0.5", "2.0", "true", "False", "text", "'1:30'", '"yes"', "'1e-3'", "e3", "1e", "v1.0e3"]
)
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


@pytest.mark.parametrize("text", ["1e-3", "1.0e3", "0o17", "1e3", "-2E+5"])
def test_text_yaml_1_2_would_read_as_a_number_is_written_quoted(text):
    """The manifests render writes and the stack file the engine reads keep text text for YAML 1.2
    readers too: `--lr 1e-3`, quoted in the stack file, must not reach kubectl or Pulumi as 0.001."""
    from components.objects.render import to_yaml
    from components.spec.strict_yaml import TextKeepingDumper

    for written in (to_yaml({"args": [text]}), yaml.dump({"args": [text]}, Dumper=TextKeepingDumper)):
        assert written == f"args:\n- '{text}'\n", written
    assert to_yaml({"args": ["plain"]}) == "args:\n- plain\n"


def test_an_argument_yaml_1_2_reads_as_a_number_is_refused_unquoted_and_rendered_quoted(tmp_path, capsys):
    """`--lr 1e-3` in a program's args: unquoted, plan says to quote it (Pulumi's engine would pass
    0.001); quoted, the rendered Job keeps it quoted, so kubectl reads the text too."""
    from components.cli.main import main
    from tests.objects.test_program import TF2_SOURCE, program_values

    name, values = program_values({"source": TF2_SOURCE, "command": ["python", "train.py"]})
    for args, code in (("[--lr, 1e-3]", 2), ("[--lr, '1e-3']", 0)):
        text = yaml.safe_dump({"config": values}, sort_keys=False).replace(
            "    command:\n", f"    args: {args}\n    command:\n", 1
        )
        stack_file = tmp_path / f"Pulumi.{name}.yaml"
        stack_file.write_text(text)
        assert main(["render", str(stack_file), "--out", str(tmp_path / "out"), "--force"]) == code
        said = capsys.readouterr()
        if code:
            assert "tfk8s:program.args[1]: 1e-3, unquoted, is the text '1e-3' to YAML 1.1 and the number 0.001" in said.err
        else:
            rendered = "".join(path.read_text() for path in sorted((tmp_path / "out").glob("*.yaml")))
            assert "- '1e-3'" in rendered and "- 1e-3" not in rendered
