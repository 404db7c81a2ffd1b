"""NodePool: labels an experiment's existing servers, replacing `kubectl label node`.

Each node gets a server-side-apply NodePatch under the experiment's own field
manager, so `pulumi destroy` removes exactly the labels tfk8s added and leaves
any other label on the node alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pulumi

from . import kube, manifests
from .config import NodePoolSpec
from .experiment import Experiment


@dataclass(frozen=True)
class NodePoolArgs:
    experiment: Experiment
    pool: NodePoolSpec


class NodePool(pulumi.ComponentResource):
    patches: dict[str, pulumi.CustomResource]

    def __init__(
        self, name: str, args: NodePoolArgs, opts: Optional[pulumi.ResourceOptions] = None
    ) -> None:
        super().__init__("tfk8s:node_pool:NodePool", name, None, opts)
        if args.pool.nodes is None:
            raise ValueError(f"pool '{args.pool.name}' is given by a selector; tfk8s labels no nodes")
        child = pulumi.ResourceOptions(parent=self)
        self.patches = {
            node: kube.create(
                f"{name}-{node}", manifests.node_patch(args.experiment, node, args.pool), child
            )
            for node in args.pool.nodes
        }
        self.register_outputs({"nodes": list(self.patches)})
