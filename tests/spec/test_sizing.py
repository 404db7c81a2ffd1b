"""Trainer settings (the one schema) and PS memory derived from the model."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from components.spec.sizing import (
    checkpoint_bytes,
    chief_memory_bytes,
    chief_scratch_bytes,
    embedding_shard_bytes,
    ps_memory_bytes,
    ps_memory_quantity,
)
from tests.harness import PROJECT_ROOT
from trainer.settings import SettingsError, TrainerSettings


def test_settings_round_trip_through_the_stack_form():
    settings = TrainerSettings.from_config({"embeddingRows": 5000, "hiddenUnits": [8, 4], "dedup": False})
    assert settings.embedding_rows == 5000 and settings.hidden_units == (8, 4) and settings.dedup is False
    assert TrainerSettings.from_json(settings.to_json()) == settings
    assert set(settings.to_config()) == {
        "embeddingRows", "embeddingDim", "idsPerExample", "hiddenUnits", "batchSize", "steps",
        "stepsPerCall", "maxInFlight", "partition", "dedup", "optimizer", "learningRate",
        "zipfExponent", "data", "checkpointEvery", "checkpointDir", "seed",
    }


@pytest.mark.parametrize(
    "raw, message",
    [
        ({"embeddingRows": 0}, r"embeddingRows: must be at least 1 \(got 0\)"),
        ({"dedup": "yes"}, r"dedup: must be true or false"),
        ({"steps": True}, r"steps: must be a whole number"),
        ({"optimizer": "lbfgs"}, r"optimizer: must be one of adagrad, sgd, adam"),
        ({"zipfExponent": 1.0}, r"zipfExponent: must be greater than 1"),
        ({"learningRate": 0}, r"learningRate: must be greater than 0"),
        ({"hiddenUnits": [4, -1]}, r"hiddenUnits: must be a list of positive whole numbers"),
    ],
)
def test_bad_settings_name_the_key(raw, message):
    with pytest.raises(SettingsError, match=message):
        TrainerSettings.from_config(raw)


def test_settings_module_needs_no_tensorflow_nor_pydantic():
    """Pods run a stock TensorFlow image: the schema must import with the standard library alone."""
    code = (
        "import sys; sys.modules['tensorflow'] = None; sys.modules['pydantic'] = None\n"
        f"sys.path.insert(0, {str(PROJECT_ROOT)!r})\n"
        "from trainer.settings import TrainerSettings; print(TrainerSettings().partition)"
    )
    result = subprocess.run([sys.executable, "-I", "-c", code], cwd=PROJECT_ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "auto"


def test_ps_memory_is_shard_plus_slots_plus_headroom():
    settings = TrainerSettings(embedding_rows=10_000_000, embedding_dim=32, optimizer="adagrad")
    # 10M rows x 32 dims x 4 bytes x (1 + 1 Adagrad slot) over 4 shards = 640 MB per PS
    assert embedding_shard_bytes(settings, 4) == 640_000_000
    # + 50 % (320,000,000) + 768 MiB (805,306,368) = 1,765,306,368 B = 1683.5 MiB
    assert ps_memory_bytes(settings, 4) == 1_765_306_368
    assert ps_memory_quantity(settings, 4) == "1684Mi"


def test_unpartitioned_table_sizes_each_ps_for_the_whole_table():
    sharded = TrainerSettings(embedding_rows=1_000_000, partition="auto")
    whole = dataclasses.replace(sharded, partition="none")
    assert embedding_shard_bytes(whole, 5) == 5 * embedding_shard_bytes(sharded, 5)


def test_optimizer_slots_count_against_ps_memory():
    sgd = TrainerSettings(optimizer="sgd")
    adam = TrainerSettings(optimizer="adam")
    assert embedding_shard_bytes(adam, 2) == 3 * embedding_shard_bytes(sgd, 2)


def test_the_chief_is_sized_for_the_checkpoints_that_pass_through_it():
    """The chief writes every checkpoint itself: the whole table and its slots pass through its memory,
    and on scratch it keeps 3 of them plus the one being written."""
    settings = TrainerSettings(embedding_rows=20_000_000, embedding_dim=16, optimizer="adagrad")
    # 20M rows x 16 dims x 4 bytes x (1 + 1 Adagrad slot) = 2.56 GB
    assert checkpoint_bytes(settings) == 2_560_000_000
    # 1 GiB runtime + 2.56 GB + 25 % = 1,073,741,824 + 2,560,000,000 + 640,000,000
    assert chief_memory_bytes(settings) == 4_273_741_824
    # 512 MiB + (3 kept + 1 being written) x 2.56 GB; a volume or a remote folder takes them off scratch
    assert chief_scratch_bytes(settings, checkpoints_on_scratch=True) == 536_870_912 + 4 * 2_560_000_000
    assert chief_scratch_bytes(settings, checkpoints_on_scratch=False) == 536_870_912
    # A small model keeps the former fixed 2Gi.
    assert chief_memory_bytes(TrainerSettings(embedding_rows=1000)) == 2 * 1024**3


@pytest.mark.parametrize(
    "stack, scratch",
    [
        # 1M rows x 16 x 4 B x 2 = 128 MB a checkpoint; 512 MiB + 4 x 128 MB = 1000.3 MiB
        pytest.param("scene1-case3", "1001Mi", id="checkpoints on the chief's scratch"),
        pytest.param("scene1-case2-durable", "512Mi", id="checkpoints on a volume"),
    ],
)
def test_the_chief_pod_asks_for_room_for_its_checkpoints(stack, scratch):
    from components.objects import manifests, pods
    from components.objects.loading import load_experiment

    experiment = load_experiment(stack)
    chief = next(group for group in experiment.groups if group.task_type == "chief")
    spec = manifests.group_workload(experiment, chief)["spec"]["template"]["spec"]
    volume = next(v for v in spec["volumes"] if v["name"] == pods.SCRATCH_VOLUME)
    resources = spec["containers"][0]["resources"]
    assert volume["emptyDir"]["sizeLimit"] == scratch
    assert resources["requests"]["ephemeral-storage"] == scratch
    assert resources["requests"]["memory"] == resources["limits"]["memory"] == "2Gi"
