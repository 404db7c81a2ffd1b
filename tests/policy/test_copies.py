"""The policy pack's own copies of tfk8s facts agree with the originals.

The pack runs in its own environment (pulumi-policy pins protobuf 5.29) and
imports no tfk8s code, so it keeps copies: every name it shares with tfk8s
(trainer/shared_names.py: the port, labels, variables, the trainer's mark),
the role table's rows with the traits the rules read, optimizer slots,
quantity suffixes, the shard rule and its byte maths, the `$(NAME)` grammar.
This test holds each copy against the module it was copied from and fails the
day one of them changes alone.
"""

from __future__ import annotations

import importlib
import itertools
import json

import pytest

from components.spec.quantities import QUANTITY_FACTORS, quantity_value
from components.spec.sizing import embedding_shard_bytes
from tests.policy_harness import tfk8s_policies as pack
from trainer.settings import OPTIMIZER_SLOTS, OPTIMIZERS, PARTITIONS, TrainerSettings


def test_optimizer_slots_and_names_agree():
    assert pack.OPTIMIZER_SLOTS == OPTIMIZER_SLOTS
    assert set(pack.OPTIMIZER_SLOTS) == set(OPTIMIZERS)


@pytest.mark.parametrize("suffix", sorted(set(QUANTITY_FACTORS) | set(pack.QUANTITY_SUFFIX)))
def test_quantity_suffixes_agree(suffix):
    assert suffix in pack.QUANTITY_SUFFIX and suffix in QUANTITY_FACTORS, f"'{suffix}' is known to one side only"
    assert pack.quantity_bytes(f"3{suffix}") == pytest.approx(quantity_value(f"3{suffix}"))


@pytest.mark.parametrize(
    "partition, optimizer, ps", list(itertools.product(PARTITIONS, OPTIMIZERS, (1, 2, 3, 7)))
)
def test_shards_and_shard_bytes_agree(partition, optimizer, ps):
    settings = TrainerSettings(embedding_rows=1_000_003, embedding_dim=24, partition=partition, optimizer=optimizer)
    as_pods_see_it = settings.to_config()
    assert pack.embedding_shards(as_pods_see_it, ps) == settings.shard_count(ps)
    assert pack.shard_bytes(as_pods_see_it, ps) == embedding_shard_bytes(settings, ps)


def test_the_pack_is_split_by_concern_with_each_policy_beside_its_rule():
    """Reading resources into pods in one module, the rules in one module per concern, none a
    catch-all: each policy object is defined in the module that holds its validator."""
    import ast
    from pathlib import Path

    folder = Path(pack.__path__[0])
    sizes = {path.name: len(path.read_text().splitlines()) for path in folder.glob("*.py")}
    concerns = ("network", "tf_config", "gpu", "sizing", "hygiene", "pod_security")
    assert {"reading.py", "facts.py", *(f"{name}.py" for name in concerns)} <= set(sizes)
    assert max(sizes.values()) <= 350, sizes
    gathered = []
    for name in concerns:
        tree = ast.parse((folder / f"{name}.py").read_text())
        defined = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
        validators = [kw.value.id for node in ast.walk(tree) if isinstance(node, ast.Call)
                      for kw in node.keywords if kw.arg == "validate"]
        assert validators and set(validators) <= defined, f"{name}.py: a policy whose rule is elsewhere"
        gathered += importlib.import_module(f"{pack.__name__}.{name}").POLICIES
    assert sorted(p.name for p in gathered) == sorted(p.name for p in pack.POLICIES)


def test_the_kubelet_expansion_is_the_pods_and_the_validators_line_for_line():
    """`$(NAME)` is read one way by the validator, the local launcher, the trainer and the pack: the
    pack's copy holds the very functions of trainer/kubelet_expansion.py."""
    import inspect

    from trainer import kubelet_expansion as original

    copy = importlib.import_module(f"{pack.__name__}.expansion")
    functions = [name for name, value in vars(original).items() if inspect.isfunction(value)]
    assert functions == [name for name, value in vars(copy).items() if inspect.isfunction(value)]
    for name in functions:
        assert inspect.getsource(getattr(copy, name)) == inspect.getsource(getattr(original, name)), name


def test_the_role_table_is_components_row_for_row():
    """The pack treats one role unlike another by the traits it copies (never by a role's name): the
    copy has the table's rows in its order, and every trait it keeps is the table's, value for value."""
    from dataclasses import fields
    from typing import get_args

    from components.spec import task_roles

    facts = importlib.import_module(f"{pack.__name__}.facts")
    traits = [field.name for field in fields(facts.Role)]
    assert set(traits) <= {field.name for field in fields(task_roles.TaskRole)}, "a trait the table does not have"
    assert [[getattr(role, trait) for trait in traits] for role in facts.ROLES] == [
        [getattr(role, trait) for trait in traits] for role in task_roles.ROLES
    ]
    assert get_args(facts.Load) == get_args(task_roles.Load)
    assert get_args(facts.CheckpointAccess) == get_args(task_roles.CheckpointAccess)
    # The rows the rules look up, found by the same traits as components/ finds them.
    for load in {role.load for role in task_roles.ROLES}:
        assert facts.role_by_load(load).name == task_roles.role_by_load(load).name
    assert facts.checkpoint_writer().name == task_roles.checkpoint_writer().name
    assert all(facts.role_of(role.name) is role for role in facts.ROLES)
    assert facts.role_of("launcher") is None and facts.role_of(None) is None


# The pack's facts that are not tfk8s's names, each with what holds it.
PACK_ONLY = {
    "OPTIMIZER_SLOTS": "test_optimizer_slots_and_names_agree",
    "QUANTITY_SUFFIX": "test_quantity_suffixes_agree",
    "GPU_PRODUCT_LABELS": "both GPU product labels, each compared here",
    "REMOVED_API_VERSIONS": "Kubernetes' removed API versions, a hygiene rule of the pack's own",
    "WORKLOAD_KINDS": "test_every_kind_tfk8s_runs_pods_in_is_a_workload_to_the_pack",
    "ROLES": "test_the_role_table_is_components_row_for_row",
}


def test_every_copied_name_agrees_with_the_one_tfk8s_defines():
    """Constant by constant: a name the pack copies is the shared module's, value for value."""
    from trainer import shared_names

    facts = importlib.import_module(f"{pack.__name__}.facts")
    copied = {name: value for name, value in vars(facts).items() if name.isupper()}
    assert set(copied) - set(PACK_ONLY) <= set(vars(shared_names)), "a fact the pack keeps that tfk8s does not define"
    for name in set(copied) - set(PACK_ONLY):
        original = getattr(shared_names, name)
        assert copied[name] == (list(original) if isinstance(original, tuple) else original), name
    assert facts.GPU_PRODUCT_LABELS == (shared_names.GPU_PRODUCT, shared_names.TFK8S_GPU_PRODUCT)
    assert {"PROGRAM", "TRAINER_PROGRAM"} <= set(copied), "the mark the pack knows tfk8s's trainer by"


def test_every_kind_tfk8s_runs_pods_in_is_a_workload_to_the_pack():
    from components.resources.kube import RESOURCE_TOKENS
    from tests.runs import program_run

    facts = importlib.import_module(f"{pack.__name__}.facts")
    from tests.policy.test_policies import statefulset_run

    runs = (program_run("scene1-case2"), statefulset_run("scene1-case2"))
    with_pods = {m["kind"] for run in runs for m in run.manifests() if '"containers"' in json.dumps(m)}
    assert with_pods == {"JobSet", "StatefulSet", "Job"} and with_pods <= {kind for _, kind in RESOURCE_TOKENS}
    assert with_pods <= set(facts.WORKLOAD_KINDS)
