"""The trainer's source, packed for a ConfigMap mounted into a stock image.

The trainer is a flat package: ConfigMap keys cannot hold '/', and a flat
package mounts as the whole ConfigMap, with no per-file `items` in every pod.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

TRAINER_PACKAGE = "trainer"
# Only what the pods run: the package's own modules.
SHIPPED_SUFFIXES = (".py",)


@dataclass(frozen=True)
class TrainerBundle:
    files: dict[str, str]  # file name -> source text

    @property
    def sha256(self) -> str:
        """Content hash; a pod template annotation, so a code change rolls pods."""
        digest = hashlib.sha256()
        for path in sorted(self.files):
            digest.update(path.encode())
            digest.update(b"\0")
            digest.update(self.files[path].encode())
            digest.update(b"\0")
        return digest.hexdigest()

    def config_map_data(self) -> dict[str, str]:
        return dict(sorted(self.files.items()))


def load_trainer_bundle(project_root: Path) -> TrainerBundle:
    package = project_root / TRAINER_PACKAGE
    if not (package / "__init__.py").is_file():
        raise FileNotFoundError(f"trainer package not found at {package}")
    files = {
        path.name: path.read_text(encoding="utf-8")
        for path in sorted(package.iterdir())
        if path.is_file() and path.suffix in SHIPPED_SUFFIXES
    }
    return TrainerBundle(files=files)
