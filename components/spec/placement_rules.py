"""The placement rules, in one place: what colocated, isolated and spread ask of the PS and worker pools.

The stack's cross checks report each broken rule under the stack-file key at
fault; the planner asks the same rules before it places anything. A pool is
given here by its name and its servers (None for a pool given by a label
selector, whose servers are unknown until the scheduler picks them).
"""

from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import Optional, Sequence

from .models import CONFIG_NAMESPACE, Placement

PLACEMENTS = typing.get_args(Placement)


@dataclass(frozen=True)
class PlacementProblem:
    key: str  # the stack-file key at fault, below tfk8s:
    message: str

    def __str__(self) -> str:
        return f"{CONFIG_NAMESPACE}:{self.key}: {self.message}"


def placement_problems(
    placement: str,
    ps_pool: str,
    ps_servers: Optional[Sequence[str]],
    worker_pool: str,
    worker_servers: Optional[Sequence[str]],
) -> list[PlacementProblem]:
    """Every rule of `placement` that the two pools break (none: the plan can honour it)."""
    if placement not in PLACEMENTS:
        return [
            PlacementProblem("cluster.placement", f"unknown placement '{placement}'; one of {', '.join(PLACEMENTS)}")
        ]
    problems = []
    if placement == "colocated" and ps_pool != worker_pool:
        problems.append(
            PlacementProblem(
                "cluster.workers.pool",
                f"colocated placement puts PS and workers on the same servers, so workers.pool must be "
                f"'{ps_pool}' like ps.pool (or use placement: isolated)",
            )
        )
    if placement == "isolated":
        if ps_pool == worker_pool:
            problems.append(
                PlacementProblem(
                    "cluster.workers.pool",
                    f"isolated placement needs separate PS and worker pools, but both are '{ps_pool}'",
                )
            )
        else:
            worker_nodes = set(worker_servers or ())  # a set: pools of a thousand servers are checked twice per load
            problems += [
                PlacementProblem(
                    "nodePools",
                    f"node '{node}' is in both the PS pool '{ps_pool}' and the worker pool '{worker_pool}'; "
                    "isolated placement needs disjoint pools",
                )
                for node in ps_servers or ()
                if node in worker_nodes
            ]
    if placement != "spread":
        for role, pool, servers in (("ps", ps_pool, ps_servers), ("workers", worker_pool, worker_servers)):
            if servers is None:
                problems.append(
                    PlacementProblem(
                        f"cluster.{role}.pool",
                        f"pool '{pool}' is given by a selector, so its servers are unknown and {placement} "
                        "placement cannot pin tasks; list its nodes or use placement: spread",
                    )
                )
    return problems
