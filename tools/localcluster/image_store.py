"""Each real node's unpacked images, kept between runs.

Importing the images into a node's containerd (unpacking gigabytes of TensorFlow) took 130 s of
every real-node start on two cores. A node's containerd root is therefore moved, not copied, into
the cache (`TFK8S_CACHE`, outside the clone, on the same file system) when its cluster is torn
down, and moved back into the node's folder at its next start: only the archives it does not hold
yet are imported. A record beside the images says which archives they came from (the archive's
file name carries a key of everything that went into it).

A store is used as it is when it holds every wanted archive (more does no harm: a start with the
sandbox image alone, as the lifecycle tests make, leaves the rest in place), and grows when it holds
only some. One that holds an archive no longer wanted while lacking a wanted one (a rebuilt
image) is discarded: the store never grows by a stale copy. A store is in one node's folder at a
time: one cluster's real nodes hold the host (host_claim.py), and a run killed outright leaves its
store in its folder until its teardown gives it back.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from components.spec.atomic_files import write_text_atomic
from tools.nodeimage.images import cache_root
from tools.toolchain.versions import recorded_versions

from . import host

RECORD = "tfk8s-archives.json"


def _cached(node: str) -> Path:
    # The containerd version is part of the place: a store is never opened by another version.
    return cache_root() / "node-stores" / f"containerd-{recorded_versions()['CONTAINERD_DEB']}" / node


def held(store: Path) -> set[str]:
    """The archives (file names) whose images `store` holds."""
    try:
        return set(json.loads((store / RECORD).read_text()))
    except FileNotFoundError:
        return set()


def take(node: str, store: Path, wanted: list[Path]) -> list[Path]:
    """Move the node's kept store to `store` (its containerd root, not yet there) when it serves;
    the archives still to import into it."""
    cached = _cached(node)
    # A store already in the node's folder (its teardown could not finish) is used as it is.
    if cached.is_dir() and not store.exists():
        holds = held(cached)
        names = {archive.name for archive in wanted}
        if holds - names and names - holds:
            host.remove_tree(cached)  # an image was rebuilt: start over rather than keep both
        else:
            store.parent.mkdir(parents=True, exist_ok=True)
            os.replace(cached, store)
    holds = held(store)
    return [archive for archive in wanted if archive.name not in holds]


def imported(store: Path, archives: list[Path]) -> None:
    """Record that `archives` are now in `store`."""
    write_text_atomic(store / RECORD, json.dumps(sorted(held(store) | {archive.name for archive in archives})))


def give_back(node: str, store: Path) -> None:
    """Keep `store` (containerd stopped, nothing mounted under it) for the node's next start."""
    if not (store / RECORD).is_file():
        return  # nothing imported completely: nothing worth keeping
    cached = _cached(node)
    host.remove_tree(cached)  # a store another folder gave back meanwhile: ours is the newer
    cached.parent.mkdir(parents=True, exist_ok=True)
    os.replace(store, cached)
