"""Processes of a running local cluster stopped for a while, then started again as they were: the fault
drills' control plane restart (tests/realpods/test_faults.py), as a managed cluster's upgrade or an
etcd leader change does it.

Each process is started again exactly as it was first started (Launcher.restart), in the order it
was first started, logging after its earlier log; the cluster's record is updated, so `make
cluster-down` stops the new processes.
"""

from __future__ import annotations

import contextlib
from typing import Iterator, Sequence

from . import paths
from .control_plane import ControlPlane
from .processes import Launcher, stop_processes


@contextlib.contextmanager
def control_plane_away(where: paths.ClusterDir, names: Sequence[str], tie_to_parent: bool = True) -> Iterator[None]:
    """The control plane's processes `names` (etcd, kube-apiserver, jobset-controller, ...) stopped for
    the block, then started again as they were started; their new PIDs recorded."""
    plane = ControlPlane.load(where)
    if plane is None:
        raise ValueError(f"no local cluster in {where.root}")
    unknown = [name for name in names if name not in plane.processes]
    if unknown:
        raise ValueError(f"not processes of the cluster in {where.root}: {', '.join(unknown)}")
    order = [name for name in plane.processes if name in names]  # as first started: etcd before the API server
    stop_processes({name: plane.processes[name] for name in order})
    try:
        yield
    finally:

        def record(started: dict[str, int]) -> None:
            plane.processes.update(started)
            plane.save(where)

        launcher = Launcher(where, tie_to_parent, record)
        for name in order:
            launcher.restart(name)
