"""The type tokens of tfk8s's three components, in one scheme: `tfk8s:index:<Name>`, as Pulumi
names a package's components. Each component also answers to the token it had before, through an
alias, so that a stack brought up under the earlier token keeps its resources (Pulumi knows a
resource by its URN, which holds its type and its parents' types: without the alias the engine
would replace the namespace, its checkpoints, every object)."""

from __future__ import annotations

from typing import Optional

import pulumi

TF_EXPERIMENT = "tfk8s:index:TFExperiment"
TF_CLUSTER = "tfk8s:index:TFCluster"
NODE_POOL = "tfk8s:index:NodePool"

# The tokens of tfk8s's first releases, and what each is now.
EARLIER_TOKENS = {
    TF_EXPERIMENT: "tfk8s:experiment:TFExperiment",
    TF_CLUSTER: "tfk8s:tf_cluster:TFCluster",
    NODE_POOL: "tfk8s:node_pool:NodePool",
}


def answering_to_earlier_token(token: str, opts: Optional[pulumi.ResourceOptions]) -> pulumi.ResourceOptions:
    """`opts`, with an alias from the component's earlier token (Pulumi carries it to the children)."""
    earlier = pulumi.ResourceOptions(aliases=[pulumi.Alias(type_=EARLIER_TOKENS[token])])
    return pulumi.ResourceOptions.merge(opts, earlier)
