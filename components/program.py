"""The Pulumi program: read the stack's config once, build the components, export."""

from __future__ import annotations

import gc
import json
from typing import Any, Mapping

import pulumi
from pulumi.runtime import config as runtime_config

from .config import CONFIG_NAMESPACE, StackConfigError
from .experiment import Experiment, load_experiment_values
from .node_pool import NodePool, NodePoolArgs
from .objects import labelled_pools
from .tf_cluster import TFCluster, TFClusterArgs
from .stack_files import PROJECT_ROOT
from .trainer_bundle import load_trainer_bundle


def engine_config() -> dict[str, Any]:
    """All `tfk8s:*` values the engine passed, decoded.

    pulumi.Config reads one known key at a time; tfk8s needs every key of its
    namespace to reject typos, so it reads the runtime's config map.
    """
    merged = {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}
    values: dict[str, Any] = {}
    for key, raw in merged.items():
        if not key.startswith(f"{CONFIG_NAMESPACE}:"):
            continue
        try:
            values[key] = json.loads(raw) if isinstance(raw, str) else raw
        except json.JSONDecodeError:
            values[key] = raw  # a plain string value
    return values


def build(stack: str, values: Mapping[str, Any]) -> Experiment:
    """Validate, then register every resource of the experiment and export its plan."""
    experiment = load_experiment_values(stack, values, load_trainer_bundle(PROJECT_ROOT))
    config = experiment.config

    used = {pool.name for pool in experiment.used_pools()}
    for pool in config.node_pools:
        if pool.name not in used:
            pulumi.log.warn(f"stack '{stack}': node pool '{pool.name}' is not used by tfk8s:cluster")

    node_pools = {
        pool.name: NodePool(f"{stack}-pool-{pool.name}", NodePoolArgs(experiment, pool))
        for pool in labelled_pools(experiment)
    }
    cluster = TFCluster(
        stack,
        TFClusterArgs(
            experiment,
            server_labels={
                node: patch for pool in node_pools.values() for node, patch in pool.patches.items()
            },
            pool_labels=node_pools,
        ),
    )

    plan = experiment.plan
    pulumi.export("namespace", cluster.namespace)
    pulumi.export("placement", plan.by_server())
    pulumi.export("unpinned", plan.unpinned())
    pulumi.export("tasks", {t: plan.count(t) for t in ("chief", "ps", "worker")})
    pulumi.export("psMemory", experiment.ps_memory)
    return experiment


# A Pulumi program is a short-lived process that builds one large object graph
# (every resource with its inputs, outputs and futures) and exits. CPython's
# cycle collector rescans that growing graph again and again, so each task
# added costs more than the last, whatever the thresholds; reference counting
# frees nearly all of the program's garbage anyway. So the collector is off
# while the program runs: benchmarks/program_under_mocks.py prints the time
# and peak memory this trades (2,000 workers: linear time, about a tenth more
# memory).


def pause_garbage_collector() -> None:
    gc.freeze()  # what the imports built is never scanned again either
    gc.disable()


def main() -> None:
    pause_garbage_collector()
    stack = pulumi.get_stack()
    try:
        build(stack, engine_config())
    except StackConfigError as error:
        # RunError: the CLI shows the message alone, without a Python traceback.
        raise pulumi.RunError(str(error)) from None
