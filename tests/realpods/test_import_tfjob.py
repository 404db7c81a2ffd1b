"""A team's TFJob, imported with `import-tfjob` and applied as it is written, runs its program to
`Succeeded` on real nodes: the same image (built elsewhere, loaded as `make load-image` does), the
same command, args, working directory and environment, TF_CONFIG as TFJob gave it."""

from __future__ import annotations

import contextlib
import shutil
import time
from pathlib import Path
from typing import Iterator

from components.cli import import_tfjob as importer
from components.cli.main import main as components_main
from components.objects.loading import load_experiment
from tests.realpods.conftest import REAL_CLUSTER, REAL_SERVERS
from tests.realpods.test_programs import ENDS_WITHIN_S, FAIL_WITHIN_S, wait_for_phase
from tools.localcluster import realnodes
from tools.nodeimage.archive import ImageConfig, write_image_archive
from tools.nodeimage.images import tensorflow_image
from tools.nodeimage.program_images import keep_archive

PROJECT_ROOT = Path(__file__).resolve().parents[2]
TEAM_TFJOB = PROJECT_ROOT / "tests" / "team_programs" / "ctr-tfjob" / "tfjob.yaml"
TEAM_PROGRAM = PROJECT_ROOT / "tests" / "team_programs" / "tf2-ps" / "train.py"
TEAM_IMAGE = "registry.example.com/ml/ctr:2.21.0"
WORKERS_ONLY_TFJOB = PROJECT_ROOT / "tests" / "team_programs" / "tf2-mwms" / "tfjob.yaml"
WORKERS_ONLY_PROGRAM = PROJECT_ROOT / "tests" / "team_programs" / "tf2-mwms" / "train.py"
WORKERS_ONLY_IMAGE = "registry.example.com/ml/mwms:2.21.0"


@contextlib.contextmanager
def team_image(tmp_path: Path, program: Path, folder: str, reference: str) -> Iterator[None]:
    """The team's image on every real node: the nodes' TensorFlow with the program at /opt/<folder>,
    as their CI would bake it."""
    rootfs = tmp_path / "rootfs"
    (rootfs / "opt" / folder).mkdir(parents=True)
    shutil.copy(program, rootfs / "opt" / folder / program.name)
    archive = tmp_path / f"{folder}.tar"
    write_image_archive(rootfs, reference, ImageConfig(), archive, base=tensorflow_image().archive)
    kept = keep_archive(archive)
    try:
        assert realnodes.import_archive(REAL_CLUSTER, kept) == list(REAL_SERVERS)
        yield
    finally:
        kept.unlink()


def test_an_imported_tfjob_runs_its_program_to_succeeded(real_cluster, tmp_path, capsys, monkeypatch):
    with team_image(tmp_path, TEAM_PROGRAM, "ctr", TEAM_IMAGE):
        monkeypatch.setattr(importer, "STACKS_DIR", real_cluster.stacks_dir)
        code = components_main(["import-tfjob", str(TEAM_TFJOB), "--stack", "real-tfjob", "--nodes", REAL_SERVERS[0]])
        said = capsys.readouterr()
        assert code == 0, said.err
        assert "chief, 1 PS, 2 workers, done: chief" in said.out
        stack = str(real_cluster.stacks_dir / "Pulumi.real-tfjob.yaml")
        with real_cluster.running(stack, tmp_path / "out") as namespace:
            wait_for_phase(stack, real_cluster, capsys, "Succeeded", FAIL_WITHIN_S)
            completed = time.monotonic()
            (chief,) = real_cluster.pods(stack, "chief")
            lines = [text for _, text in real_cluster.log(namespace, chief.metadata.name).lines]
            assert any(text.startswith("chief: 200 steps") for text in lines), lines[-10:]
            while real_cluster.pods(stack, "ps") + real_cluster.pods(stack, "worker"):
                assert time.monotonic() - completed < ENDS_WITHIN_S, "PS and workers still there after the chief"
                time.sleep(0.5)


def test_an_imported_tfjob_of_workers_only_runs_multiworkermirroredstrategy_to_succeeded(
    real_cluster, tmp_path, capsys, monkeypatch
):
    with team_image(tmp_path, WORKERS_ONLY_PROGRAM, "mwms", WORKERS_ONLY_IMAGE):
        monkeypatch.setattr(importer, "STACKS_DIR", real_cluster.stacks_dir)
        code = components_main(
            ["import-tfjob", str(WORKERS_ONLY_TFJOB), "--stack", "real-mwms", "--nodes", REAL_SERVERS[0]]
        )
        said = capsys.readouterr()
        assert code == 0, said.err
        assert "0 PS, 2 workers, done: workers" in said.out
        stack = str(real_cluster.stacks_dir / "Pulumi.real-mwms.yaml")
        namespace = load_experiment(stack).namespace
        real_cluster.apply(stack, tmp_path / "out", wait=False)  # it may be done before every pod was seen
        try:
            wait_for_phase(stack, real_cluster, capsys, "Succeeded", FAIL_WITHIN_S)
            assert real_cluster.pods(stack, "ps") + real_cluster.pods(stack, "chief") == []
            workers = real_cluster.pods(stack, "worker")
            assert len(workers) == 2
            for worker in workers:
                lines = [text for _, text in real_cluster.log(namespace, worker.metadata.name).lines]
                # Both replicas trained together: the all-reduce ran over the two pods.
                assert any("200 steps over 2 workers" in text for text in lines), lines[-10:]
        finally:
            real_cluster.delete(stack, tmp_path / "out")
