"""The policy pack's own copies of tfk8s facts agree with the originals.

The pack runs in its own environment (pulumi-policy pins protobuf 5.29) and
imports no tfk8s code, so it keeps copies: optimizer slots, quantity suffixes,
the shard rule and its byte maths, label keys, the settings variable. This
test holds each copy against the module it was copied from and fails the day
one of them changes alone.
"""

from __future__ import annotations

import importlib
import itertools

import pytest

from components.plan import labels as L
from components.spec.quantities import QUANTITY_FACTORS, quantity_value
from components.spec.sizing import embedding_shard_bytes
from tests.policy_harness import tfk8s_policies as pack
from trainer.settings import OPTIMIZER_SLOTS, OPTIMIZERS, PARTITIONS, SETTINGS_ENV, TrainerSettings


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


def test_label_keys_and_the_settings_variable_agree():
    assert (pack.COMPONENT, pack.INSTANCE, pack.GPU_PRODUCT, pack.TFK8S_GPU_PRODUCT, pack.PRODUCTION_LABEL) == (
        L.COMPONENT, L.INSTANCE, L.GPU_PRODUCT, L.TFK8S_GPU_PRODUCT, L.PRODUCTION,
    )
    assert pack.SETTINGS_ENV == SETTINGS_ENV


def test_the_jobset_task_variables_agree_with_the_trainers():
    """The pack composes a JobSet task's TF_CONFIG from the variables the trainer reads."""
    from trainer import cluster as trainer_cluster

    assert (pack.CLUSTER_ENV, pack.TASK_TYPE_ENV, pack.FIRST_INDEX_ENV, pack.COMPLETION_INDEX_ENV) == (
        trainer_cluster.CLUSTER_ENV, trainer_cluster.TASK_TYPE_ENV,
        trainer_cluster.FIRST_INDEX_ENV, trainer_cluster.COMPLETION_INDEX_ENV,
    )
    assert pack.JOBSET_NAME_LABEL == "jobset.sigs.k8s.io/jobset-name"


def test_the_pack_is_split_by_concern_with_each_policy_beside_its_rule():
    """Reading resources into pods in one module, the rules in one module per concern, none a
    catch-all: each policy object is defined in the module that holds its validator."""
    import ast
    import importlib
    from pathlib import Path

    folder = Path(pack.__path__[0])
    sizes = {path.name: len(path.read_text().splitlines()) for path in folder.glob("*.py")}
    concerns = ("network", "tf_config", "gpu", "sizing", "hygiene")
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


def test_the_trainers_command_agrees():
    """The pack tells tfk8s's trainer from a team's program by it."""
    from components.objects.pods import TRAINER_COMMAND

    assert pack.TRAINER_COMMAND == list(TRAINER_COMMAND)


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
