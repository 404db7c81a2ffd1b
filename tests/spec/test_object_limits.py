"""Kubernetes' limits on a whole object that stack input could fill: a Secret's data (MaxSecretSize, 1 MiB),
checked where the program's secret `env` values are known (the engine decrypts them), and an object's
annotations (256 KiB together), which tfk8s fills with its hashes and fixed values only."""

from __future__ import annotations

import copy
from typing import Any, Iterator

import pytest

from components.objects.experiment_objects import experiment_objects
from components.objects.loading import load_experiment, load_experiment_values
from components.plan.trainer_bundle import load_trainer_bundle
from components.spec import kubernetes_limits as K
from components.spec.models import StackConfigError
from components.spec.secrets import split_secrets
from components.spec.stack_files import PROJECT_ROOT, read_stack_values
from tests.runs import SHIPPED_STACKS

STACK = "scene1-case2"
# Nine secret values, each one exec string (NAME=value and its NUL within MAX_ARG_STRLEN), that come
# to MaxSecretSize together, and one byte more.
SECRET_NAMES = [f"KEY_{index}" for index in range(9)]
AT_THE_BOUND = [K.MAX_CONFIG_MAP_BYTES // 9] * 8 + [K.MAX_CONFIG_MAP_BYTES - 8 * (K.MAX_CONFIG_MAP_BYTES // 9)]


def engine_values(sizes: list[int]) -> tuple[dict[str, Any], set[str]]:
    """A program stack as the engine hands it over, its secret env values decrypted, and their paths."""
    _, values = read_stack_values(STACK)
    values = copy.deepcopy(values)
    values.pop("tfk8s:trainer", None)
    env = {name: "s" * size for name, size in zip(SECRET_NAMES, sizes)}
    values["tfk8s:program"] = {"command": ["python3", "train.py"], "env": env}
    # One role's pod template per object: the values are the Secret's, not the template's.
    values["tfk8s:cluster"].update(workload="statefulset")
    values["tfk8s:cluster"]["ps"]["memory"] = "4Gi"
    return values, {f"tfk8s:program.env.{name}" for name in env}


def test_secret_values_that_fill_one_secret_are_kept():
    assert sum(AT_THE_BOUND) == K.MAX_CONFIG_MAP_BYTES
    values, encrypted = engine_values(AT_THE_BOUND)
    assert split_secrets(STACK, values, {"tfk8s:program"}, encrypted).env_names == set(SECRET_NAMES)
    experiment = load_experiment_values(
        STACK, values, load_trainer_bundle(PROJECT_ROOT), secret_keys={"tfk8s:program"}, known_encrypted=encrypted
    )
    assert experiment.secret_env == set(SECRET_NAMES)


def test_secret_values_one_byte_past_a_secret_are_refused_naming_the_key_and_the_bound():
    values, encrypted = engine_values([*AT_THE_BOUND[:-1], AT_THE_BOUND[-1] + 1])
    with pytest.raises(StackConfigError) as refused:
        load_experiment_values(
            STACK, values, load_trainer_bundle(PROJECT_ROOT), secret_keys={"tfk8s:program"}, known_encrypted=encrypted
        )
    assert refused.value.problems == (
        f"tfk8s:program.env: the values set with --secret ({', '.join(SECRET_NAMES)}) reach the pods through one "
        "Secret, whose values come to 1,048,577 bytes, and a Secret holds at most 1,048,576 (MaxSecretSize); pass "
        "large ones in a file instead (program.volumes)",
    )
    assert "sss" not in str(refused.value)  # a secret's value is never shown


@pytest.mark.parametrize(
    "annotations, kept",
    [
        pytest.param({"a": "v" * (K.MAX_ANNOTATIONS_BYTES - 1)}, True, id="256 KiB with the key"),
        pytest.param({"a": "v" * K.MAX_ANNOTATIONS_BYTES}, False, id="a byte past it"),
        pytest.param({"k1": "v" * 131_068, "k2": "é" * 65_536}, True, id="two, in UTF-8 bytes: at the bound"),
        pytest.param({"k1": "v" * 131_069, "k2": "é" * 65_536}, False, id="two, in UTF-8 bytes: a byte past"),
    ],
)
def test_an_objects_annotations_are_at_most_256_kib_together(annotations, kept):
    assert (K.annotations_size_problem(annotations) is None) == kept


def _annotations(manifest: Any) -> Iterator[dict[str, str]]:
    """The annotations of an object and of every object template it holds (pods, Jobs)."""
    if isinstance(manifest, dict):
        metadata = manifest.get("metadata")
        if isinstance(metadata, dict) and isinstance(metadata.get("annotations"), dict):
            yield metadata["annotations"]
        for value in manifest.values():
            yield from _annotations(value)
    elif isinstance(manifest, list):
        for item in manifest:
            yield from _annotations(item)


def _experiments() -> Iterator[Any]:
    for stack in SHIPPED_STACKS:
        yield pytest.param(lambda stack=stack: load_experiment(stack), id=stack)
    values, encrypted = engine_values(AT_THE_BOUND)
    values["tfk8s:program"]["args"] = ["--vocabulary", "w" * 120_000]

    def largest() -> Any:
        return load_experiment_values(
            STACK, values, load_trainer_bundle(PROJECT_ROOT), secret_keys={"tfk8s:program"}, known_encrypted=encrypted
        )

    yield pytest.param(largest, id="a program with a Secret's worth of env and a long argument")


@pytest.mark.parametrize("experiment", list(_experiments()))
def test_the_annotations_tfk8s_writes_keep_within_the_bound_whatever_the_stack_holds(experiment):
    for obj in experiment_objects(experiment()):
        for written in _annotations(obj.manifest):
            assert K.annotations_size_problem(written) is None, obj.suffix
            assert all(len(key) + len(value) <= 256 for key, value in written.items()), written
