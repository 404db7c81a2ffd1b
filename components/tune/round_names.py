"""The names of the stacks tune writes: `<stack>-tune1`, `<stack>-tune2`, ..., each the next one
whose stack file does not exist yet (tune never writes over a file)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterator

TUNE_SUFFIX = "-tune"


def round_names(stack: str, folder: Path) -> Iterator[str]:
    """The names for the rounds after round 0, in order: `<stack>-tuneN` for N from one past the
    highest already in `folder`, so that a second tune of the same stack follows the first."""
    taken = re.compile(rf"Pulumi\.{re.escape(stack)}{TUNE_SUFFIX}(\d+)\.yaml")
    numbers = [
        int(match[1])
        for path in folder.glob(f"Pulumi.{stack}{TUNE_SUFFIX}*.yaml")
        if (match := taken.fullmatch(path.name))
    ]
    number = max(numbers, default=0)
    while True:
        number += 1
        name = f"{stack}{TUNE_SUFFIX}{number}"
        if not (folder / f"Pulumi.{name}.yaml").exists():
            yield name
