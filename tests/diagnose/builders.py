"""Measurements and stack shapes for the bottleneck rules' tests, written as a sampler would give them."""

from __future__ import annotations

import copy
from typing import Any, Optional, Sequence

from components.spec.models import StackConfig
from components.insight.bottleneck import ExperimentShape, Measurements, ServerSample, TaskSample, TrainerFacts

SERVER = "srv-00"


def task(
    name: str,
    cores: float | Sequence[float] | None,
    allowed: Optional[float],
    node: Optional[str] = SERVER,
    samples: int = 4,
    running: bool = True,
    network: Optional[float] = None,
) -> TaskSample:
    """A task whose CPU reads `cores` at each of `samples` samples (a sequence: those figures; None: never)."""
    if cores is None:
        series: tuple[float, ...] = ()
    elif isinstance(cores, (int, float)):
        series = (float(cores),) * samples
    else:
        series = tuple(cores)
    return TaskSample(name, name.split("-")[0], node, series, allowed, running, network)


def measured(
    ps: Sequence[float | None] = (),
    workers: Sequence[float | None] = (),
    ps_allowed: Optional[float] = 1.0,
    worker_allowed: Optional[float] = 1.0,
    chief: Optional[float] = None,
    server_cores: Optional[float] = None,
    samples: int = 4,
    extra: Sequence[TaskSample] = (),
    trainer: Optional[TrainerFacts] = None,
) -> Measurements:
    """PS and workers on one server, each at a constant CPU; with an allowance of 1 core by default,
    so that a task's cores are its utilisation and a figure reads as the rule's threshold does."""
    tasks = [task(f"ps-{i}", cores, ps_allowed, samples=samples) for i, cores in enumerate(ps)]
    tasks += [task(f"worker-{i}", cores, worker_allowed, samples=samples) for i, cores in enumerate(workers)]
    if chief is not None:
        tasks.append(task("chief-0", chief, 1.0, samples=samples))
    return Measurements(
        tasks=tuple(tasks) + tuple(extra),
        servers=(ServerSample(SERVER, server_cores),),
        seconds=15.0 * samples,
        samples=samples,
        source="metrics.k8s.io",
        trainer=trainer,
    )


def shape(**given: Any) -> ExperimentShape:
    """A colocated stack of 2 PS and 2 workers on one server, tfk8s's trainer partitioned; `given` replaces."""
    values: dict[str, Any] = {
        "placement": "colocated",
        "pools": {"servers": (SERVER,)},
        "ps_replicas": 2,
        "ps_pool": "servers",
        "ps_cpu": "200m",
        "worker_replicas": 2,
        "worker_pool": "servers",
        "worker_cpu": "400m",
        "worker_gpus": 0,
        "ratio": None,
        "partition": "auto",
    }
    return ExperimentShape(**{**values, **given})


def shape_of(config: StackConfig, values: dict[str, Any]) -> ExperimentShape:
    """What `diagnose` would read of a loaded stack (the stack file's own nodePools, as written)."""
    cluster = config.cluster
    return ExperimentShape(
        placement=cluster.placement,
        pools={pool.name: tuple(pool.nodes or ()) for pool in config.node_pools},
        ps_replicas=cluster.ps_count,
        ps_pool=cluster.ps.pool,
        ps_cpu=cluster.ps.cpu,
        worker_replicas=cluster.workers.replicas,
        worker_pool=cluster.workers.pool,
        worker_cpu=cluster.workers.cpu,
        worker_gpus=cluster.workers.gpus,
        ratio=cluster.ratio,
        partition=None if config.program is not None else config.trainer.partition,
        node_pools=tuple(values["tfk8s:nodePools"]),
        ps_replicas_beside_ratio=cluster.ratio is not None and cluster.ps.replicas is not None,
    )


def applied(values: dict[str, Any], changes) -> dict[str, Any]:
    """The stack's values with each change made, as `diagnose --write` would write them; each change's
    `from` must be what the stack holds (or the key absent, where it says None)."""
    values = copy.deepcopy(values)
    for change in changes:
        top, _, path = change.key.partition(".")
        if not path:
            assert values.get(top) == change.old, change
            values[top] = change.new
            continue
        node = values.setdefault(top, {})
        *parents, leaf = path.split(".")
        for parent in parents:
            node = node.setdefault(parent, {})
        assert node.get(leaf) in (change.old, None), change
        node[leaf] = change.new
    return values
