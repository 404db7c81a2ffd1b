"""A program's `source` folder, packed for a ConfigMap mounted read-only at /program.

Shipped the way the trainer is: one ConfigMap, which every task mounts, so a
folder of scripts reaches every pod without an image build. ConfigMap keys
cannot hold '/', so each file gets a flat key and the volume's `items` put it
back at its path. What a ConfigMap cannot carry is refused before anything is
created, with the way out: bake the program into the image.

Anyone who can read the namespace can read that ConfigMap, so only the
program's own files go in: dotfiles and what the ignore files ignore are left
out (source_ignore.py), and a file that looks like a credential is refused,
with the way to pass it as a secret (source_credentials.py).
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..spec.kubernetes_limits import MAX_CONFIG_MAP_BYTES, config_map_key_problem
from ..spec.program import PROGRAM_MOUNT
from .source_credentials import credential_by_content, credential_by_name
from .source_ignore import TFK8SIGNORE, IgnoreRules

FIELD = "tfk8s:program.source"

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
        return self.key_of(self.path)

    @staticmethod
    def key_of(path: str) -> str:
        return path.replace("/", "__")


@dataclass(frozen=True)
class ProgramSource:
    folder: str  # as the stack file names it
    files: tuple[SourceFile, ...]
    # Paths not shipped (a folder once, '/'-terminated; its files are never
    # read): dotfiles and what is ignored, for `plan` to say so.
    left_out: tuple[str, ...] = ()

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
            {"key": item.key, "path": item.path, "mode": 0o555 if item.executable else 0o444} for item in self.files
        ]


def load_program_source(project_root: Path, folder: str) -> ProgramSource:
    """The files of `folder` (relative to the project) to ship, or ProgramSourceError saying why not."""
    root = project_root.resolve()
    given = Path(folder)
    if given.is_absolute():
        raise ProgramSourceError(f"{FIELD}: '{folder}' must be a folder of the project, relative to {root}")
    base = (root / given).resolve()
    if base != root and root not in base.parents:
        raise ProgramSourceError(f"{FIELD}: '{folder}' is outside the project ({root}); {BAKE_IT_IN}")
    if base.is_file():
        raise ProgramSourceError(_a_file(folder, given))
    if base.exists() and not base.is_dir():
        raise ProgramSourceError(
            f"{FIELD}: '{folder}' is not a folder of the project ({base} is neither a folder nor a file)"
        )
    if not base.is_dir():
        raise ProgramSourceError(f"{FIELD}: '{folder}' is not a folder of the project ({base} does not exist)")
    try:
        found = _walk(root, base, folder)
        return _load(folder, found)
    except OSError as error:
        where = Path(error.filename or base)
        named = f"{folder}/{where.relative_to(base).as_posix()}" if base in where.parents else str(where)
        raise ProgramSourceError(
            f"{FIELD}: '{named}' cannot be read ({error.strerror}); make it readable, "
            f"or leave it out in {folder}/{TFK8SIGNORE}"
        ) from None


def _a_file(folder: str, given: Path) -> str:
    """A file given as source, as one gives a script to run: its folder is what source takes."""
    run = f"[python, {given.name}]" if given.suffix == ".py" else f"[./{given.name}]"
    return (
        f"{FIELD}: '{folder}' is a file, and source takes a folder: the folder is shipped whole and mounted at "
        f"{PROGRAM_MOUNT}, the working directory; give the folder that holds it (source: '{given.parent.as_posix()}') "
        f"and run the file by command (command: {run})"
    )


@dataclass
class _Found:
    files: dict[str, tuple[str, Path]]  # ConfigMap key: (path relative to the folder, the file it is or links to)
    left_out: list[str]
    credentials: dict[str, str]  # path: what it looks like


def _raise(error: OSError) -> None:
    # os.walk skips a folder it cannot list unless told otherwise: the program
    # would then start without its files, far from here.
    raise error


def _walk(root: Path, base: Path, folder: str) -> _Found:
    """Every file to ship, by its key; folders left out are not entered, so a huge ignored one costs nothing."""
    rules = IgnoreRules(root, base)
    found = _Found({}, [], {})
    for directory, subdirectories, names in os.walk(base, onerror=_raise, followlinks=False):
        here = Path(directory).relative_to(base).as_posix()
        prefix = "" if here == "." else f"{here}/"
        rules.enter(Path(directory), prefix.rstrip("/"))
        kept = []
        for name in sorted(subdirectories):
            if name in SKIPPED_DIRECTORIES:
                continue
            if rules.leaves_out(prefix + name, is_folder=True):
                found.left_out.append(f"{prefix}{name}/")
            else:
                kept.append(name)
        subdirectories[:] = kept
        linked_folders = [name for name in kept if Path(directory, name).is_symlink()]
        for name in sorted(names) + linked_folders:
            relative = prefix + name
            if name not in linked_folders and rules.leaves_out(relative, is_folder=False):
                found.left_out.append(relative)
                continue
            _add(found, base, folder, Path(directory, name), relative)
    _leave_out_links_to_left_out_files(found, base, rules)
    return found


def _leave_out_links_to_left_out_files(found: _Found, base: Path, rules: IgnoreRules) -> None:
    """A link to `.env` or to an ignored file would ship what was left out under another name."""
    for key, (relative, target) in list(found.files.items()):
        if not (base / relative).is_symlink():
            continue
        parts = target.relative_to(base).parts
        folders_and_file = ["/".join(parts[:depth]) for depth in range(1, len(parts) + 1)]
        if any(rules.leaves_out(path, is_folder=path != folders_and_file[-1]) for path in folders_and_file):
            del found.files[key]
            found.credentials.pop(relative, None)
            found.left_out.append(relative)


def _add(found: _Found, base: Path, folder: str, path: Path, relative: str) -> None:
    target = path.resolve()
    if base not in target.parents:
        raise ProgramSourceError(
            f"{FIELD}: '{folder}/{relative}' is a link to {target}, outside the folder; copy it in or {BAKE_IT_IN}"
        )
    if not path.is_file() or target.is_dir():
        raise ProgramSourceError(
            f"{FIELD}: '{folder}/{relative}' is not a regular file (a folder link, a socket, ...); {BAKE_IT_IN}"
        )
    if not all(CONFIG_MAP_KEY.match(part) for part in relative.split("/")):
        raise ProgramSourceError(
            f"{FIELD}: '{folder}/{relative}': file and folder names may hold letters, digits, '-', '_' "
            f"and '.' only (a ConfigMap's keys); rename it or {BAKE_IT_IN}"
        )
    key = SourceFile.key_of(relative)
    if (problem := config_map_key_problem(key)) is not None:  # a path too long for its key, say
        raise ProgramSourceError(f"{FIELD}: '{folder}/{relative}': its ConfigMap key '{key}' {problem}; {BAKE_IT_IN}")
    clash = found.files.get(key)
    if clash is not None:
        raise ProgramSourceError(
            f"{FIELD}: '{folder}/{clash[0]}' and '{folder}/{relative}' would share the ConfigMap key "
            f"'{key}' ('/' is written '__'); rename one"
        )
    found.files[key] = (relative, target)
    kind = credential_by_name(path.name)
    if kind is not None:
        found.credentials[relative] = kind


def _load(folder: str, found: _Found) -> ProgramSource:
    """The files read, once nothing found rules them out; sizes come first, so a folder too large is never read."""
    if not found.files:
        raise ProgramSourceError(f"{FIELD}: '{folder}' holds no files{_left_out_note(found.left_out)}")
    size = sum(target.stat().st_size for _, target in found.files.values())
    files = []
    if size + OBJECT_OVERHEAD_BYTES <= MAX_CONFIG_MAP_BYTES:
        for relative, target in found.files.values():
            content = target.read_bytes()
            kind = found.credentials.get(relative) or credential_by_content(content)
            if kind is not None:
                found.credentials[relative] = kind
            files.append(SourceFile(relative, content, os.access(target, os.X_OK)))
    if found.credentials:
        raise ProgramSourceError(_credentials_refusal(folder, found.credentials))
    if size + OBJECT_OVERHEAD_BYTES > MAX_CONFIG_MAP_BYTES:
        raise ProgramSourceError(
            f"{FIELD}: '{folder}' holds {size:,} bytes in {len(found.files)} files, but it is shipped in a "
            f"ConfigMap, which holds at most {MAX_CONFIG_MAP_BYTES - OBJECT_OVERHEAD_BYTES:,} bytes of files; "
            f"{BAKE_IT_IN}"
        )
    return ProgramSource(folder, tuple(sorted(files, key=lambda item: item.path)), tuple(sorted(found.left_out)))


def _left_out_note(left_out: list[str]) -> str:
    if not left_out:
        return ""
    return f" to ship ({len(left_out)} left out: dotfiles, and what .gitignore or {TFK8SIGNORE} ignores)"


def _credentials_refusal(folder: str, credentials: dict[str, str]) -> str:
    named = ", ".join(f"'{folder}/{path}' ({kind})" for path, kind in sorted(credentials.items()))
    looks = "looks like a credential" if len(credentials) == 1 else "look like credentials"
    return (
        f"{FIELD}: {named} {looks}, and source is shipped in a ConfigMap that anyone who can read the namespace "
        f"can read; pass a credential as a secret instead: pulumi config set --secret --path "
        f"'tfk8s:program.env.NAME' < FILE (tfk8s keeps it in a Secret of its own), or "
        f"env: {{NAME: {{secret: <Secret>, key: <key>}}}} for a Secret you have; then delete it from the folder "
        f"or list it in {folder}/{TFK8SIGNORE} (docs/programs.md)"
    )
