"""The trainer's source, packed for a ConfigMap mounted into a stock image.

ConfigMap keys cannot hold '/', so each file gets a flat key and an `items`
entry that puts it back at its path under the mount.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

TRAINER_PACKAGE = "trainer"
# Only what the pods run; tests and caches stay out of the cluster.
SHIPPED_SUFFIXES = (".py",)
SKIPPED_PARTS = ("__pycache__", "tests")


@dataclass(frozen=True)
class TrainerBundle:
    files: dict[str, str]  # path relative to the package -> source text

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
        return {config_map_key(path): text for path, text in sorted(self.files.items())}

    def volume_items(self) -> list[dict[str, str]]:
        return [{"key": config_map_key(path), "path": path} for path in sorted(self.files)]


def config_map_key(path: str) -> str:
    return path.replace("/", ".")


def load_trainer_bundle(project_root: Path) -> TrainerBundle:
    package = project_root / TRAINER_PACKAGE
    if not (package / "__init__.py").is_file():
        raise FileNotFoundError(f"trainer package not found at {package}")
    files = {}
    for path in sorted(package.rglob("*")):
        relative = path.relative_to(package)
        if not path.is_file() or path.suffix not in SHIPPED_SUFFIXES:
            continue
        if any(part in SKIPPED_PARTS for part in relative.parts):
            continue
        files[relative.as_posix()] = path.read_text(encoding="utf-8")
    return TrainerBundle(files=files)
