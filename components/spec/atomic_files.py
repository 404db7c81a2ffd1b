"""Files written whole: a reader (or a crash, or a full disk) never sees half of one.

Every file tfk8s writes goes through here: the text is written to a temporary
file beside the target, flushed to disk, then renamed over it (`os.replace` is
atomic within one file system). A failed write leaves the old file as it was
and no temporary file behind.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_bytes_atomic(path: Path, content: bytes, mode: int | None = None) -> None:
    """Write `content` to `path` whole; `mode` keeps the old file's permissions unless given."""
    path = Path(path)
    if mode is None:
        try:
            mode = path.stat().st_mode & 0o7777
        except FileNotFoundError:
            mode = 0o666 & ~current_umask()
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_text_atomic(path: Path, text: str, mode: int | None = None) -> None:
    write_bytes_atomic(path, text.encode("utf-8"), mode)


def current_umask() -> int:
    """The permission bits a new file or folder is created without."""
    # The process umask can only be read by setting it; set it straight back.
    current = os.umask(0)
    os.umask(current)
    return current
