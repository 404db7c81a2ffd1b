"""A stack file's top-level keys are StackConfig's fields, listed once: the loader allows them,
TFExperimentArgs takes them and both `stack_values` write them, so a field added to StackConfig is
a key everywhere (and TFExperimentArgs is held to it)."""

from __future__ import annotations

import copy
import dataclasses
from types import SimpleNamespace
from typing import Any, Optional

import pytest
from pydantic import Field

from components.cli import diff
from components.resources import tf_experiment
from components.resources.tf_experiment import TFExperimentArgs
from components.spec import loading
from components.spec.loading import load_stack_config
from components.spec.models import StackConfig, StackConfigError
from components.spec.stack_files import PROJECT_ROOT, read_stack_values

SEED_KEYS = ["nodePools", "cluster", "trainer", "program", "tensorboard", "logs"]


class WithNotes(StackConfig):
    """StackConfig with one more key, as the next feature would add one."""

    run_notes: Optional[str] = Field(default=None, description="what this run is for")


class WithRequiredNotes(StackConfig):
    run_notes: str = Field(description="what this run is for, in every stack")


@dataclasses.dataclass(frozen=True)
class ArgsWithNotes(TFExperimentArgs):
    run_notes: Optional[str] = None


def arguments_unlike_stack_keys(args_type: type, config_type: type[StackConfig] = StackConfig) -> list[str]:
    """TFExperimentArgs against the stack file's keys: each key without its field (named as
    StackConfig's), and each field that is no key (but project_root, where the program's source is read)."""
    keys = config_type.file_keys()
    fields = {field.name for field in dataclasses.fields(args_type)}
    return [
        *(f"tfk8s:{key} has no field {name}" for key, name in keys.items() if name not in fields),
        *(f"field {name} is no stack key" for name in sorted(fields - set(keys.values()) - {"project_root"})),
    ]


def seed_values() -> dict[str, Any]:
    return copy.deepcopy(read_stack_values("scene1-case1")[1])


def unknown_key_message(values: dict[str, Any]) -> str:
    with pytest.raises(StackConfigError) as error:
        load_stack_config("scene1-case1", {**values, "tfk8s:nodepools": []})
    return str(error.value)


def test_the_keys_are_stack_configs_fields_by_their_aliases():
    assert list(StackConfig.file_keys()) == SEED_KEYS
    assert StackConfig.file_keys()["nodePools"] == "node_pools"
    assert "tfk8s:nodepools: unknown key (did you mean 'nodePools'?); allowed: " + ", ".join(
        f"tfk8s:{key}" for key in SEED_KEYS
    ) in unknown_key_message(seed_values())


def test_tf_experiment_args_has_a_field_for_every_key_and_no_other():
    assert arguments_unlike_stack_keys(TFExperimentArgs) == []


def test_a_field_added_to_stack_config_is_a_key_of_the_loader_the_args_and_both_stack_values(monkeypatch):
    monkeypatch.setattr(loading, "StackConfig", WithNotes)
    monkeypatch.setattr(tf_experiment, "StackConfig", WithNotes)
    values = seed_values()

    # The loader takes it, by its camelCase name, and lists it among the allowed keys.
    config = load_stack_config("scene1-case1", {**values, "tfk8s:runNotes": "baseline"})
    assert isinstance(config, WithNotes) and config.run_notes == "baseline"
    assert unknown_key_message(values).endswith(", tfk8s:logs, tfk8s:runNotes")
    # Left out, it takes its default, as every optional key does.
    assert load_stack_config("scene1-case1", values).run_notes is None

    # TFExperimentArgs without the field is caught; with it, its stack values carry the key.
    assert arguments_unlike_stack_keys(TFExperimentArgs, WithNotes) == ["tfk8s:runNotes has no field run_notes"]
    assert arguments_unlike_stack_keys(ArgsWithNotes, WithNotes) == []
    args = ArgsWithNotes(values["tfk8s:nodePools"], values["tfk8s:cluster"], run_notes="baseline")
    assert args.stack_values()["tfk8s:runNotes"] == "baseline"
    assert "tfk8s:runNotes" not in ArgsWithNotes(values["tfk8s:nodePools"], values["tfk8s:cluster"]).stack_values()

    # `diff` compares it.
    assert diff.stack_values(SimpleNamespace(config=config))["tfk8s:runNotes"] == "baseline"


def test_a_required_field_added_to_stack_config_is_required_of_every_stack(monkeypatch):
    monkeypatch.setattr(loading, "StackConfig", WithRequiredNotes)
    with pytest.raises(StackConfigError) as error:
        load_stack_config("scene1-case1", seed_values())
    assert "tfk8s:runNotes: missing; every stack needs it" in str(error.value)
    config = load_stack_config("scene1-case1", {**seed_values(), "tfk8s:runNotes": "baseline"})
    assert config.run_notes == "baseline"


def test_the_args_stack_values_are_what_they_were_for_each_key():
    """Every key from its argument, None left out, and no tfk8s:trainer for a program unless given."""
    values = seed_values()
    pools, cluster = values["tfk8s:nodePools"], values["tfk8s:cluster"]
    program = {"source": "tests/team_programs/tf2-ps", "command": ["python", "train.py"]}
    assert list(TFExperimentArgs(pools, cluster).stack_values()) == [
        "tfk8s:nodePools", "tfk8s:cluster", "tfk8s:trainer"
    ]
    assert list(TFExperimentArgs(pools, cluster, program=program).stack_values()) == [
        "tfk8s:nodePools", "tfk8s:cluster", "tfk8s:program"
    ]
    everything = TFExperimentArgs(
        pools, cluster, trainer={"steps": 10}, program=program, tensorboard={"image": "tb:1"}, logs={"size": "2Gi"}
    ).stack_values()
    assert everything == {
        "tfk8s:nodePools": pools,
        "tfk8s:cluster": cluster,
        "tfk8s:trainer": {"steps": 10},
        "tfk8s:program": program,
        "tfk8s:tensorboard": {"image": "tb:1"},
        "tfk8s:logs": {"size": "2Gi"},
    }


def test_the_library_docs_give_every_argument_its_key():
    """docs/library.md's table of TFExperimentArgs: one row per argument, naming its stack file key."""
    text = (PROJECT_ROOT / "docs" / "library.md").read_text(encoding="utf-8")
    table = text.split("| argument | stack file key | type |", 1)[1].split("\n\n", 1)[0]
    rows = [line.split("|") for line in table.splitlines() if line.startswith("| `")]
    documented = {cells[1].strip().strip("`"): cells[2].strip().strip("`") for cells in rows}
    keys = {name: f"tfk8s:{key}" for key, name in StackConfig.file_keys().items()}
    assert documented == {**keys, "project_root": ""}
    assert list(documented)[: len(keys)] == list(keys)


def test_a_key_named_in_code_is_the_references_key_and_an_unknown_one_fails_where_it_is_named():
    """`stack_key`: the next experiment's keys (`diagnose --write`) are named by the models, so a
    renamed field fails at import, not in a user's new stack file."""
    from components.insight import next_experiment
    from components.spec.model_paths import stack_key
    from components.spec.reference import stack_keys

    documented = {doc.key for doc in stack_keys()}
    named = {value for name, value in vars(next_experiment).items() if name.startswith("KEY_")}
    assert named and named <= documented, sorted(named - documented)
    assert stack_key("cluster", "ps", "replicas") == "tfk8s:cluster.ps.replicas"
    assert stack_key("trainer", "stepsPerCall") == "tfk8s:trainer.stepsPerCall"
    for wrong in (("cluster", "pss"), ("trainer", "steps_per_call"), ("cluster", "ps", "replicas", "x"), ("nope",)):
        with pytest.raises(KeyError, match="is no key of a stack file"):
            stack_key(*wrong)
