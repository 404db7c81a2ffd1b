"""`python -m components render STACK`: the objects as files in a folder, or as one YAML stream.

Exit 0 when written, 2 when nothing was (a folder holding files render did not
write, a file given as the folder, a folder that cannot be written).
"""

from __future__ import annotations

import re
import shlex
import sys
from collections import Counter
from pathlib import Path
from typing import TextIO

from ..objects.node_labels import LABEL_SCRIPT, UNLABEL_SCRIPT, label_commands
from ..objects.render import render, write_stream
from ..objects.render_folder import UNCHECKED, ForeignFile, RenderError, WouldOverwrite
from ..objects.render_record import RECORD_NAME
from ..plan.experiment import Experiment
from ..spec.secrets import SECRET_PLACEHOLDER
from .exit_codes import BAD_INPUT, OK
from .paths import shown

STDOUT = "-"
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
FORCE_MEANS = (
    "--force to write there anyway (every file render did not write is kept; only files an earlier "
    "render recorded there, as it wrote them, are replaced or removed)"
)


def render_command(experiment: Experiment, out: Path | None, output: str, force: bool, default_root: Path) -> int:
    """Render `experiment` into `out` (default: default_root/<stack>), or to standard output; the exit code."""
    to_stdout = output == "yaml" or str(out) == STDOUT
    if output == "yaml" and out is not None and str(out) != STDOUT:
        print(
            f"render: -o yaml writes to standard output, and --out {out} to a folder: give one of them", file=sys.stderr
        )
        return BAD_INPUT
    if to_stdout and force:
        # --force says which files of a folder may be replaced: with no folder it would be ignored.
        where = "-o yaml" if output == "yaml" else "--out -"
        print(
            f"render: {where} writes to standard output, and --force is for writing into a folder (--out DIR): "
            "drop --force, or give --out DIR",
            file=sys.stderr,
        )
        return BAD_INPUT
    if to_stdout:
        # Standard output holds the objects alone, for `| kubectl apply -f -`; the counts go to stderr.
        kinds = write_stream(experiment, sys.stdout)
        _print_counts(kinds, f"objects of stack {experiment.stack} on standard output", sys.stderr)
        _note_secret(experiment, "is left out of the stream")
        _note_node_labels_for_stream(experiment)
        return OK

    if out is not None and _CONTROL.search(str(out)):
        # A line break pasted after the folder's name: the folder would be made with it in its name.
        print(
            f"render: --out {str(out)!r} has a control character (a line break or a tab) in it, which "
            "would be part of the folder's name; give the folder's name alone",
            file=sys.stderr,
        )
        return BAD_INPUT
    out_dir = out or default_root / experiment.stack
    try:
        rendering = render(experiment, out_dir, force=force)
    except RenderError as error:
        print(f"render: {_refusal(error)}", file=sys.stderr)
        return BAD_INPUT
    _print_counts(rendering.kinds, f"objects of stack {experiment.stack} in {shown(out_dir)}", sys.stdout)
    if label_commands(experiment):
        print(
            f"render: node labels are not objects here (`kubectl delete -f` would delete the nodes): run "
            f"sh {_arg(out_dir / LABEL_SCRIPT)} before `kubectl apply -f {_arg(out_dir)}`, and "
            f"sh {_arg(out_dir / UNLABEL_SCRIPT)} after deleting it",
            file=sys.stderr,
        )
    for template in rendering.templates:
        _note_secret(
            experiment,
            f"is written as {shown(out_dir / template)}, which `kubectl apply -f {_arg(out_dir)}` does not read",
        )
    if rendering.kept:
        print(
            f"render: kept {_listed(rendering.kept)} in {shown(out_dir)}: render did not write them, or they "
            "were changed since; `kubectl apply -f` on the folder applies any of them that are manifests too",
            file=sys.stderr,
        )
    if rendering.leftover:
        print(
            f"render: the earlier rendering, set aside in {shown(rendering.leftover)}, could not be removed: remove it",
            file=sys.stderr,
        )
    return OK


def _refusal(error: RenderError) -> str:
    """What stopped render, and what the user can do about it."""
    folder = shown(error.folder)
    if not isinstance(error, ForeignFile) or isinstance(error, WouldOverwrite):
        return error.describe(folder)
    if error.why is UNCHECKED:
        # --force would keep such files and then refuse to overwrite them: only the user can tell.
        return (
            f"{folder} holds {error.name}, {error.why.holds}; nothing written: check the files "
            f"{RECORD_NAME} lists, remove those that hold nothing of yours (or the folder), and render again"
        )
    return f"{folder} holds {error.name}, {error.why.holds}; nothing written: give another --out, or {FORCE_MEANS}"


def _note_secret(experiment: Experiment, where: str) -> None:
    """The Secret of the stack's secrets is not applied (its values would be placeholders): say
    where it went, and how to create it with the real values."""
    if not experiment.secret_env:
        return
    names = sorted(experiment.secret_env)
    secret = experiment.names.program_secret
    literals = " ".join(f"--from-literal={name}=..." for name in names)
    print(
        f"render: Secret {secret} {where}: its values of {', '.join(names)} are the stack's secrets, "
        f"which render cannot read, and applied with placeholders ({SECRET_PLACEHOLDER}) it would replace the real "
        f"Secret. Create it with the real values (docs/secrets.md):\n"
        f"  kubectl -n {experiment.namespace} create secret generic {secret} {literals}",
        file=sys.stderr,
    )


def _note_node_labels_for_stream(experiment: Experiment) -> None:
    """The stream holds no node: say how to label the servers, and how to remove the labels."""
    commands = label_commands(experiment)
    if commands:
        print(
            f"render: node labels are left out of the stream; label the {len(commands)} servers first "
            "(render --out DIR writes these as label-nodes.sh and unlabel-nodes.sh):",
            file=sys.stderr,
        )
        for command in commands:
            print(f"  {command}", file=sys.stderr)


def _arg(path: Path) -> str:
    """`path` as a command printed for the user to run takes it: quoted where the shell would split it."""
    return shlex.quote(shown(path))


def _listed(names: tuple[str, ...]) -> str:
    more = len(names) - 3
    return ", ".join(names[:3]) + (f" and {more} more" if more > 0 else "")


def _print_counts(kinds: Counter[str], total: str, stream: TextIO) -> None:
    for kind, count in kinds.items():
        print(f"{count:6d}  {kind}", file=stream)
    print(f"{sum(kinds.values()):6d}  {total}", file=stream)
