"""Every field of a TFJob that `import-tfjob` reads, given a value of another kind than Kubernetes takes
there (a number, a boolean, text, a list, a mapping, nothing): one clear line naming the field and
nothing written, or a stack tfk8s loads, where the value is one Kubernetes reads alike (null for
absent, a number for a quantity) or the field is one the import lists as not carried. Never a
traceback.

The fields are every path of a TFJob that sets each field the importer reads, so a field it starts
reading is covered once the TFJob below sets it."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import components.cli.import_tfjob as importer
from components.cli.main import main
from components.spec.loading import load_stack_config
from components.spec.stack_files import read_stack_values


def container(**limits: Any) -> dict[str, Any]:
    return {
        "name": "tensorflow",
        "image": "registry.example.com/ml/ctr:2.21.0",
        "command": ["python", "train.py"],
        "args": ["--steps", "100"],
        "workingDir": "/app",
        "env": [
            {"name": "MODE", "value": "fast"},
            {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "token", "key": "t"}}},
        ],
        "ports": [{"name": "tfjob-port", "containerPort": 2222}],
        "resources": {"requests": {"cpu": "2", "memory": "4Gi"}, "limits": {"memory": "4Gi", **limits}},
        "volumeMounts": [{"name": "data", "mountPath": "/data", "readOnly": True}],
    }


def replica(count: int, **limits: Any) -> dict[str, Any]:
    pod = {
        "containers": [container(**limits)],
        "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}],
        "nodeSelector": {"pool": "a"},
        "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"}],
        "imagePullSecrets": [{"name": "regcred"}],
        "priorityClassName": "high",
    }
    if limits:  # the GPU workers' pool, by the label GPU feature discovery gives its nodes
        pod["nodeSelector"] = {"nvidia.com/gpu.product": "Tesla-P40"}
    return {"replicas": count, "restartPolicy": "OnFailure", "template": {"metadata": {"labels": {"a": "b"}}, "spec": pod}}


TFJOB: dict[str, Any] = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "TFJob",
    "metadata": {"name": "ctr", "namespace": "team", "labels": {"team": "ads"}},
    "spec": {
        "runPolicy": {
            "backoffLimit": 3,
            "cleanPodPolicy": "Running",
            "activeDeadlineSeconds": 3600,
            "ttlSecondsAfterFinished": 60,
            "schedulingPolicy": {"queue": "ads", "priorityClass": "high"},
        },
        "tfReplicaSpecs": {"Chief": replica(1), "PS": replica(2), "Worker": replica(3, **{"nvidia.com/gpu": 1})},
    },
}


def paths(value: Any, at: tuple = ()) -> Iterator[tuple]:
    if isinstance(value, dict):
        items: Any = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return
    for key, item in items:
        yield (*at, key)
        yield from paths(item, (*at, key))


# apiVersion and kind pick what the file is (another kind is refused as such, tested elsewhere).
FIELDS = [path for path in paths(TFJOB) if path[0] not in ("apiVersion", "kind")]

WRONG = st.one_of(
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.none(),
    st.text(max_size=12),
    st.lists(st.one_of(st.integers(), st.text(max_size=4)), max_size=2),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
)


def with_value(path: tuple, value: Any) -> dict[str, Any]:
    job = copy.deepcopy(TFJOB)
    holder = job
    for part in path[:-1]:
        holder = holder[part]
    holder[path[-1]] = value
    return job


def named_field(path: tuple) -> str:
    """The last name on the path: a message about the field names it (or its item's list)."""
    return next(str(part) for part in reversed(path) if isinstance(part, str))


def test_the_tfjob_itself_imports(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(importer, "STACKS_DIR", tmp_path / "stacks")
    manifest = tmp_path / "tfjob.yaml"
    manifest.write_text(yaml.safe_dump(TFJOB, sort_keys=False))
    assert main(["import-tfjob", str(manifest), "--stack", "imported", "--nodes", "n1"]) == 0, capsys.readouterr().err


CONTAINER = ("spec", "tfReplicaSpecs", "PS", "template", "spec", "containers", 0)
POD = CONTAINER[:-2]


# The same examples in every run (derandomize): make test is a gate. Searching further is a run with
# derandomize=False, as the cases kept below were found.
@settings(max_examples=600, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=st.sampled_from(FIELDS), value=WRONG)
# Each once a traceback or a stack file `plan` could not read: the cases found, kept.
@example(path=(*CONTAINER, "env", 0, "name"), value=None)
@example(path=(*CONTAINER, "volumeMounts", 0, "mountPath"), value=None)
@example(path=(*POD, "imagePullSecrets", 0), value={})
@example(path=(*CONTAINER, "args"), value=[])
@example(path=("spec", "runPolicy", "schedulingPolicy", "queue"), value="0e0")
@example(path=(*CONTAINER, "workingDir"), value="/app/\U0001f600\x85")
@example(path=(*CONTAINER, "command", 0), value="0[")  # plain alone, the end of a flow list in one
@example(path=(*POD, "tolerations", 0, "effect"), value=1)
@example(path=("metadata", "name"), value=0)
@example(path=(*CONTAINER, "resources", "requests", "memory"), value=[])
def test_a_value_of_another_kind_anywhere_is_one_line_naming_the_field_or_a_stack_that_loads(
    path, value, tmp_path_factory, capsys
):
    folder = tmp_path_factory.mktemp("import")
    stacks = folder / "stacks"
    manifest = folder / "tfjob.yaml"
    manifest.write_text(yaml.safe_dump(with_value(path, value), sort_keys=False))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(importer, "STACKS_DIR", stacks)
        code = main(["import-tfjob", str(manifest), "--stack", "imported", "--nodes", "n1"])
    said = capsys.readouterr()
    assert "Traceback" not in said.err
    assert code in (0, 1), said.err
    if code == 1:
        line = said.err.strip().splitlines()
        assert line[0].startswith("import-tfjob: ") and line[-1].endswith("; nothing written"), said.err
        assert named_field(path) in said.err or path[:2] == ("spec", "tfReplicaSpecs") and len(path) == 3, said.err
        assert not stacks.exists() or list(stacks.iterdir()) == []
    elif "fill in: " not in said.err:  # a value to fill in (a GPU model it no longer names) stops `plan` on purpose
        stack, values = read_stack_values(str(stacks / "Pulumi.imported.yaml"))
        load_stack_config(stack, values)
