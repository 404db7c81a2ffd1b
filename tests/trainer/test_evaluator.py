"""The evaluator (trainer/evaluator.py) in this process: restoring the chief's sharded checkpoints
into the local model, following a checkpoint folder, half-written checkpoints; its task config,
its settings and its log lines."""

from __future__ import annotations

import dataclasses
import io
import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from trainer.checkpoints import save
from trainer.cluster import ClusterConfigError, TaskConfig, read_task_config
from trainer.data import evaluation_examples, evaluation_size, synthetic_examples
from trainer.evaluator import CheckpointMismatch, Evaluator, EvaluatorSetupError, checkpoint_dir_of, main
from trainer.log_lines import (
    evaluation_event,
    evaluation_line,
    progress_line,
    read_evaluation_line,
    read_event,
    read_progress_line,
)
from trainer.model import SparseModel, table_partitioner
from trainer.settings import CHECKPOINTS_KEPT, TrainerSettings

SMALL = TrainerSettings(
    embedding_rows=2000, embedding_dim=8, batch_size=64, ids_per_example=4, hidden_units=(16,),
    steps=8, checkpoint_every=4,
)
CLUSTER = {"chief": ["c:2222"], "ps": ["p0:2222", "p1:2222"], "worker": ["w0:2222"]}


def trained_a_little(model: SparseModel, step: int) -> None:
    """Values no fresh model has: a restore that did nothing would show."""
    for shard in model.table_shards:
        shard.assign_add(tf.fill(shard.shape, 0.01 * step))
    for kernel, bias in model.dense:
        bias.assign_add(tf.fill(bias.shape, 0.1 * step))
    model.step.assign(step)


def write_checkpoints(directory: Path, steps: list[int], settings: TrainerSettings = SMALL) -> None:
    """Checkpoints as the chief writes them: its CheckpointManager, `ckpt-<step>`."""
    model = SparseModel(settings)
    manager = tf.train.CheckpointManager(
        tf.train.Checkpoint(model=model), str(directory), max_to_keep=CHECKPOINTS_KEPT
    )
    for step in steps:
        trained_a_little(model, step)
        manager.save(checkpoint_number=step)


def folder_state(directory: Path) -> list[tuple[str, int, int]]:
    return sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in directory.iterdir())


def polled(evaluator: Evaluator) -> tuple[list[int], str]:
    out = io.StringIO()
    return [e.step for e in evaluator.poll(out)], out.getvalue()


def test_a_table_the_chief_saved_in_shards_over_the_ps_restores_into_the_local_model(in_process_cluster, tmp_path):
    """The chief's own save (trainer/checkpoints.py) from a model sharded over 2 PS; the evaluator's
    model is one unsharded variable per table, and gets every row back."""
    strategy = tf.distribute.ParameterServerStrategy(
        in_process_cluster.resolver, variable_partitioner=table_partitioner(SMALL, 2)
    )
    with strategy.scope():
        trained = SparseModel(SMALL, strategy.extended.colocate_vars_with)
    assert len(trained.table_shards) == 2
    trained_a_little(trained, 8)
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(model=trained), str(tmp_path), max_to_keep=3)
    path = save(manager, 8)

    evaluator = Evaluator(SMALL, str(tmp_path))
    evaluation = evaluator.evaluate(path)

    restored = evaluator.model
    assert not hasattr(restored.table, "variables"), "the evaluator's table is one local variable"
    np.testing.assert_array_equal(restored.table.numpy(), tf.concat(trained.table_shards, 0).numpy())
    for (kernel, bias), (saved_kernel, saved_bias) in zip(restored.dense, trained.dense):
        np.testing.assert_array_equal(kernel.numpy(), saved_kernel.numpy())
        np.testing.assert_array_equal(bias.numpy(), saved_bias.numpy())
    assert evaluation.step == 8 and math.isfinite(evaluation.eval_loss)


def test_each_new_checkpoint_is_evaluated_once_in_order_and_the_folder_is_left_as_it_was(tmp_path):
    write_checkpoints(tmp_path, [4])
    evaluator = Evaluator(SMALL, str(tmp_path))
    before = folder_state(tmp_path)
    steps, said = polled(evaluator)
    assert steps == [4]
    assert said.splitlines()[0] == evaluation_line(4, evaluator.evaluate(str(tmp_path / "ckpt-4")).eval_loss)
    event = read_event(said.splitlines()[1])
    assert event is not None and event["event"] == "evaluation" and event["step"] == 4
    assert event["checkpoint"] == str(tmp_path / "ckpt-4") and math.isfinite(event["eval_loss"])
    assert polled(evaluator) == ([], ""), "a checkpoint is evaluated once"
    assert not evaluator.finished
    assert folder_state(tmp_path) == before, "the evaluator writes nothing into the checkpoint folder"

    write_checkpoints(tmp_path, [5, 6, 8])  # three more at once: it fell behind, and catches up in order
    assert polled(evaluator)[0] == [5, 6, 8]
    assert evaluator.finished, f"step {SMALL.steps} is the final step"


def _index_not_written_yet(folder: Path) -> None:
    (folder / "ckpt-8.index").rename(folder / "ckpt-8.index.later")


def _data_cut_short(folder: Path) -> None:
    data = folder / "ckpt-8.data-00000-of-00001"
    shutil.copy(data, folder / "data.later")
    data.write_bytes(data.read_bytes()[: data.stat().st_size // 2])


def _written_now(folder: Path) -> None:
    if (folder / "ckpt-8.index.later").exists():
        (folder / "ckpt-8.index.later").rename(folder / "ckpt-8.index")
    if (folder / "data.later").exists():
        (folder / "data.later").rename(folder / "ckpt-8.data-00000-of-00001")


@pytest.mark.parametrize(
    "half_write",
    [
        pytest.param(_index_not_written_yet, id="the newest checkpoint's index not written yet"),
        pytest.param(_data_cut_short, id="the newest checkpoint's data cut short"),
    ],
)
def test_a_half_written_checkpoint_is_tried_again_at_the_next_poll(tmp_path, half_write):
    write_checkpoints(tmp_path, [4, 8])
    half_write(tmp_path)
    evaluator = Evaluator(SMALL, str(tmp_path))
    steps, said = polled(evaluator)
    assert steps == [4]
    assert f"evaluator-0: cannot read {tmp_path / 'ckpt-8'} yet" in said
    assert polled(evaluator) == ([], ""), "said once"
    _written_now(tmp_path)
    assert polled(evaluator)[0] == [8]
    assert evaluator.finished


def test_a_checkpoint_removed_before_it_was_read_is_skipped(tmp_path):
    write_checkpoints(tmp_path, [4, 8])
    for path in tmp_path.glob("ckpt-4.*"):
        path.unlink()  # the chief keeps its last few: this one went before the evaluator got to it
    evaluator = Evaluator(SMALL, str(tmp_path))
    steps, said = polled(evaluator)
    assert steps == [8]
    assert f"skipping {tmp_path / 'ckpt-4'}" in said


def test_no_checkpoint_folder_yet_is_waited_for(tmp_path):
    evaluator = Evaluator(SMALL, str(tmp_path / "not-yet"))
    assert polled(evaluator) == ([], "")
    write_checkpoints(tmp_path / "not-yet", [8])
    assert polled(evaluator)[0] == [8]


def test_the_held_out_set_is_fixed_and_no_worker_trains_on_it():
    ids, labels = evaluation_examples(SMALL)
    again, _ = evaluation_examples(SMALL)
    assert ids.shape == (evaluation_size(SMALL), SMALL.ids_per_example)
    np.testing.assert_array_equal(ids.numpy(), again.numpy())
    assert 0.2 < float(tf.reduce_mean(labels)) < 0.8
    trained_ids, _ = synthetic_examples(tf.range(evaluation_size(SMALL), dtype=tf.int64), SMALL)
    assert not np.array_equal(ids.numpy(), trained_ids.numpy())
    assert evaluation_size(TrainerSettings()) == 51200, "100 batches at the default batch size"


@pytest.mark.parametrize(
    "changes, environ, expected",
    [
        pytest.param({"checkpoint_dir": "/checkpoints"}, {}, "/checkpoints", id="the chief's volume"),
        pytest.param({"checkpoint_dir": "gs://b/x"}, {"TFK8S_CHECKPOINT_DIR": "/c"}, "gs://b/x", id="remote"),
        pytest.param({}, {"TFK8S_CHECKPOINT_DIR": "/c"}, "/c", id="default, with the launcher's folder"),
    ],
)
def test_the_checkpoint_folder_is_the_chiefs(changes, environ, expected):
    assert checkpoint_dir_of(dataclasses.replace(SMALL, **changes), environ) == expected


@pytest.mark.parametrize(
    "changes, message",
    [
        pytest.param({}, "checkpointDir is 'default', the chief's own scratch folder", id="default, no folder"),
        pytest.param({"checkpoint_every": 0, "checkpoint_dir": "/c"}, "checkpointEvery is 0", id="no checkpoints"),
    ],
)
def test_an_evaluator_with_nothing_to_read_exits_2_saying_why(changes, message, capsys):
    with pytest.raises(EvaluatorSetupError, match=message):
        checkpoint_dir_of(dataclasses.replace(SMALL, **changes), {})
    assert main(TaskConfig(CLUSTER, "evaluator", 0), dataclasses.replace(SMALL, **changes), environ={}) == 2
    assert f"evaluator-0: {message}" in capsys.readouterr().err


def test_the_evaluator_is_task_0_outside_the_training_cluster():
    tf_config = {"cluster": CLUSTER, "task": {"type": "evaluator", "index": 0}}
    task = read_task_config({"TF_CONFIG": json.dumps(tf_config)})
    assert (task.name, task.cluster) == ("evaluator-0", CLUSTER)
    composed = read_task_config({
        "TFK8S_CLUSTER": json.dumps(CLUSTER), "TFK8S_TASK_TYPE": "evaluator",
        "TFK8S_FIRST_INDEX": "0", "JOB_COMPLETION_INDEX": "0",
    })
    assert composed == task
    assert json.loads(composed.tf_config_json()) == tf_config


@pytest.mark.parametrize(
    "cluster, task, message",
    [
        pytest.param(CLUSTER, {"type": "master", "index": 0}, "task type 'master' is not one of chief, ps, worker, "
                     "evaluator", id="an unknown type"),
        pytest.param(CLUSTER, {"type": "evaluator", "index": 1}, "one evaluator, index 0", id="evaluator 1"),
        pytest.param({**CLUSTER, "evaluator": ["e:2222"]}, {"type": "evaluator", "index": 0},
                     "stays out of the training cluster", id="an evaluator in the cluster"),
        pytest.param({"chief": ["c:1"], "worker": ["w:1"]}, {"type": "evaluator", "index": 0},
                     "at least one ps and one worker", id="evaluator of a cluster without PS"),
        pytest.param(CLUSTER, {"type": "worker", "index": 1}, "task worker-1 is not in the cluster",
                     id="a worker the cluster does not list"),
    ],
)
def test_task_configs_still_refused(cluster, task, message):
    with pytest.raises(ClusterConfigError, match=message):
        read_task_config({"TF_CONFIG": json.dumps({"cluster": cluster, "task": task})})


@pytest.mark.parametrize("step, loss", [(936, 0.31756), (0, 12.5), (2_000_000, float("nan")), (7, float("inf"))])
def test_the_evaluation_line_and_event_round_trip(step, loss):
    line = evaluation_line(step, loss)
    read = read_evaluation_line(line)
    assert read is not None and read.step == step
    assert read.eval_loss == pytest.approx(round(loss, 4), nan_ok=True)
    assert read_progress_line(line) is None and read_evaluation_line(progress_line(step, loss, 10.0)) is None
    event = read_event(evaluation_event(step, loss, "/checkpoints/ckpt-936"))
    assert event is not None and (event["event"], event["step"], event["checkpoint"]) == (
        "evaluation", step, "/checkpoints/ckpt-936"
    )
    assert event["eval_loss"] == pytest.approx(loss, nan_ok=True, rel=1e-5)


def test_the_evaluation_line_reads_as_documented():
    assert evaluation_line(936, 0.31756) == "eval step     936  eval_loss 0.3176"


def test_a_checkpoint_of_another_model_is_said_to_be_one(tmp_path):
    write_checkpoints(tmp_path, [8])
    evaluator = Evaluator(dataclasses.replace(SMALL, embedding_dim=4), str(tmp_path))
    with pytest.raises(CheckpointMismatch, match=r"ckpt-8 does not hold this model .*incompatible tensor with shape"):
        evaluator.poll(io.StringIO())


def test_with_tensorboard_each_evaluation_is_an_eval_loss_scalar_of_run_eval(tmp_path, monkeypatch):
    from tests.trainer.test_scalars import _scalars
    from trainer.scalars import EVAL_RUN, SCALARS_PLUGIN, scalar_writer
    from trainer.shared_names import TENSORBOARD_DIR_ENV

    checkpoints, tensorboard = tmp_path / "checkpoints", tmp_path / "tensorboard"
    write_checkpoints(checkpoints, [4, 8])
    monkeypatch.setenv(TENSORBOARD_DIR_ENV, str(tensorboard))
    evaluator = Evaluator(SMALL, str(checkpoints), scalars=scalar_writer(EVAL_RUN))
    evaluations = evaluator.poll(io.StringIO())
    evaluator.scalars.close()
    assert _scalars(tensorboard / EVAL_RUN) == [
        (e.step, "eval_loss", round(e.eval_loss, 4), SCALARS_PLUGIN) for e in evaluations
    ]
    assert [e.step for e in evaluations] == [4, 8]
