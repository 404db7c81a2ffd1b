"""A program's `source` folder, packed for a ConfigMap mounted read-only at /program.

Shipped the way the trainer is: one ConfigMap, which every task mounts, so a
folder of scripts reaches every pod without an image build. ConfigMap keys
cannot hold '/', so each file gets a flat key and the volume's `items` put it
back at its path. What a ConfigMap cannot carry is refused before anything is
created, with the way out: bake the program into the image.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

from components.plan.tf_config import MAX_CONFIG_MAP_BYTES

# A ConfigMap key: letters, digits, '-', '_', '.'.
CONFIG_MAP_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
# Written by Python next to what it imports; never part of a program.
SKIPPED_DIRECTORIES = {"__pycache__"}
# The object around the files (metadata, keys, the items list) stays well within this.
OBJECT_OVERHEAD_BYTES = 16 * 1024
BAKE_IT_IN = "bake the program into the image instead (make image, docs/programs.md) and leave source out"


class ProgramSourceError(ValueError):
    pass


@dataclass(frozen=True)
class SourceFile:
    path: str  # relative to the folder, '/'-separated
    content: bytes
    executable: bool

    @property
    def key(self) -> str:
        """Its ConfigMap key: the path with '/' as '__'."""
        return self.path.replace("/", "__")


@dataclass(frozen=True)
class ProgramSource:
    folder: str  # as the stack file names it
    files: tuple[SourceFile, ...]

    @property
    def sha256(self) -> str:
        """A changed file, name or mode changes it, and so rolls every task."""
        digest = hashlib.sha256()
        for item in self.files:
            digest.update(f"{item.path}\0{int(item.executable)}\0".encode())
            digest.update(item.content)
            digest.update(b"\0")
        return digest.hexdigest()

    @property
    def size(self) -> int:
        return sum(len(item.content) for item in self.files)

    def config_map_data(self) -> tuple[dict[str, str], dict[str, str]]:
        """`data` (UTF-8 text) and `binaryData` (base64) of the ConfigMap."""
        data: dict[str, str] = {}
        binary: dict[str, str] = {}
        for item in self.files:
            try:
                data[item.key] = item.content.decode("utf-8")
            except UnicodeDecodeError:
                binary[item.key] = base64.b64encode(item.content).decode()
        return data, binary

    def volume_items(self) -> list[dict]:
        """Each key back at its path; scripts keep their execute bit (read-only either way)."""
        return [
            {"key": item.key, "path": item.path, "mode": 0o555 if item.executable else 0o444}
            for item in self.files
        ]


def load_program_source(project_root: Path, folder: str) -> ProgramSource:
    """The files of `folder` (relative to the project), or ProgramSourceError saying why not."""
    field = "tfk8s:program.source"
    root = project_root.resolve()
    given = Path(folder)
    if given.is_absolute():
        raise ProgramSourceError(f"{field}: '{folder}' must be a folder of the project, relative to {root}")
    base = (root / given).resolve()
    if base != root and root not in base.parents:
        raise ProgramSourceError(f"{field}: '{folder}' is outside the project ({root}); {BAKE_IT_IN}")
    if not base.is_dir():
        raise ProgramSourceError(f"{field}: '{folder}' is not a folder of the project ({base} does not exist)")
    files: dict[str, SourceFile] = {}
    for directory, subdirectories, names in os.walk(base, followlinks=False):
        subdirectories[:] = sorted(name for name in subdirectories if name not in SKIPPED_DIRECTORIES)
        linked_folders = [name for name in subdirectories if Path(directory, name).is_symlink()]
        for name in sorted(names) + linked_folders:
            path = Path(directory, name)
            relative = path.relative_to(base).as_posix()
            target = path.resolve()
            if base not in target.parents:
                raise ProgramSourceError(
                    f"{field}: '{folder}/{relative}' is a link to {target}, outside the folder; copy it in or {BAKE_IT_IN}"
                )
            if not path.is_file() or target.is_dir():
                raise ProgramSourceError(
                    f"{field}: '{folder}/{relative}' is not a regular file (a folder link, a socket, ...); {BAKE_IT_IN}"
                )
            if not all(CONFIG_MAP_KEY.match(part) for part in relative.split("/")):
                raise ProgramSourceError(
                    f"{field}: '{folder}/{relative}': file and folder names may hold letters, digits, '-', '_' "
                    f"and '.' only (a ConfigMap's keys); rename it or {BAKE_IT_IN}"
                )
            item = SourceFile(relative, target.read_bytes(), os.access(target, os.X_OK))
            clash = files.get(item.key)
            if clash is not None:
                raise ProgramSourceError(
                    f"{field}: '{folder}/{clash.path}' and '{folder}/{relative}' would share the ConfigMap key "
                    f"'{item.key}' ('/' is written '__'); rename one"
                )
            files[item.key] = item
    if not files:
        raise ProgramSourceError(f"{field}: '{folder}' holds no files")
    source = ProgramSource(folder, tuple(sorted(files.values(), key=lambda item: item.path)))
    if source.size + OBJECT_OVERHEAD_BYTES > MAX_CONFIG_MAP_BYTES:
        raise ProgramSourceError(
            f"{field}: '{folder}' holds {source.size:,} bytes in {len(files)} files, but it is shipped in a "
            f"ConfigMap, which holds at most {MAX_CONFIG_MAP_BYTES - OBJECT_OVERHEAD_BYTES:,} bytes of files; {BAKE_IT_IN}"
        )
    return source
