"""The two team programs bench-vs-tfjob runs, each as its TFJob manifest and its image.

- tf2-ps: a TF2 ParameterServerStrategy coordinator on the chief, 1 PS, 2 workers
  (tests/team_programs/ctr-tfjob/tfjob.yaml, the program of tests/team_programs/tf2-ps).
- tf1-between-graph: a TF1 between-graph program, 1 PS and 2 workers, no chief: worker 0 is the
  chief (tests/team_programs/tf1-between-graph/tfjob.yaml, its train.py and run.sh).

Each program is baked into the team's image at /opt/ctr, on top of the nodes' TensorFlow image,
and imported into the real nodes, as a team's registry would serve it.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from tools.localcluster import paths, realnodes
from tools.localcluster.tfjob_sides import TeamTFJob
from tools.nodeimage.archive import ImageConfig, write_image_archive
from tools.nodeimage.images import tensorflow_image

PROJECT_ROOT = Path(__file__).resolve().parents[1]
TEAM_PROGRAMS = PROJECT_ROOT / "tests" / "team_programs"
NAMESPACE = "bench-tfjob"
PROGRAM_DIR = "opt/ctr"


@dataclass(frozen=True)
class Program(TeamTFJob):
    """A team's TFJob (run in the benchmark's namespace) with the files of its image and the steps
    of a timed run."""

    files: tuple[Path, ...]  # baked into the image at /opt/ctr
    steps: int  # a timed run's steps


PROGRAMS = {
    program.name: program
    for program in (
        Program(
            name="tf2-ps",
            tfjob_file=TEAM_PROGRAMS / "ctr-tfjob" / "tfjob.yaml",
            stack="bench-vs-tfjob",
            namespace=NAMESPACE,
            files=(TEAM_PROGRAMS / "tf2-ps" / "train.py",),
            steps=300,
        ),
        # 600 global steps: worker 1 joins after the chief made the variables (TF1's session
        # manager polls every 30 s), and both workers then train for a while.
        Program(
            name="tf1-between-graph",
            tfjob_file=TEAM_PROGRAMS / "tf1-between-graph" / "tfjob.yaml",
            stack="bench-vs-tfjob-tf1",
            namespace=NAMESPACE,
            files=(TEAM_PROGRAMS / "tf1-between-graph" / "train.py", TEAM_PROGRAMS / "tf1-between-graph" / "run.sh"),
            steps=600,
        ),
    )
}


def load_team_image(program: Program, cluster: paths.ClusterDir, work: Path) -> str:
    """The team's image (the nodes' TensorFlow with the program at /opt/ctr) on every real node."""
    rootfs = work / program.name / "rootfs"
    (rootfs / PROGRAM_DIR).mkdir(parents=True)
    for path in program.files:
        shutil.copy(path, rootfs / PROGRAM_DIR / path.name)
    archive = work / program.name / "image.tar"
    write_image_archive(rootfs, program.image, ImageConfig(), archive, base=tensorflow_image().archive)
    realnodes.import_archive(cluster, archive)
    return program.image
