"""The chief's figures as TensorBoard scalars (trainer/scalars.py): event files TensorBoard's scalars
plugin reads, written without the TensorBoard package, where tfk8s:tensorboard says."""

from __future__ import annotations

import tensorflow as tf
from tensorflow.core.util import event_pb2

from trainer.scalars import SCALARS_PLUGIN, TRAIN_RUN, ScalarWriter, scalar_writer
from trainer.shared_names import TENSORBOARD_DIR_ENV


def _scalars(folder) -> list[tuple[int, str, float, str]]:
    found = []
    for path in sorted(folder.glob("events.out.tfevents.*")):
        for record in tf.data.TFRecordDataset(str(path)):
            event = event_pb2.Event.FromString(record.numpy())
            for value in event.summary.value:
                number = tf.make_ndarray(value.tensor).item()
                found.append((event.step, value.tag, round(number, 4), value.metadata.plugin_data.plugin_name))
    return found


def test_each_point_is_a_scalar_of_the_scalars_plugin_on_disk_once_written(tmp_path):
    writer = ScalarWriter(str(tmp_path))
    writer.write(50, {"loss": 0.6931, "examples_per_sec": 1234.5})
    assert _scalars(tmp_path) == [(50, "loss", 0.6931, SCALARS_PLUGIN), (50, "examples_per_sec", 1234.5, SCALARS_PLUGIN)]
    writer.write(100, {"loss": 0.5})
    writer.close()
    assert [(step, tag) for step, tag, _, _ in _scalars(tmp_path)][-1] == (100, "loss")


def test_the_writer_goes_into_the_train_run_of_the_experiments_folder_only_with_tensorboard(tmp_path, monkeypatch):
    monkeypatch.delenv(TENSORBOARD_DIR_ENV, raising=False)
    assert scalar_writer(TRAIN_RUN) is None
    monkeypatch.setenv(TENSORBOARD_DIR_ENV, str(tmp_path / "tensorboard"))
    writer = scalar_writer(TRAIN_RUN)
    assert writer is not None
    writer.write(1, {"loss": 1.0})
    writer.close()
    assert _scalars(tmp_path / "tensorboard" / TRAIN_RUN) == [(1, "loss", 1.0, SCALARS_PLUGIN)]


def test_the_chief_of_a_running_cluster_writes_each_progress_line_as_scalars(tmp_path, monkeypatch):
    """The writer is made in the chief's cluster context: one made before start-up lives on a device
    that is gone once the chief joins the cluster, and the first point would fail."""
    from tests.trainer.test_local import launch

    monkeypatch.setenv(TENSORBOARD_DIR_ENV, str(tmp_path / "tensorboard"))
    code, lines, summary = launch(tmp_path / "work", "--ps", "1", "--workers", "2", "--steps", "60")
    assert code == 0, summary
    printed = [int(line.split()[1]) for line in lines if line.startswith("step ")]
    points = _scalars(tmp_path / "tensorboard" / TRAIN_RUN)
    assert [step for step, tag, _, _ in points if tag == "loss"] == printed
    assert {tag for _, tag, _, _ in points} == {"loss", "examples_per_sec"}


def test_a_folder_it_cannot_write_ends_the_scalars_said_once_never_the_training(tmp_path, capsys):
    blocked = tmp_path / "file"
    blocked.write_text("a file where the folder would be\n")
    writer = ScalarWriter(str(blocked / "train"))
    writer.write(1, {"loss": 1.0})
    writer.write(2, {"loss": 0.9})
    said = capsys.readouterr().out
    assert said.count("tensorboard: cannot write scalars to") == 1 and "training goes on" in said, said
    writer.close()
