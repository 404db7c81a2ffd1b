"""The type tokens of tfk8s's three components, in one scheme: `tfk8s:<module>:<Type>`, the
module that defines the component (components/resources/<module>.py). A component whose token
was another also answers to that one, through an alias, so that a stack brought up under the
earlier token keeps its resources (Pulumi knows a resource by its URN, which holds its type and
its parents' types: without the alias the engine would replace the namespace, its checkpoints,
every object)."""

from __future__ import annotations

from typing import Optional

import pulumi

TF_EXPERIMENT = "tfk8s:tf_experiment:TFExperiment"
TF_CLUSTER = "tfk8s:tf_cluster:TFCluster"
NODE_POOL = "tfk8s:node_pool:NodePool"

# The token each component had in tfk8s's first releases, where it differs from its token now.
EARLIER_TOKENS = {TF_EXPERIMENT: "tfk8s:experiment:TFExperiment"}


def answering_to_earlier_token(token: str, opts: Optional[pulumi.ResourceOptions]) -> Optional[pulumi.ResourceOptions]:
    """`opts`, with an alias from the component's earlier token where it had another (Pulumi carries
    it to the children)."""
    if token not in EARLIER_TOKENS:
        return opts
    earlier = pulumi.ResourceOptions(aliases=[pulumi.Alias(type_=EARLIER_TOKENS[token])])
    return pulumi.ResourceOptions.merge(opts, earlier)
