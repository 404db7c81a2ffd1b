"""Which paths of a program's `source` folder are left out: dotfiles and what is ignored.

A program's folder is usually a folder of a git checkout, and what git keeps
out of the history (checkpoints, data, virtual environments, secrets) must
not reach a ConfigMap every reader of the namespace can read either. So the
rules are git's: the `.gitignore` files of the project from its root down to
the folder and in the folder's subfolders, each relative to its own folder, a
deeper file deciding over a higher one and the last matching line deciding
within one (pathspec's GitIgnoreSpec). A `.tfk8signore` in the folder, in the
same syntax, is read last, so it can leave out more, or ship with `!` a file
git ignores. Dotfiles and dot-folders are never shipped, whatever the rules say.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional

from pathspec import GitIgnoreSpec

GITIGNORE = ".gitignore"
TFK8SIGNORE = ".tfk8signore"


@dataclass(frozen=True)
class IgnoreFile:
    folder: str  # the folder it sits in and governs, relative to the project root, '/'-terminated ('' for the root)
    spec: GitIgnoreSpec

    def verdict(self, path: str, is_folder: bool) -> Optional[bool]:
        """True: ignored, False: re-included with `!`, None: no line matches (or the path is not below it)."""
        if len(path) <= len(self.folder) or not path.startswith(self.folder):
            return None
        return self.spec.check_file(path[len(self.folder) :] + ("/" if is_folder else "")).include


def is_dotted(name: str) -> bool:
    """`.env`, `.git/`, `.venv/`: never shipped, even when no ignore file names them."""
    return name.startswith(".")


def _valid_lines(lines: Iterable[str]) -> list[str]:
    # git skips a line it cannot read as a pattern (a lone '!', a trailing '\')
    # and keeps the others; so do we, rather than refuse a file git accepts.
    valid = []
    for line in lines:
        try:
            GitIgnoreSpec.from_lines([line])
        except ValueError:
            continue
        valid.append(line)
    return valid


def read_ignore_file(path: Path, folder: str) -> Optional[IgnoreFile]:
    """The ignore file at `path`, governing `folder` (relative to the project root); None when there is none."""
    if not path.is_file():
        return None
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    return IgnoreFile(f"{folder}/" if folder else "", GitIgnoreSpec.from_lines(_valid_lines(lines)))


def _ignored(layers: Iterable[IgnoreFile], path: str, is_folder: bool) -> bool:
    """The last layer with a line matching the path decides; a path no line matches is kept."""
    ignored = False
    for layer in layers:
        verdict = layer.verdict(path, is_folder)
        if verdict is not None:
            ignored = verdict
    return ignored


def _project_layers(project_root: Path, base: Path) -> list[IgnoreFile]:
    """The `.gitignore` files from the project's root down to the folder's parent, outermost first.

    When they ignore the folder itself or a folder above it (a program
    generated into an ignored build folder), the folder was still named on
    purpose: it is shipped by its own rules alone, since every path in it
    would match.
    """
    parts = base.relative_to(project_root).parts
    layers = []
    for depth in range(len(parts)):
        layer = read_ignore_file(project_root.joinpath(*parts[:depth], GITIGNORE), "/".join(parts[:depth]))
        if layer is not None:
            layers.append(layer)
    if any(_ignored(layers, "/".join(parts[:depth]), True) for depth in range(1, len(parts) + 1)):
        return []
    return layers


class IgnoreRules:
    """The rules for one source folder; `enter` adds a subfolder's `.gitignore` as the walk reaches it."""

    def __init__(self, project_root: Path, base: Path) -> None:
        relative = base.relative_to(project_root).as_posix()
        self._prefix = "" if relative == "." else f"{relative}/"
        self._layers = _project_layers(project_root, base)
        self._last = read_ignore_file(base / TFK8SIGNORE, self._prefix.rstrip("/"))

    def enter(self, folder: Path, relative: str) -> None:
        """Reads `folder`'s `.gitignore` (`relative` to the source folder, '' for itself) before its paths are checked.

        The walk enters a folder after its parent, so a deeper file always
        comes later in the list, and so decides over a higher one.
        """
        layer = read_ignore_file(folder / GITIGNORE, (self._prefix + relative).rstrip("/"))
        if layer is not None:
            self._layers.append(layer)

    def leaves_out(self, relative: str, is_folder: bool) -> bool:
        """Whether the path (relative to the source folder, '/'-separated) is not shipped; an ignored
        folder is not entered."""
        if any(is_dotted(part) for part in relative.split("/")):
            return True
        last = [self._last] if self._last is not None else []
        return _ignored([*self._layers, *last], self._prefix + relative, is_folder)
