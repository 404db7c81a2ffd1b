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
from typing import Any, Optional

import yaml

from tools.localcluster import paths, realnodes
from tools.nodeimage.archive import ImageConfig, write_image_archive
from tools.nodeimage.images import tensorflow_image

PROJECT_ROOT = Path(__file__).resolve().parents[1]
TEAM_PROGRAMS = PROJECT_ROOT / "tests" / "team_programs"
NAMESPACE = "bench-tfjob"
PROGRAM_DIR = "opt/ctr"
# What a worker prints for each step it runs, with --log-steps (both programs).
STEP_LINE = "worker: step"


@dataclass(frozen=True)
class Program:
    name: str
    tfjob_file: Path
    files: tuple[Path, ...]  # baked into the image at /opt/ctr
    stack: str  # its import-tfjob stack's name
    steps: int  # a timed run's steps

    def manifest(self, steps: int, restart_policy: Optional[str] = None) -> dict[str, Any]:
        """The team's TFJob with `steps`, each worker logging its steps, in the benchmark's namespace;
        every replica's restartPolicy replaced by `restart_policy` where one is given. The steps and
        --log-steps replace the containers' args: both programs take the rest from their command."""
        manifest = yaml.safe_load(self.tfjob_file.read_text())
        manifest["metadata"]["namespace"] = NAMESPACE
        for replica in self.replicas(manifest).values():
            if restart_policy:
                replica["restartPolicy"] = restart_policy
            for container in replica["template"]["spec"]["containers"]:
                container["args"] = ["--steps", str(steps), "--log-steps"]
        return manifest

    @staticmethod
    def replicas(manifest: dict[str, Any]) -> dict[str, Any]:
        replicas: dict[str, Any] = manifest["spec"]["tfReplicaSpecs"]
        return replicas

    @property
    def tfjob_name(self) -> str:
        return str(self.manifest(self.steps)["metadata"]["name"])

    @property
    def tasks(self) -> int:
        """Every PS, worker and chief the TFJob runs."""
        return sum(int(replica["replicas"]) for replica in self.replicas(self.manifest(self.steps)).values())

    @property
    def image(self) -> str:
        """The team's image, as every replica of its TFJob names it."""
        [image] = {
            container["image"]
            for replica in self.replicas(self.manifest(self.steps)).values()
            for container in replica["template"]["spec"]["containers"]
        }
        return str(image)


PROGRAMS = {
    program.name: program
    for program in (
        Program(
            "tf2-ps",
            TEAM_PROGRAMS / "ctr-tfjob" / "tfjob.yaml",
            (TEAM_PROGRAMS / "tf2-ps" / "train.py",),
            "bench-vs-tfjob",
            300,
        ),
        # 600 global steps: worker 1 joins after the chief made the variables (TF1's session
        # manager polls every 30 s), and both workers then train for a while.
        Program(
            "tf1-between-graph",
            TEAM_PROGRAMS / "tf1-between-graph" / "tfjob.yaml",
            (TEAM_PROGRAMS / "tf1-between-graph" / "train.py", TEAM_PROGRAMS / "tf1-between-graph" / "run.sh"),
            "bench-vs-tfjob-tf1",
            600,
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
