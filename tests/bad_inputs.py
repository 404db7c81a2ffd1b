"""The harness of the bad-input tables (tests/cli/test_bad_inputs.py, tests/spec/test_more_bad_inputs.py):
a row is a command line, its exit code and the one line on stderr it must print; the stacks and TFJobs
the rows edit."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest
import yaml

import components.cli.import_tfjob as importer
from components.cli.main import main

STACK = """\
config:
  tfk8s:nodePools:
    - name: servers
      nodes: [srv-00, srv-01]
  tfk8s:cluster:
    placement: colocated
    ps: {replicas: 1, pool: servers}
    workers: {replicas: 3, pool: servers}
  tfk8s:trainer: {}
"""

PROGRAM_STACK = """\
config:
  tfk8s:nodePools:
    - name: servers
      nodes: [srv-00]
  tfk8s:cluster:
    placement: colocated
    ps: {replicas: 1, pool: servers, memory: 1Gi}
    workers: {replicas: 2, pool: servers}
  tfk8s:program:
    command: [python, train.py]
"""


def edited(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new)


def stack_file(tmp_path: Path, content: str | bytes, name: str = "Pulumi.bad.yaml") -> str:
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return str(path)


def tfjob(**replica_types: dict) -> dict:
    def container(**fields) -> dict:
        return {
            "name": "tensorflow",
            "image": "tensorflow/tensorflow:2.21.0",
            "command": ["python", "train.py"],
            "resources": {"requests": {"memory": "2Gi"}},
            **fields,
        }

    types = {"PS": {"replicas": 1}, "Worker": {"replicas": 2}}
    types.update(replica_types)
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": "ctr"},
        "spec": {
            "tfReplicaSpecs": {
                name: {
                    "replicas": spec["replicas"],
                    "template": {"spec": {"containers": [container(**spec.get("container", {}))]}},
                }
                for name, spec in types.items()
                if spec is not None
            }
        },
    }


def worker_pod(**fields) -> dict:
    """tfjob() whose Worker pod template has `fields` beside its container."""
    job = tfjob()
    job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"].update(fields)
    return job


def tfjob_file(tmp_path: Path, job: dict | str | bytes) -> str:
    path = tmp_path / "tfjob.yaml"
    if isinstance(job, dict):
        job = yaml.safe_dump(job, sort_keys=False)
    path.write_bytes(job if isinstance(job, bytes) else job.encode("utf-8"))
    return str(path)


@dataclass(frozen=True)
class Case:
    argv: Callable[[Path], list[str]]
    code: int
    # A regular expression the one line on stderr must match, as printed ('- tfk8s:...' in a list of a
    # stack's problems) or without the list's '- '.
    message: str


def plan(content: str | bytes) -> Callable[[Path], list[str]]:
    return lambda tmp_path: ["plan", stack_file(tmp_path, content)]


def stacks_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where import-tfjob writes, for one test: a folder of its own, which a bad input leaves empty."""
    folder = tmp_path / "stacks"
    monkeypatch.setattr(importer, "STACKS_DIR", folder)
    return folder


def assert_one_clear_line(
    case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The row's exit code and its line on stderr; no traceback, nothing on stdout, nothing written."""
    stacks_dir = stacks_folder(tmp_path, monkeypatch)
    try:
        code = main(case.argv(tmp_path))
    except SystemExit as exit:  # argparse's usage errors
        code = exit.code
    said = capsys.readouterr()
    assert code == case.code, said.err
    lines = [line.strip() for line in said.err.splitlines() if line.strip()]
    assert any(re.search(case.message, line) or re.search(case.message, line.strip(" -")) for line in lines), said.err
    assert "Traceback" not in said.err
    assert said.out == ""
    assert not stacks_dir.exists() or list(stacks_dir.iterdir()) == [], "nothing is written for a bad input"
    assert [path.name for path in tmp_path.iterdir() if path.name.startswith("rendered")] == []
