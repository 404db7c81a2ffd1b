"""Node labels, for the tools that cannot own a label as the Pulumi program does.

`pulumi up` labels a pool's servers with server-side-apply NodePatches under the experiment's
own field manager, and `pulumi destroy` releases exactly those labels. A rendered folder is for
`kubectl apply -f` and GitOps, where a `kind: Node` object is a node to delete: `kubectl delete
-f` or a prune would delete the real servers. So `render` never writes one. It writes the labels
as two scripts a user runs on purpose, `label-nodes.sh` and `unlabel-nodes.sh` (`kubectl label
node ...`; neither is a file `kubectl apply -f` reads), or, for `render -o yaml`, prints the
commands.
"""

from __future__ import annotations

import shlex

from ..plan.experiment import Experiment
from .experiment_objects import experiment_objects
from .manifests import Manifest

LABEL_SCRIPT = "label-nodes.sh"
UNLABEL_SCRIPT = "unlabel-nodes.sh"


def is_node(manifest: Manifest) -> bool:
    return manifest["kind"] == "Node"


def node_label_patches(experiment: Experiment) -> list[Manifest]:
    """The label patch of each server the experiment labels (what the NodePools apply)."""
    return [obj.manifest for obj in experiment_objects(experiment) if is_node(obj.manifest)]


def label_commands(experiment: Experiment) -> list[str]:
    """`kubectl label node` for each server: its labels for this experiment."""
    return [
        f"kubectl label node {shlex.quote(patch['metadata']['name'])} --overwrite "
        + " ".join(shlex.quote(f"{key}={value}") for key, value in patch["metadata"]["labels"].items())
        for patch in node_label_patches(experiment)
    ]


def unlabel_commands(experiment: Experiment) -> list[str]:
    """`kubectl label node` for each server, removing this experiment's labels and no other."""
    return [
        f"kubectl label node {shlex.quote(patch['metadata']['name'])} "
        + " ".join(shlex.quote(f"{key}-") for key in patch["metadata"]["labels"])
        for patch in node_label_patches(experiment)
    ]


def label_scripts(experiment: Experiment) -> list[tuple[str, str]]:
    """(file name, text) of the two scripts; none for an experiment that labels no server."""
    labels, unlabels = label_commands(experiment), unlabel_commands(experiment)
    if not labels:
        return []
    head = "#!/bin/sh\n# tfk8s, stack {stack}: {what}\nset -e\n"
    stack = experiment.stack
    return [
        (
            LABEL_SCRIPT,
            head.format(stack=stack, what="label the experiment's servers before `kubectl apply -f`")
            + "\n".join(labels)
            + "\n",
        ),
        (
            UNLABEL_SCRIPT,
            head.format(stack=stack, what="remove the experiment's labels, and no other, after `kubectl delete -f`")
            + "\n".join(unlabels)
            + "\n",
        ),
    ]
