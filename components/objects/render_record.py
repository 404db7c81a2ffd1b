"""The record `render` keeps in each folder it writes: the stack, and each file it wrote there with its checksum.

`render` replaces or removes only the files its record lists, and only while each still holds what
render wrote (its sha256): a file the user put there, or a rendered file the user edited since (the
Secret's placeholders filled in, say), is theirs, and never replaced or removed.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

import yaml

RECORD_NAME = ".tfk8s-render"
# Far above the record of the largest experiment tfk8s plans (about 150 bytes a file): a bigger
# file of that name is not one render wrote, and is not read whole into memory.
MAX_RECORD_BYTES = 32 * 1024 * 1024

_HEADER = (
    "# Written by `python -m components render`: the files it wrote in this folder, with the sha256 of each.\n"
    "# A later render replaces or removes only these, and only while they hold what it wrote; every other file\n"
    "# here is kept.\n"
)
_SHA256 = re.compile(r"[0-9a-f]{64}")


class UnreadableRecord(ValueError):
    """A file named like the record that is not one render wrote: render keeps it, and trusts none of it."""

    def __init__(self, path: Path, why: str) -> None:
        super().__init__(f"{path} is not a record render can trust ({why})")
        self.path, self.why = path, why


class RecordNotAFile(UnreadableRecord):
    """A link, folder, pipe or device under the record's name: the user's, never read or replaced."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, "not a plain file")


@dataclass(frozen=True)
class RenderRecord:
    stack: str
    # Each file in apply order, with the sha256 of what render wrote there: two while a forced render
    # replaces it in place (either may be there after a crash), none in the record of an older render.
    files: Mapping[str, tuple[str, ...]]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.files)


def sha256_of(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


def is_plain_file_name(name: str) -> bool:
    """A name inside the folder itself: a record naming `../x` or `/etc/x` must not reach outside it."""
    return bool(name) and name not in (".", "..") and "/" not in name and "\\" not in name and "\0" not in name


def record_text(record: RenderRecord) -> str:
    files = {name: digests[0] if len(digests) == 1 else list(digests) for name, digests in record.files.items()}
    return _HEADER + yaml.safe_dump({"stack": record.stack, "files": files}, sort_keys=False, width=200)


def read_record(folder: Path) -> RenderRecord | None:
    """The folder's record; None when it has none. UnreadableRecord when the file is not a record,
    RecordNotAFile when it is not even a plain file."""
    path = folder / RECORD_NAME
    try:
        content = _read_plain_file(path, MAX_RECORD_BYTES)
    except FileNotFoundError:
        return None
    except PermissionError as error:
        raise UnreadableRecord(path, f"cannot read it: {error.strerror}") from None
    if content is None:
        raise RecordNotAFile(path)
    if len(content) > MAX_RECORD_BYTES:
        raise UnreadableRecord(path, "larger than any record render writes")
    try:
        values = yaml.safe_load(content.decode("utf-8"))
    except UnicodeDecodeError:
        raise UnreadableRecord(path, "not UTF-8 text") from None
    except yaml.YAMLError:
        raise UnreadableRecord(path, "not YAML") from None
    files = _recorded_files(values.get("files") if isinstance(values, dict) else None)
    if files is None or not isinstance(values.get("stack"), str):
        raise UnreadableRecord(path, "it needs `stack:` and `files:`, the file names in this folder with their sha256")
    return RenderRecord(values["stack"], files)


def sha256_of_plain_file(path: Path) -> str | None:
    """The sha256 of `path`; None when it is not a plain file. Read in pieces: a file the user put
    under a recorded name may be of any size."""
    handle = _open_plain_file(path)
    if handle is None:
        return None
    with handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def _read_plain_file(path: Path, limit: int) -> bytes | None:
    """At most `limit` + 1 bytes of `path`; None when it is not a plain file."""
    handle = _open_plain_file(path)
    if handle is None:
        return None
    with handle:
        return handle.read(limit + 1)


def _open_plain_file(path: Path) -> io.BufferedReader | None:
    """`path` opened for reading, or None when it is not a plain file: a link is never followed, and a
    pipe or device never opened, which could block, or never end."""
    if not stat.S_ISREG(os.lstat(path).st_mode):
        return None
    handle = os.fdopen(os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC), "rb")
    # Checked again on what was opened: the path may have been replaced since the lstat.
    if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
        handle.close()
        return None
    return handle


def _recorded_files(files: object) -> dict[str, tuple[str, ...]] | None:
    """`files:` as name -> sha256s; an older render's list of names gives each no sha256 (not trusted)."""
    if isinstance(files, list) and all(isinstance(name, str) and is_plain_file_name(name) for name in files):
        return {name: () for name in files}
    if not isinstance(files, dict):
        return None
    recorded = {}
    for name, digests in files.items():
        digests = (digests,) if isinstance(digests, str) else digests
        if (
            not isinstance(name, str)
            or not is_plain_file_name(name)
            or not isinstance(digests, (list, tuple))
            or not digests
            or not all(isinstance(d, str) and _SHA256.fullmatch(d) for d in digests)
        ):
            return None
        recorded[name] = tuple(digests)
    return recorded
