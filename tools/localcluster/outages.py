"""Processes of a running local cluster stopped for a while, then started again as they were: the fault
drills' control plane restart and metrics pipeline outage (tests/realpods/test_faults.py), as a managed
cluster's upgrade or an etcd leader change does it.

A process is named as its cluster records it: the control plane's (etcd, kube-apiserver,
jobset-controller, kueue-controller, ...) or the real nodes' (metrics-server, coredns, ...). Each is
started again exactly as it was first started (Launcher.restart), in the order it was first
started, logging after its earlier log; its record is updated, so `make cluster-down` stops the new
processes.
"""

from __future__ import annotations

import contextlib
from typing import Iterator, Protocol, Sequence

from . import paths
from .control_plane import ControlPlane
from .processes import Launcher, stop_processes
from .realnodes_record import RealNodes


class ProcessRecord(Protocol):
    processes: dict[str, int]

    def save(self, where: paths.ClusterDir) -> None: ...


@contextlib.contextmanager
def processes_away(where: paths.ClusterDir, names: Sequence[str], tie_to_parent: bool = True) -> Iterator[None]:
    """The cluster's processes `names` stopped for the block, then started again as they were started;
    their new PIDs recorded."""
    records: list[ProcessRecord] = [record for record in (ControlPlane.load(where), RealNodes.load(where)) if record]
    owner = {name: record for record in records for name in record.processes if name in names}
    unknown = [name for name in names if name not in owner]
    if unknown:
        raise ValueError(f"not processes of the cluster in {where.root}: {', '.join(unknown)}")
    # As first started: etcd before the API server.
    order = [name for record in records for name in record.processes if name in names]
    stop_processes({name: owner[name].processes[name] for name in order})
    try:
        yield
    finally:
        for name in order:
            record = owner[name]

            def update(started: dict[str, int], record: ProcessRecord = record) -> None:
                record.processes.update(started)
                record.save(where)

            Launcher(where, tie_to_parent, update).restart(name)
