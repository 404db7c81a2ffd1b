"""NodePool: labels an experiment's existing servers, replacing `kubectl label node`.

Each node gets a server-side-apply NodePatch under the experiment's own field
manager, so `pulumi destroy` removes exactly the labels tfk8s added and leaves
any other label on the node alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pulumi

from ..objects.experiment_objects import node_pool_objects
from ..plan.experiment import Experiment
from ..spec.pools import NodePoolSpec
from . import arguments, kube
from .inputs import NO_INPUTS, InputSlots
from .tokens import NODE_POOL, answering_to_earlier_token


@dataclass(frozen=True)
class NodePoolArgs:
    experiment: Experiment
    pool: NodePoolSpec
    # Node names given as Outputs: the experiment holds their placeholders.
    inputs: InputSlots = NO_INPUTS

    def __post_init__(self) -> None:
        owner = type(self).__name__
        arguments.check_instance(owner, "experiment", self.experiment, Experiment, arguments.EXPERIMENT)
        arguments.check_instance(owner, "pool", self.pool, NodePoolSpec, "a NodePoolSpec (one of experiment's pools)")
        arguments.check_instance(owner, "inputs", self.inputs, InputSlots)


class NodePool(pulumi.ComponentResource):
    patches: dict[str, pulumi.CustomResource]  # node name (or its Input's placeholder) -> its label patch

    def __init__(self, name: str, args: NodePoolArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        owner = type(self).__name__
        arguments.check_name(owner, name)
        arguments.check_args(owner, args, NodePoolArgs)
        arguments.check_opts(owner, opts)
        super().__init__(NODE_POOL, name, None, answering_to_earlier_token(NODE_POOL, opts))
        child = pulumi.ResourceOptions(parent=self)
        self.patches = {
            patch.suffix: kube.create(f"{name}-{patch.suffix}", args.inputs.resolve(patch.manifest), child)
            for patch in node_pool_objects(args.experiment, args.pool)
        }
        self.register_outputs({"nodes": args.inputs.resolve(list(self.patches))})
