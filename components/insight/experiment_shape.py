"""What the stack says, as the bottleneck rules read it to propose the next experiment: one reading
of a stack, from what `export` says of it, for `diagnose` (components/live/diagnose_figures.py) and
`make report` (trainer/report/local_diagnosis.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from ..spec.trainer_contract import StackExport


@dataclass(frozen=True)
class ExperimentShape:
    """What the stack file says, for the next experiment's changes. `pools`: each node pool's servers."""

    placement: str  # colocated | isolated | spread
    pools: dict[str, tuple[str, ...]]
    ps_replicas: int
    ps_pool: Optional[str]
    ps_cpu: str  # the CPU request as the stack file has it (its default where left out)
    worker_replicas: int
    worker_pool: str
    worker_cpu: str
    worker_gpus: int
    ratio: Optional[str]  # cluster.ratio where the stack gives the PS count that way
    partition: Optional[str]  # tfk8s's trainer's partition; None for a team's program
    # tfk8s:nodePools as the stack file writes it (every key of each pool), so that a pool split
    # keeps what it does not change; empty: written from `pools` as {name, nodes}.
    node_pools: tuple[dict[str, Any], ...] = ()
    # The stack writes ps.replicas beside cluster.ratio: the two must agree, so both change.
    ps_replicas_beside_ratio: bool = False


def experiment_shape(
    export: StackExport, partition: Optional[str], node_pools: tuple[dict[str, Any], ...] = ()
) -> Optional[ExperimentShape]:
    """The stack's shape as the rules read it, from what `export` says of it, with the trainer's
    partition (None for a team's program) and the node pools as the stack file writes them; None
    for an export without its `cluster` (written by hand, or by an older tfk8s)."""
    cluster = export.cluster
    if cluster is None:
        return None
    return ExperimentShape(
        placement=export.placement,
        pools={name: tuple(nodes) for name, nodes in cluster.pools.items()},
        ps_replicas=export.ps,
        ps_pool=cluster.ps_pool,
        ps_cpu=cluster.ps_cpu,
        worker_replicas=export.workers,
        worker_pool=cluster.worker_pool,
        worker_cpu=cluster.worker_cpu,
        worker_gpus=cluster.worker_gpus,
        ratio=cluster.ratio,
        partition=partition,
        node_pools=node_pools,
        ps_replicas_beside_ratio=cluster.ratio is not None and cluster.ps_replicas is not None,
    )
