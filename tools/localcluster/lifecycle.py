"""A whole local cluster: the control plane, kwok nodes for the stacks' servers, real nodes for some.

`make cluster-up STACK=s REAL=srv-00,srv-01` and the tests start it through
`up`; `down` stops everything and puts the host back, also after a start that
failed half-way.
"""

from __future__ import annotations

from typing import Iterable

from components.objects.loading import load_experiment

from . import addons, control_plane, paths, processes, realnodes, training_operator
from .client import api_client
from .experiments import Progress, quiet
from .nodes import create_fake_nodes, label_real_nodes


def up(
    where: paths.ClusterDir = paths.DEFAULT_CLUSTER,
    stacks: Iterable[str] = (),
    real: Iterable[str] = (),
    tie_to_parent: bool = False,
    say: Progress = quiet,
    tfjob: bool = False,
) -> control_plane.ControlPlane:
    """Start the cluster; the servers of `stacks` are kwok nodes except those named in `real`; with
    `tfjob`, Kubeflow's TFJob runs there too."""
    real = list(real)
    configs = [load_experiment(stack).config for stack in stacks]
    realnodes.teardown(where, say)  # what a killed earlier run left behind
    plane = control_plane.up(where, tie_to_parent=tie_to_parent, tfjob=tfjob)
    if tfjob:
        say(f"TFJob: {training_operator.TFJOB_CRD} and Kubeflow's training operator")
    try:
        if real:
            realnodes.start(where, plane.server, real, tie_to_parent=tie_to_parent, say=say)
            label_real_nodes(api_client(where.kubeconfig), real)
        fakes = create_fake_nodes(api_client(where.kubeconfig), configs, skip=set(real))
        if fakes:
            say(f"{len(fakes)} kwok nodes for {', '.join(stacks)}")
        quota = addons.create_cluster_queue(api_client(where.kubeconfig))
        say(f"Kueue ClusterQueue {addons.LOCAL_CLUSTER_QUEUE}: " + ", ".join(f"{k} {v}" for k, v in quota.items()))
    except BaseException:
        down(where, say)
        raise
    return plane


def down(where: paths.ClusterDir = paths.DEFAULT_CLUSTER, say: Progress = quiet) -> list[str]:
    """Stop the real nodes (putting the host back), then the control plane; the names stopped."""
    problems = realnodes.teardown(where, say)
    stopped = control_plane.down(where)
    if problems:
        raise processes.ClusterError("could not undo: " + "; ".join(problems))
    return stopped
