"""The trainer's source, packed for a ConfigMap mounted into a stock image, and the log archive's
code (tfk8s:logs), packed for its own.

The trainer is a flat package: ConfigMap keys cannot hold '/', and a flat
package mounts as the whole ConfigMap, with no per-file `items` in every pod.
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ..spec.trainer_contract import TRAINER_PACKAGE, log_protocol

# What `python -m trainer` runs first; the bundle is what it imports from there.
POD_ENTRY_POINTS = ("__init__.py", "__main__.py")


@dataclass(frozen=True)
class TrainerBundle:
    files: dict[str, str]  # file name -> source text
    # The log archive's code (tfk8s:logs), standalone, in its own ConfigMap: the shipper that runs in
    # every task's pod, tfk8s's trainer's and a team's program's alike, the collector, and the
    # protocol both import (trainer/log_protocol.py ARCHIVE_FILES).
    log_archive_files: dict[str, str]

    @property
    def sha256(self) -> str:
        """Content hash; a pod template annotation, so a code change rolls pods."""
        return files_sha256(self.files)

    @property
    def shipper_sha256(self) -> str:
        """Hash of the code a task's log shipper runs: what rolls every task with tfk8s:logs."""
        return files_sha256(self._log_archive_part(log_protocol.SHIPPER_FILES))

    @property
    def collector_sha256(self) -> str:
        """Hash of the code the log collector runs: what rolls the collector alone."""
        return files_sha256(self._log_archive_part(log_protocol.COLLECTOR_FILES))

    def _log_archive_part(self, names: Iterable[str]) -> dict[str, str]:
        return {name: self.log_archive_files[name] for name in names}

    def config_map_data(self) -> dict[str, str]:
        return dict(sorted(self.files.items()))


def files_sha256(files: Mapping[str, str]) -> str:
    """One hash of named source files, whatever order they are given in."""
    digest = hashlib.sha256()
    for path in sorted(files):
        digest.update(path.encode())
        digest.update(b"\0")
        digest.update(files[path].encode())
        digest.update(b"\0")
    return digest.hexdigest()


def pod_modules(package: Path) -> list[str]:
    """The package's files a pod imports: the entry points and every module they reach,
    also through imports inside functions. The local launcher and the report are not
    among them, so editing those rolls no pod."""
    found: set[str] = set()
    pending = list(POD_ENTRY_POINTS)
    while pending:
        name = pending.pop()
        if name in found or not (package / name).is_file():
            continue
        found.add(name)
        pending.extend(_package_imports(ast.parse((package / name).read_text(encoding="utf-8"))))
    return sorted(found)


def _package_imports(tree: ast.AST) -> list[str]:
    """File names of the trainer modules a module imports (`from .x import`, `from . import x`, `trainer.x`)."""
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                names.append(node.module.split(".")[0])
            else:
                names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(f"{TRAINER_PACKAGE}."):
            names.append(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            names.extend(a.name.split(".")[1] for a in node.names if a.name.startswith(f"{TRAINER_PACKAGE}."))
    return [f"{name}.py" for name in names]


def load_trainer_bundle(project_root: Path) -> TrainerBundle:
    package = project_root / TRAINER_PACKAGE
    if not (package / "__init__.py").is_file():
        raise FileNotFoundError(f"trainer package not found at {package}")
    return TrainerBundle(
        files={name: (package / name).read_text(encoding="utf-8") for name in pod_modules(package)},
        log_archive_files={name: (package / name).read_text(encoding="utf-8") for name in log_protocol.ARCHIVE_FILES},
    )
