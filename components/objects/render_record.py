"""The record `render` keeps in each folder it writes: the stack, and the files it wrote there.

`render` replaces or removes only the files its record lists, so a folder that also holds
files of the user's (their own manifests, the stacks themselves) loses nothing of theirs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

RECORD_NAME = ".tfk8s-render"

_HEADER = (
    "# Written by `python -m components render`: the files it wrote in this folder.\n"
    "# A later render replaces or removes only these; every other file here is kept.\n"
)


class UnreadableRecord(ValueError):
    """A file named like the record that is not one render wrote: render keeps it, and trusts none of it."""

    def __init__(self, path: Path, why: str) -> None:
        super().__init__(f"{path} is not the record render writes ({why})")
        self.path, self.why = path, why


@dataclass(frozen=True)
class RenderRecord:
    stack: str
    files: tuple[str, ...]


def is_plain_file_name(name: str) -> bool:
    """A name inside the folder itself: a record naming `../x` or `/etc/x` must not reach outside it."""
    return bool(name) and name not in (".", "..") and "/" not in name and "\\" not in name and "\0" not in name


def record_text(record: RenderRecord) -> str:
    body = yaml.safe_dump({"stack": record.stack, "files": list(record.files)}, sort_keys=False)
    return _HEADER + body


def read_record(folder: Path) -> RenderRecord | None:
    """The folder's record; None when it has none. UnreadableRecord when the file is not a record."""
    path = folder / RECORD_NAME
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise UnreadableRecord(path, "a folder") from None
    except UnicodeDecodeError:
        raise UnreadableRecord(path, "not UTF-8 text") from None
    try:
        values = yaml.safe_load(text)
    except yaml.YAMLError:
        raise UnreadableRecord(path, "not YAML") from None
    if (not isinstance(values, dict) or not isinstance(values.get("stack"), str)
            or not isinstance(values.get("files"), list)
            or not all(isinstance(name, str) and is_plain_file_name(name) for name in values["files"])):
        raise UnreadableRecord(path, "it needs `stack:` and `files:`, a list of file names in this folder")
    return RenderRecord(values["stack"], tuple(values["files"]))
