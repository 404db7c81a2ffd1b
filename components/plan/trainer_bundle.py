"""The trainer's source, packed for a ConfigMap mounted into a stock image.

The trainer is a flat package: ConfigMap keys cannot hold '/', and a flat
package mounts as the whole ConfigMap, with no per-file `items` in every pod.
"""

from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from ..spec.logs import SCRIPTS as LOG_SCRIPTS
from ..spec.trainer_contract import TRAINER_PACKAGE

# What `python -m trainer` runs first; the bundle is what it imports from there.
POD_ENTRY_POINTS = ("__init__.py", "__main__.py")


@dataclass(frozen=True)
class TrainerBundle:
    files: dict[str, str]  # file name -> source text
    # The log archive's shipper and collector (tfk8s:logs): standalone, in their own ConfigMap.
    log_scripts: dict[str, str] = field(default_factory=dict)

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
        log_scripts={name: (package / name).read_text(encoding="utf-8") for name in LOG_SCRIPTS},
    )
