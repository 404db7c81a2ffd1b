"""Which local cluster's real nodes hold the host's changes, named where every checkout looks.

The pod bridge, the node cgroups and the sysctls are one set per machine, whichever checkout
started them, and what to put back is recorded in that cluster's own folder (real-nodes.json). A
run killed outright (SIGKILL, a session's end) cannot tear down: the claim lets the next start, from
any checkout, find that record and put the host back instead of refusing a bridge it cannot place.
It lives under /run, which a reboot empties together with the bridge.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

CLAIM = Path("/run/tfk8s/real-nodes-cluster")


def claimant(claim: Path = CLAIM) -> Optional[Path]:
    """The cluster folder whose real nodes changed the host, if any claims it."""
    try:
        text = claim.read_text().strip()
    except FileNotFoundError:
        return None
    return Path(text) if text else None


def take(root: Path, claim: Path = CLAIM) -> None:
    """Name `root` as the holder; written whole, so a reader never sees half a path."""
    claim.parent.mkdir(parents=True, exist_ok=True)
    partial = claim.with_name(f".{claim.name}.{os.getpid()}")
    partial.write_text(f"{root.resolve()}\n")
    partial.replace(claim)


def release(root: Path, claim: Path = CLAIM) -> None:
    """Drop the claim if `root` holds it (another cluster's claim is not ours to drop)."""
    if claimant(claim) == root.resolve():
        claim.unlink(missing_ok=True)
        try:
            claim.parent.rmdir()  # the folder is the claim's alone: nothing of tfk8s stays on the host
        except OSError:
            pass  # another file is there (a claim being written): not ours to remove
