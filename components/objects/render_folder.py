"""A rendering put in place whole, in a folder that may hold files of the user's.

`kubectl apply -f FOLDER` applies whatever the folder holds, so the folder must
never hold half of a rendering, or a stale file of a bigger earlier one. And a
folder given by mistake (the stacks, the project itself) must lose nothing.

- A folder that is missing, empty or holds only an earlier rendering (the
  files its record lists, and the record) is replaced at once: the new
  rendering is written into a new sibling folder, the old one is renamed
  aside, the new one renamed in, and only then the old one removed.
- A folder holding anything else is refused, naming one such file, unless
  forced: then each file is written beside its target and renamed over it
  once all are written, the record listing them is updated, and the files
  only the earlier rendering had are removed. Nothing else is touched, and a
  file render did not write is never overwritten.

Any error before the new rendering is in place leaves the folder as it was.
"""

from __future__ import annotations

import errno
import os
import secrets
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from components.objects.render_record import (
    RECORD_NAME,
    RenderRecord,
    UnreadableRecord,
    is_plain_file_name,
    read_record,
    record_text,
)
from components.spec.atomic_files import write_text_atomic


class RenderError(ValueError):
    """Nothing was rendered. A ValueError, as a bad stack's error is, for the tools that report both alike."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        super().__init__(self.describe(str(folder)))

    def describe(self, folder: str) -> str:
        """The one-line message, with the folder written as the caller shows paths."""
        raise NotImplementedError


class NotAFolder(RenderError):
    """The folder, or a folder above it, is a file."""

    def __init__(self, folder: Path, file: Path) -> None:
        self.file = file
        super().__init__(folder)

    def describe(self, folder: str) -> str:
        if self.file == self.folder:
            return f"{folder} is a file, not a folder: render writes one YAML file per object into a folder"
        return f"cannot write {folder}: {self.file} is a file, not a folder"


class ForeignFile(RenderError):
    """The folder holds a file render did not write (and was not told to write beside it)."""

    def __init__(self, folder: Path, name: str) -> None:
        self.name = name
        super().__init__(folder)

    def describe(self, folder: str) -> str:
        return (f"{folder} holds {self.name}, which render did not write: render replaces a folder only when it "
                "is empty or holds nothing but an earlier rendering")


class WouldOverwrite(ForeignFile):
    """A file render did not write has the name of one the rendering has."""

    def describe(self, folder: str) -> str:
        return (f"{os.path.join(folder, self.name)} was not written by render, and the rendering has a file of "
                "that name: render never overwrites it; move it, or render into another folder")


class BadRecord(RenderError):
    def __init__(self, folder: Path, why: str) -> None:
        self.why = why
        super().__init__(folder)

    def describe(self, folder: str) -> str:
        return (f"{os.path.join(folder, RECORD_NAME)} is not the record render writes ({self.why}); render keeps "
                "it and trusts none of it: remove it, or render into another folder")


class Unwritable(RenderError):
    def __init__(self, folder: Path, error: OSError) -> None:
        self.reason = error.strerror or str(error)
        super().__init__(folder)

    def describe(self, folder: str) -> str:
        return f"cannot write {folder}: {self.reason}; it is as it was"


class StaleNotRemoved(Unwritable):
    def __init__(self, folder: Path, name: str, error: OSError) -> None:
        self.name = name
        super().__init__(folder, error)

    def describe(self, folder: str) -> str:
        return (f"wrote the rendering in {folder}, but cannot remove {self.name} of the earlier one "
                f"({self.reason}): remove it before applying the folder")


@dataclass(frozen=True)
class PlacedRendering:
    written: tuple[str, ...]
    kept: tuple[str, ...]  # files render did not write, left where they were (forced)
    removed: tuple[str, ...]  # files only the earlier rendering had
    leftover: Path | None = None  # the earlier rendering, set aside, where it could not be removed


@dataclass(frozen=True)
class _Contents:
    ours: tuple[str, ...]  # files the record lists, as render left them
    foreign: tuple[str, ...]  # everything else but the record


def place_rendering(folder: Path, stack: str, files: Iterable[tuple[str, str]],
                    force: bool = False) -> PlacedRendering:
    """Put `files` (name, text), in apply order, in `folder` as the rendering of `stack`."""
    try:
        _check_is_a_folder(folder)
        contents = _contents(folder)
        if contents.foreign and not force:
            raise ForeignFile(folder, contents.foreign[0])
        if folder.is_dir():
            _check_writable(folder)
        leftover = None
        if not contents.foreign and _replaceable(folder):
            written, leftover = _replace_folder(folder, stack, files, contents)
            removed: tuple[str, ...] = tuple(name for name in contents.ours if name not in written)
        else:
            written, removed = _write_beside(folder, stack, files, contents)
    except OSError as error:
        raise Unwritable(folder, error) from None
    return PlacedRendering(written, contents.foreign, removed, leftover)


def write_new_file(path: Path, text: str) -> None:
    """Create `path` (never over an existing file) holding `text`.

    Not synced to disk one by one: a rendering can be thousands of files, it is swapped in only
    once all of them are written, and what a crash could lose is written again by `render`."""
    with open(path, "x", encoding="utf-8") as handle:
        try:
            handle.write(text)
        except BaseException:
            # Created by this call: a half-written file is removed, not left to be applied.
            os.unlink(path)
            raise


def _check_is_a_folder(folder: Path) -> None:
    """The folder, or the nearest of the folders above it that exists, is a folder."""
    for path in (folder, *folder.parents):
        if path.exists() or path.is_symlink():
            if not path.is_dir():
                raise NotAFolder(folder, path)
            return


def _contents(folder: Path) -> _Contents:
    if not folder.is_dir():
        return _Contents((), ())
    try:
        record = read_record(folder)
    except UnreadableRecord as error:
        raise BadRecord(folder, error.why) from None
    recorded = set(record.files) if record else set()
    with os.scandir(folder) as listing:
        # Visible files first: the one a refusal names is one the user sees with `ls`.
        entries = sorted(listing, key=lambda entry: (entry.name.startswith("."), entry.name))
    ours, foreign = [], []
    for entry in entries:
        if entry.name == RECORD_NAME:
            continue
        # A link or folder under a recorded name is the user's: render only ever writes plain files.
        if entry.name in recorded and entry.is_file(follow_symlinks=False):
            ours.append(entry.name)
        else:
            foreign.append(entry.name)
    return _Contents(tuple(ours), tuple(foreign))


def _check_writable(folder: Path) -> None:
    """A folder made read-only is refused: the file system would let its parent's owner rename it away."""
    effective = os.access in os.supports_effective_ids
    if not os.access(folder, os.W_OK | os.X_OK, effective_ids=effective):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(folder))


def _replaceable(folder: Path) -> bool:
    """Whether the folder itself can be renamed aside: not a link (the link is the user's), not a
    mount point, and not the current folder or one above it (a shell there would be left in a
    removed folder)."""
    if folder.is_symlink() or (folder.is_dir() and os.path.ismount(folder)):
        return False
    target, here = folder.resolve(), Path.cwd().resolve()
    return target != here and target not in here.parents


def _replace_folder(folder: Path, stack: str, files: Iterable[tuple[str, str]],
                    old: _Contents) -> tuple[tuple[str, ...], Path | None]:
    """The new rendering written into a sibling folder, swapped in; the earlier one set aside, then
    removed (its path when it could not be)."""
    target = folder.resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    existed = target.is_dir()
    mode = (target.stat().st_mode & 0o7777) if existed else (0o777 & ~_umask())
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.rendering-"))
    try:
        written = _write_all(staging, files)
        write_new_file(staging / RECORD_NAME, record_text(RenderRecord(stack, written)))
        os.chmod(staging, mode)
        if not existed:
            os.rename(staging, target)
            return written, None
        aside = staging.with_name(staging.name.replace(".rendering-", ".previous-", 1))
        os.rename(target, aside)
        try:
            os.rename(staging, target)
        except BaseException:
            os.rename(aside, target)
            raise
    except BaseException:
        # The staging folder holds only what this call wrote; once renamed in, it is gone from here.
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return written, _remove_rendering(aside, old)


def _write_all(folder: Path, files: Iterable[tuple[str, str]]) -> tuple[str, ...]:
    written = []
    for name, text in files:
        _check_name(name)
        write_new_file(folder / name, text)
        written.append(name)
    return tuple(written)


def _remove_rendering(aside: Path, old: _Contents) -> Path | None:
    """The earlier rendering, renamed aside: exactly the files it recorded, then the folder; the
    folder where that failed (the new rendering is in place all the same)."""
    try:
        for name in (*old.ours, RECORD_NAME):
            (aside / name).unlink(missing_ok=True)
        # Fails where a file was put there since the folder was read: the user's, it stays.
        aside.rmdir()
    except OSError:
        return aside
    return None


def _write_beside(folder: Path, stack: str, files: Iterable[tuple[str, str]],
                  old: _Contents) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Each file written beside its target, then all renamed over theirs; the rest of the folder untouched."""
    folder.mkdir(parents=True, exist_ok=True)
    foreign = set(old.foreign)
    staged: list[tuple[str, Path]] = []
    try:
        for name, text in files:
            _check_name(name)
            if name in foreign:
                raise WouldOverwrite(folder, name)
            temporary = folder / f".{name}.{secrets.token_hex(4)}.tmp"
            write_new_file(temporary, text)
            staged.append((name, temporary))
        written = tuple(name for name, _ in staged)
        # Recorded before any is in place, so that a crash part-way leaves no file of render's unrecorded.
        everything = written + tuple(name for name in old.ours if name not in written)
        write_text_atomic(folder / RECORD_NAME, record_text(RenderRecord(stack, everything)))
        for name, temporary in staged:
            os.replace(temporary, folder / name)
    except BaseException:
        for _, temporary in staged:
            temporary.unlink(missing_ok=True)
        raise
    removed = tuple(name for name in old.ours if name not in written)
    for name in removed:
        try:
            (folder / name).unlink(missing_ok=True)
        except OSError as error:
            # Still recorded: the next render removes it.
            raise StaleNotRemoved(folder, name, error) from None
    write_text_atomic(folder / RECORD_NAME, record_text(RenderRecord(stack, written)))
    return written, removed


def _check_name(name: str) -> None:
    if not is_plain_file_name(name) or name == RECORD_NAME:
        raise ValueError(f"render cannot write a file named {name!r}: object files are named in their folder")


def _umask() -> int:
    # The process umask can only be read by setting it; set it straight back.
    current = os.umask(0)
    os.umask(current)
    return current
