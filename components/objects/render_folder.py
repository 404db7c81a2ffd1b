"""A rendering put in place whole, in a folder that may hold files of the user's.

`kubectl apply -f FOLDER` applies whatever the folder holds, so the folder must
never hold half of a rendering, or a stale file of a bigger earlier one. And a
folder given by mistake (the stacks, the project itself) must lose nothing.

- The files of an earlier rendering are those its record lists that still
  hold what render wrote there (their sha256): a file the user edited since
  is the user's, like any other file render did not write.
- A folder that is missing, empty or holds only an earlier rendering (and
  its record) is replaced at once: the new rendering is written into a new
  sibling folder, the old one is renamed aside, the new one renamed in, and
  only then the old one removed. In a folder whose parent may not be written
  (a team's folder in a shared one), the files are written as below.
- A folder holding anything else is refused, naming one such file, unless
  forced: then each file is written beside its target and renamed over it
  once all are written, the record listing them is updated, and the files
  only the earlier rendering had are removed. Nothing else is touched, and a
  file that is not render's is never overwritten.

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

from ..spec.atomic_files import current_umask, write_text_atomic
from .render_record import (
    RECORD_NAME,
    RecordNotAFile,
    RenderRecord,
    UnreadableRecord,
    is_plain_file_name,
    read_record,
    record_text,
    sha256_of,
    sha256_of_plain_file,
)


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


@dataclass(frozen=True)
class Foreignness:
    """Why a file in the folder is not render's to replace, said two ways."""

    holds: str  # "DIR holds NAME, <holds>"
    was: str  # "DIR/NAME <was>, and the rendering has a file of that name"


NOT_WRITTEN = Foreignness("which render did not write", "was not written by render")
CHANGED = Foreignness("which render wrote but which was changed since", "was changed since render wrote it")
UNCHECKED = Foreignness(
    "which an older render recorded without its sha256, so render cannot tell whether it was changed since",
    "was recorded by an older render without its sha256, so render cannot tell whether it was changed since",
)
NOT_A_RECORD = Foreignness("which is not a plain file, as render's record is", "is not a plain file")


class ForeignFile(RenderError):
    """The folder holds a file that is not render's (and was not told to write beside it)."""

    def __init__(self, folder: Path, name: str, why: Foreignness = NOT_WRITTEN) -> None:
        self.name, self.why = name, why
        super().__init__(folder)

    def describe(self, folder: str) -> str:
        return (
            f"{folder} holds {self.name}, {self.why.holds}: render replaces a folder only when it is empty "
            "or holds nothing but an earlier rendering, as render wrote it"
        )


class WouldOverwrite(ForeignFile):
    """A file that is not render's has the name of one the rendering has."""

    def describe(self, folder: str) -> str:
        return (
            f"{os.path.join(folder, self.name)} {self.why.was}, and the rendering has a file of that name: "
            "render never overwrites it; move it, or render into another folder"
        )


class BadRecord(RenderError):
    def __init__(self, folder: Path, why: str) -> None:
        self.why = why
        super().__init__(folder)

    def describe(self, folder: str) -> str:
        return (
            f"{os.path.join(folder, RECORD_NAME)} is not a record render can trust ({self.why}); render "
            "keeps it and trusts none of it: remove it, or render into another folder"
        )


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
        return (
            f"wrote the rendering in {folder}, but cannot remove {self.name} of the earlier one "
            f"({self.reason}): remove it before applying the folder"
        )


@dataclass(frozen=True)
class PlacedRendering:
    written: tuple[str, ...]
    kept: tuple[str, ...]  # files that are not render's, left where they were (forced)
    leftover: Path | None = None  # the earlier rendering, set aside, where it could not be removed


@dataclass(frozen=True)
class _Contents:
    ours: dict[str, str]  # files the record lists, as render left them: name -> sha256
    foreign: dict[str, Foreignness]  # everything else, the one a refusal names first


def place_rendering(folder: Path, stack: str, files: Iterable[tuple[str, str]], force: bool = False) -> PlacedRendering:
    """Put `files` (name, text), in apply order, in `folder` as the rendering of `stack`."""
    try:
        _check_is_a_folder(folder)
        contents = _contents(folder)
        if contents.foreign and not force:
            name, why = next(iter(contents.foreign.items()))
            raise ForeignFile(folder, name, why)
        if folder.is_dir():
            _check_writable(folder)
        leftover = None
        if not contents.foreign and _replaceable(folder):
            written, leftover = _replace_folder(folder, stack, files, contents)
        else:
            written = _write_beside(folder, stack, files, contents)
    except OSError as error:
        raise Unwritable(folder, error) from None
    return PlacedRendering(written, tuple(contents.foreign), leftover)


def write_new_file(path: Path, content: bytes) -> None:
    """Create `path` (never over an existing file) holding `content`.

    Not synced to disk one by one: a rendering can be thousands of files, it is swapped in only
    once all of them are written, and what a crash could lose is written again by `render`."""
    with open(path, "xb") as handle:
        try:
            handle.write(content)
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
    """Which files are render's: those its record lists that still hold what it wrote."""
    if not folder.is_dir():
        return _Contents({}, {})
    foreign: dict[str, Foreignness] = {}
    try:
        record = read_record(folder)
    except RecordNotAFile:
        # A link or pipe under the record's name is the user's: named first, as what stops render.
        record, foreign[RECORD_NAME] = None, NOT_A_RECORD
    except UnreadableRecord as error:
        raise BadRecord(folder, error.why) from None
    recorded = record.files if record else {}
    with os.scandir(folder) as listing:
        # Visible files first: the one a refusal names is one the user sees with `ls`.
        entries = sorted(listing, key=lambda entry: (entry.name.startswith("."), entry.name))
    ours = {}
    for entry in entries:
        if entry.name == RECORD_NAME:
            continue
        if entry.name not in recorded:
            foreign[entry.name] = NOT_WRITTEN
        elif not recorded[entry.name]:
            foreign[entry.name] = UNCHECKED
        else:
            digest = _sha256_of_file(Path(entry.path))
            if digest in recorded[entry.name]:
                ours[entry.name] = digest
            else:
                foreign[entry.name] = CHANGED
    return _Contents(ours, foreign)


def _sha256_of_file(path: Path) -> str | None:
    """The file's sha256; None for a link, folder or pipe (render only ever writes plain files) or
    a file that cannot be read, which render cannot tell from one the user changed."""
    try:
        return sha256_of_plain_file(path)
    except OSError:
        return None


def _writable(folder: Path) -> bool:
    effective = os.access in os.supports_effective_ids
    return os.access(folder, os.W_OK | os.X_OK, effective_ids=effective)


def _check_writable(folder: Path) -> None:
    """A folder made read-only is refused: the file system would let its parent's owner rename it away."""
    if not _writable(folder):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(folder))


def _replaceable(folder: Path) -> bool:
    """Whether the folder itself can be renamed aside: not a link (the link is the user's), not a
    mount point, not the current folder or one above it (a shell there would be left in a
    removed folder), and in a folder the swap may write in (a team's writable folder in a shared
    read-only one is written in place)."""
    if folder.is_symlink() or (folder.is_dir() and os.path.ismount(folder)):
        return False
    target, here = folder.resolve(), Path.cwd().resolve()
    if target == here or target in here.parents:
        return False
    existing_parent = next(parent for parent in target.parents if parent.exists())
    return _writable(existing_parent)


def _replace_folder(
    folder: Path, stack: str, files: Iterable[tuple[str, str]], old: _Contents
) -> tuple[tuple[str, ...], Path | None]:
    """The new rendering written into a sibling folder, swapped in; the earlier one set aside, then
    removed (its path when it could not be)."""
    target = folder.resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    existed = target.is_dir()
    mode = (target.stat().st_mode & 0o7777) if existed else (0o777 & ~current_umask())
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.rendering-"))
    try:
        written = _write_all(staging, files)
        write_new_file(staging / RECORD_NAME, _record_of(stack, written).encode("utf-8"))
        os.chmod(staging, mode)
        if not existed:
            os.rename(staging, target)
            return _names(written), None
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
    return _names(written), _remove_rendering(aside, old)


def _write_all(folder: Path, files: Iterable[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    """Each file written; its name and sha256."""
    written = []
    for name, text in files:
        _check_name(name)
        content = text.encode("utf-8")
        write_new_file(folder / name, content)
        written.append((name, sha256_of(content)))
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


def _write_beside(folder: Path, stack: str, files: Iterable[tuple[str, str]], old: _Contents) -> tuple[str, ...]:
    """Each file written beside its target, then all renamed over theirs; the rest of the folder untouched."""
    folder.mkdir(parents=True, exist_ok=True)
    if RECORD_NAME in old.foreign:
        raise WouldOverwrite(folder, RECORD_NAME, old.foreign[RECORD_NAME])
    staged: list[tuple[str, str, Path]] = []
    try:
        for name, text in files:
            _check_name(name)
            if name in old.foreign:
                raise WouldOverwrite(folder, name, old.foreign[name])
            temporary = folder / f".{name}.{secrets.token_hex(4)}.tmp"
            content = text.encode("utf-8")
            write_new_file(temporary, content)
            staged.append((name, sha256_of(content), temporary))
        # Recorded before any is in place, with what each file holds now and will hold, so that a
        # crash part-way leaves no file of render's unrecorded, or recorded as changed by the user.
        during = {name: (digest,) for name, digest in old.ours.items()}
        for name, digest, _ in staged:
            during[name] = (*during.get(name, ()), digest)
        write_text_atomic(folder / RECORD_NAME, record_text(RenderRecord(stack, during)))
        for name, _, temporary in staged:
            os.replace(temporary, folder / name)
    except BaseException:
        for _, _, temporary in staged:
            temporary.unlink(missing_ok=True)
        raise
    written = tuple((name, digest) for name, digest, _ in staged)
    new_names = set(_names(written))
    _remove_stale(folder, [name for name in old.ours if name not in new_names])
    write_text_atomic(folder / RECORD_NAME, _record_of(stack, written))
    return _names(written)


def _remove_stale(folder: Path, names: list[str]) -> None:
    """The files only the earlier rendering had, as render wrote them."""
    for name in names:
        try:
            (folder / name).unlink(missing_ok=True)
        except OSError as error:
            # Still recorded: the next render removes it.
            raise StaleNotRemoved(folder, name, error) from None


def _record_of(stack: str, written: Iterable[tuple[str, str]]) -> str:
    """The record of a rendering in place: each file (name, sha256) as render wrote it."""
    return record_text(RenderRecord(stack, {name: (digest,) for name, digest in written}))


def _names(written: Iterable[tuple[str, str]]) -> tuple[str, ...]:
    return tuple(name for name, _ in written)


def _check_name(name: str) -> None:
    if not is_plain_file_name(name) or name == RECORD_NAME:
        raise ValueError(f"render cannot write a file named {name!r}: object files are named in their folder")
