"""A whole local cluster: the control plane, kwok nodes for the stacks' servers, real nodes for some.

`make cluster-up STACK=s REAL=srv-00,srv-01` and the tests start it through
`up`; `down` stops everything and puts the host back, also after a start that
failed half-way.
"""

from __future__ import annotations

import time
from typing import Iterable

from components.objects.loading import load_experiment

from . import (
    addons,
    control_plane,
    host_claim,
    paths,
    processes,
    realnodes,
    realnodes_record,
    realnodes_teardown,
    training_operator,
)
from .client import api_client
from .experiments import Progress, quiet
from .nodes import create_fake_nodes, label_real_nodes

KILLED_PROCESSES_GRACE_S = 10.0


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
    realnodes_teardown.teardown(where, say)  # what a killed earlier run left behind
    if real:
        _put_back_what_a_killed_cluster_left(where, say)
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
    problems = realnodes_teardown.teardown(where, say)
    stopped = control_plane.down(where)
    if problems:
        raise processes.ClusterError("could not undo: " + "; ".join(problems))
    return stopped


def _put_back_what_a_killed_cluster_left(where: paths.ClusterDir, say: Progress) -> None:
    """Tear down the real nodes of another cluster folder (another checkout's, a benchmark's) whose
    run was killed outright, from the record it left; refuse while any of its processes runs."""
    holder = host_claim.claimant()
    if holder is None or holder == where.root.resolve():
        return
    other = paths.ClusterDir(holder)
    left = realnodes_record.RealNodes.load(other)
    if left is None:  # its folder is gone, or it tore down: the claim alone is stale
        host_claim.release(holder)
        return
    running = _still_running(left.processes)
    if running:
        raise processes.ClusterError(
            f"the real nodes of the cluster in {holder} are running ({', '.join(running)}); "
            "stop that cluster first (make cluster-down, or benchmarks/vs_tfjob.py --down, in its checkout)"
        )
    say(f"putting back what the killed cluster in {holder} left on this host")
    problems = realnodes_teardown.teardown(other, say)
    if problems:
        raise processes.ClusterError(f"could not undo what the cluster in {holder} left: " + "; ".join(problems))


def _still_running(recorded: dict[str, int]) -> list[str]:
    """The recorded processes that run, given a few seconds to end: those of a run killed a moment
    ago are still dying (killed with their parent, not yet exited)."""
    deadline = time.monotonic() + KILLED_PROCESSES_GRACE_S
    while True:
        running = sorted(name for name, pid in recorded.items() if processes.runs_a_node_binary(pid))
        if not running or time.monotonic() >= deadline:
            return running
        time.sleep(0.2)
