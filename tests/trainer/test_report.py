"""`python -m trainer.report`: experiments run side by side, written as JSON, Markdown and plots."""

from __future__ import annotations

import json

import pytest

from trainer.report.command import main
from trainer.report.replay import replayed_rows_per_shard
from trainer.settings import TrainerSettings

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def test_a_bad_stack_or_partition_fails_before_anything_runs(tmp_path, capsys):
    assert main(["--stacks", "no-such-stack", "--out", str(tmp_path)]) == 2
    assert "stack 'no-such-stack': no file" in capsys.readouterr().err
    assert main(["--stacks", "scene1-case1", "--partitions", "hash", "--out", str(tmp_path)]) == 2
    assert "partition: must be one of auto, range, none (got hash)" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_rows_per_ps_are_replayed_deterministically():
    settings = TrainerSettings(embedding_rows=20000, batch_size=128)
    auto = replayed_rows_per_shard(settings, 3, batches=5)
    assert auto == replayed_rows_per_shard(settings, 3, batches=5)
    assert len(auto) == 3 and max(auto) / (sum(auto) / 3) < 1.1
    none = replayed_rows_per_shard(TrainerSettings(embedding_rows=20000, batch_size=128, partition="none"), 3, batches=5)
    assert len(none) == 1 and none[0] == sum(auto)  # the same distinct rows, all in one shard


@pytest.mark.slow
def test_a_tiny_sweep_writes_every_file_with_the_same_figures(tmp_path):
    assert main(["--stacks", "scene1-case1", "--partitions", "none", "auto", "--steps", "20",
                 "--max-workers", "2", "--name", "tiny", "--out", str(tmp_path)]) == 0
    out = tmp_path / "tiny"
    for name in ("ps_cpu.png", "rows_per_ps.png", "examples_per_sec.png", "loss.png"):
        data = (out / name).read_bytes()
        assert data.startswith(PNG_SIGNATURE) and len(data) > 1000, name
    report = json.loads((out / "report.json").read_text())
    markdown = (out / "report.md").read_text()
    assert markdown.splitlines()[2] == report["finding"]
    assert report["finding"].startswith("With partition none one of 3 PS serves 100% of the embedding rows")
    none, auto = report["runs"]
    assert (none["partition"], auto["partition"], none["ps"], none["workers"]) == ("none", "auto", 3, 2)
    assert sorted(none["rows_per_ps"])[:2] == [0, 0], "one PS holds the whole table"
    for run in report["runs"]:
        assert f"| rows per PS (first 50 batches) | {', '.join(str(r) for r in run['rows_per_ps'])} |" in markdown
        assert f"| bytes per PS | {', '.join(str(b) for b in run['bytes_per_ps'])} |" in markdown
        assert f"| PS CPU imbalance | {run['ps_cpu_imbalance']} |" in markdown
        assert f"| examples/s | {run['examples_per_sec']} |" in markdown
    assert "- partition none -> auto (scene1-case1): rows imbalance 3.0 -> " in markdown
