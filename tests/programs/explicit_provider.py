"""A program of a platform team's own: the stack's experiment through an explicit provider, with a transform."""

import pulumi
import pulumi_kubernetes as k8s

from components.program import build, engine_config


def annotate(args: pulumi.ResourceTransformArgs):
    """Every Kubernetes object gets the team's cost-centre annotation."""
    if not args.type_.startswith("kubernetes:"):
        return None
    props = dict(args.props)
    metadata = dict(props.get("metadata") or {})
    metadata["annotations"] = {**(metadata.get("annotations") or {}), "example.com/cost-centre": "ads-ranking"}
    props["metadata"] = metadata
    return pulumi.ResourceTransformResult(props, args.opts)


provider = k8s.Provider("training-cluster", context="training-cluster")
build(pulumi.get_stack(), engine_config(), pulumi.ResourceOptions(providers=[provider], transforms=[annotate]))
