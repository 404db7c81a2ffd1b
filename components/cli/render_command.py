"""`python -m components render STACK`: the objects as files in a folder, or as one YAML stream.

Exit 0 when written, 2 when nothing was (a folder holding files render did not
write, a file given as the folder, a folder that cannot be written).
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import TextIO

from components.cli.exit_codes import BAD_INPUT, OK
from components.cli.paths import shown
from components.objects.render import render, write_stream
from components.objects.render_folder import ForeignFile, RenderError, WouldOverwrite
from components.objects.program_container import PROGRAM_SECRET
from components.plan.experiment import Experiment
from components.spec.secrets import SECRET_PLACEHOLDER

STDOUT = "-"
FORCE_MEANS = ("--force to write there anyway (every file render did not write is kept; only files an earlier "
               "render recorded there are replaced or removed)")


def render_command(experiment: Experiment, out: Path | None, output: str, force: bool, default_root: Path) -> int:
    """Render `experiment` into `out` (default: default_root/<stack>), or to standard output; the exit code."""
    to_stdout = output == "yaml" or str(out) == STDOUT
    if output == "yaml" and out is not None and str(out) != STDOUT:
        print(f"render: -o yaml writes to standard output, and --out {out} to a folder: give one of them",
              file=sys.stderr)
        return BAD_INPUT
    if to_stdout:
        # Standard output holds the objects alone, for `| kubectl apply -f -`; the counts go to stderr.
        kinds = write_stream(experiment, sys.stdout)
        _print_counts(kinds, f"objects of stack {experiment.stack} on standard output", sys.stderr)
        _note_placeholders(experiment)
        return OK

    out_dir = out or default_root / experiment.stack
    try:
        rendering = render(experiment, out_dir, force=force)
    except RenderError as error:
        if isinstance(error, ForeignFile) and not isinstance(error, WouldOverwrite):
            message = (f"{shown(error.folder)} holds {error.name}, which render did not write; nothing written: "
                       f"give another --out, or {FORCE_MEANS}")
        else:
            message = error.describe(shown(error.folder))
        print(f"render: {message}", file=sys.stderr)
        return BAD_INPUT
    _print_counts(rendering.kinds, f"objects of stack {experiment.stack} in {shown(out_dir)}", sys.stdout)
    _note_placeholders(experiment)
    if rendering.kept:
        print(f"render: kept {_listed(rendering.kept)} in {shown(out_dir)}, which render did not write; "
              "`kubectl apply -f` on the folder applies any of them that are manifests too", file=sys.stderr)
    if rendering.leftover:
        print(f"render: the earlier rendering, set aside in {shown(rendering.leftover)}, could not be removed: "
              "remove it", file=sys.stderr)
    return OK


def _note_placeholders(experiment: Experiment) -> None:
    """The stack's secrets are rendered as placeholders: say so, before anyone applies them."""
    if experiment.secret_env:
        print(f"render: Secret {PROGRAM_SECRET} holds the placeholder {SECRET_PLACEHOLDER} for "
              f"{_listed(tuple(sorted(experiment.secret_env)))}, not the stack's secret values: replace them before "
              f"applying, or create that Secret yourself (docs/secrets.md)", file=sys.stderr)


def _listed(names: tuple[str, ...]) -> str:
    more = len(names) - 3
    return ", ".join(names[:3]) + (f" and {more} more" if more > 0 else "")


def _print_counts(kinds: Counter[str], total: str, stream: TextIO) -> None:
    for kind, count in kinds.items():
        print(f"{count:6d}  {kind}", file=stream)
    print(f"{sum(kinds.values()):6d}  {total}", file=stream)
