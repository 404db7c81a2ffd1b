"""A user's text file (a stack file, a TFJob manifest, a kubeconfig), read whole as UTF-8, or one reason why not.

Files reach tfk8s by hand: saved by an editor in UTF-16, a folder named by
mistake, a binary dropped in `stacks/`. Each of these is one readable reason
here, so every command can refuse it in one line naming the file, instead of
a decoder's traceback.
"""

from __future__ import annotations

import codecs
from pathlib import Path

# Stack files and manifests are a few KiB; past this the file is not one (or is /dev/zero).
MAX_USER_FILE_BYTES = 16 * 2**20

_WIDE_BOMS = (
    (codecs.BOM_UTF32_LE, "UTF-32"),
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
)


class UnreadableFile(ValueError):
    """The file cannot be read as UTF-8 text; the message is the reason, to follow the file's name."""


def read_user_text(path: Path) -> str:
    """The text of `path`, decoded as UTF-8 (a UTF-8 byte-order mark is dropped); UnreadableFile if it
    is missing, a folder, unreadable, too large, binary or in another encoding."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_USER_FILE_BYTES + 1)
    except FileNotFoundError:
        raise UnreadableFile("no such file") from None
    except IsADirectoryError:
        raise UnreadableFile("is a folder, not a file") from None
    except PermissionError:
        raise UnreadableFile("no permission to read it") from None
    except OSError as error:
        raise UnreadableFile(f"cannot be read ({error.strerror or error})") from None
    return decode_user_text(data)


def decode_user_text(data: bytes) -> str:
    """`data` as UTF-8 text, or UnreadableFile saying what it is instead."""
    if len(data) > MAX_USER_FILE_BYTES:
        raise UnreadableFile(
            f"is larger than {MAX_USER_FILE_BYTES // 2**20} MiB, far more than a text file tfk8s reads"
        )
    for bom, encoding in _WIDE_BOMS:
        if data.startswith(bom):
            raise UnreadableFile(f"is {encoding} text; tfk8s reads UTF-8: save it as UTF-8")
    nul = data.find(b"\x00")
    if nul >= 0:
        raise UnreadableFile(f"is binary, not text (a NUL byte at byte {nul}); if it is UTF-16 text, save it as UTF-8")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        column = error.start - (data.rfind(b"\n", 0, error.start) + 1) + 1
        raise UnreadableFile(
            f"is not UTF-8 text (byte 0x{data[error.start]:02x} at line {line}, column {column}); save it as UTF-8"
        ) from None
