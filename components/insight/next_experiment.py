"""The next experiment for a bottleneck, as stack-key changes and advice (pure): its keys, quantities and
ratios read and written by the stack file's own code (components/spec/).

`ExperimentShape` is what the stack file says; each `Change` (components/spec/stack_changes.py) one
stack key's new value, named as `pulumi config` names it. bottleneck.py re-exports both. The changes
per bottleneck:

- hot-ps: tfk8s's trainer with partition none or range: partition auto. A team's program: no
  key, the advice names the hot PS and how to partition what lives on it.
- ps-bound: the PS doubled (ps.replicas, or cluster.ratio where the stack counts PS by it); on a
  saturated server the CPU request of each PS doubled instead, the other said in the advice.
- worker-bound: colocated PS that take a share of a saturated server get servers of their own
  (placement isolated, the pool split, ps.pool); else the workers doubled.
- idle: no key; the advice names the cause the figures show, else the input pipeline.
- none: the PS and the workers doubled; colocated PS and workers that fill a server together are
  isolated first, as for worker-bound.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Optional

from ..spec.kubernetes_limits import DNS1123_LABEL_MAX
from ..spec.model_paths import stack_key
from ..spec.quantities import QUANTITY_PATTERN, quantity_value
from ..spec.ratio import ps_count_for_ratio
from ..spec.stack_changes import Change
from .bottleneck_figures import BUSY, ISOLATE_MIN_PS_SHARE, Figures, ServerLoad, load_of
from .experiment_shape import ExperimentShape

# The keys the next experiment changes, named by the models that read them.
KEY_PS_REPLICAS = stack_key("cluster", "ps", "replicas")
KEY_PS_CPU = stack_key("cluster", "ps", "cpu")
KEY_PS_POOL = stack_key("cluster", "ps", "pool")
KEY_WORKER_REPLICAS = stack_key("cluster", "workers", "replicas")
KEY_WORKER_GPUS = stack_key("cluster", "workers", "gpus")
KEY_RATIO = stack_key("cluster", "ratio")
KEY_PLACEMENT = stack_key("cluster", "placement")
KEY_NODE_POOLS = stack_key("nodePools")
KEY_PARTITION = stack_key("trainer", "partition")
KEY_STEPS_PER_CALL = stack_key("trainer", "stepsPerCall")


@dataclass(frozen=True)
class NextExperiment:
    changes: tuple[Change, ...] = ()
    advice: tuple[str, ...] = ()


def doubled_cpu(quantity: str) -> str:
    """Twice a CPU quantity, written as Kubernetes writes one: whole cores ("4"), else millicores ("400m")."""
    text = quantity.strip()
    if re.match(QUANTITY_PATTERN, text) is None:
        raise ValueError(f"CPU '{quantity}' is not a Kubernetes quantity such as '500m' or '2'")
    # Kubernetes keeps CPU to the millicore and rounds a finer figure up.
    millicores = math.ceil(round(quantity_value(text) * 2000, 6))
    return str(millicores // 1000) if millicores % 1000 == 0 else f"{millicores}m"


def ratio_for(ps: int, workers: int) -> str:
    """The simplest 'P:W' that gives `ps` PS for `workers` workers."""
    common = math.gcd(ps, workers)
    return f"{ps // common}:{workers // common}"


def replica_changes(shape: ExperimentShape, ps: int, workers: int) -> list[Change]:
    """`ps` PS and `workers` workers, in the keys the stack counts them by."""
    changes = []
    if shape.ratio is not None and ps > 0:
        if ps_count_for_ratio(shape.ratio, workers) != ps:
            changes.append(Change(KEY_RATIO, shape.ratio, ratio_for(ps, workers)))
        if shape.ps_replicas_beside_ratio and ps != shape.ps_replicas:
            changes.append(Change(KEY_PS_REPLICAS, shape.ps_replicas, ps))
    elif ps != shape.ps_replicas:
        changes.append(Change(KEY_PS_REPLICAS, shape.ps_replicas, ps))
    if workers != shape.worker_replicas:
        changes.append(Change(KEY_WORKER_REPLICAS, shape.worker_replicas, workers))
    return changes


def _percent(share: float) -> str:
    return f"{share * 100:.0f}%"


def describe_server(load: ServerLoad) -> str:
    return (
        f"{load.server} is at {_percent(load.used_share)} of its {load.cores:g} cores "
        f"(PS {_percent(load.ps_share)}, workers {_percent(load.worker_share)})"
    )


def _names(names: tuple[str, ...]) -> str:
    return ", ".join(names)


def _written_pools(shape: ExperimentShape) -> list[dict[str, Any]]:
    if shape.node_pools:
        return [dict(pool) for pool in shape.node_pools]
    return [{"name": name, "nodes": list(servers)} for name, servers in shape.pools.items()]


def _new_pool_name(base: str, taken: set[str]) -> str:
    for suffix in ["-ps"] + [f"-ps-{n}" for n in range(2, len(taken) + 3)]:
        name = base[: DNS1123_LABEL_MAX - len(suffix)].rstrip("-") + suffix
        if name not in taken:
            return name
    raise AssertionError("unreachable: more suffixes than pools")


def _shared_saturated(shape: ExperimentShape, figures: Figures) -> tuple[ServerLoad, ...]:
    """Saturated servers where colocated PS take a share worth servers of their own."""
    if shape.placement != "colocated":
        return ()
    return tuple(load for load in figures.saturated if load.ps_share >= ISOLATE_MIN_PS_SHARE and load.worker_cores > 0)


def _ps_server_count(
    servers: tuple[str, ...], in_pool: list[ServerLoad], shape: ExperimentShape, figures: Figures
) -> tuple[int, float]:
    """How many of the pool's servers the PS get, and the PS' share of the CPU PS and workers used.

    In proportion to that share, so that the workers keep the servers' worth they used; at least
    as many as the PS and the chief (who follows the PS' pool) use or request, so that they fit;
    at least one, at most one per PS, and the workers keep at least one."""
    ps_cores = sum(load.ps_cores for load in in_pool)
    worker_cores = sum(load.worker_cores for load in in_pool)
    share = ps_cores / (ps_cores + worker_cores)
    per_server = sum(load.cores for load in in_pool) / len(in_pool)
    with_ps = [t for t in figures.tasks if t.node in servers and load_of(t.role) in ("variables", "coordination")]
    need = max(sum(t.cores or 0.0 for t in with_ps), sum(t.allowed or 0.0 for t in with_ps))
    wanted = max(1, round(len(servers) * share), math.ceil(round(need / per_server, 6)))
    return min(wanted, len(servers) - 1, shape.ps_replicas), share


def isolate(shape: ExperimentShape, figures: Figures) -> Optional[NextExperiment]:
    """PS and workers on disjoint servers, the pool split (_ps_server_count); None where the pool
    cannot be split or no saturated server is worth it."""
    shared = _shared_saturated(shape, figures)
    servers = shape.pools.get(shape.worker_pool, ())
    in_pool = [load for load in figures.servers if load.server in servers]
    if not shared or not in_pool or len(servers) < 2 or shape.ps_replicas < 1:
        return None
    count, share = _ps_server_count(servers, in_pool, shape, figures)
    ps_servers, worker_servers = servers[-count:], servers[:-count]
    old_pools = _written_pools(shape)
    ps_pool = _new_pool_name(shape.worker_pool, {pool["name"] for pool in old_pools})
    new_pools = []
    for pool in old_pools:
        if pool["name"] == shape.worker_pool:
            new_pools.append({**pool, "nodes": list(worker_servers)})
            new_pools.append({"name": ps_pool, "nodes": list(ps_servers)})
        else:
            new_pools.append(pool)
    changes = (
        Change(KEY_PLACEMENT, shape.placement, "isolated"),
        Change(KEY_NODE_POOLS, old_pools, new_pools),
        Change(KEY_PS_POOL, shape.ps_pool, ps_pool),
    )
    advice = (
        f"{'; '.join(describe_server(load) for load in shared)}: the PS and the workers compete for "
        f"{'it' if len(shared) == 1 else 'them'}. "
        f"Isolated placement gives the PS (and the chief) pool {ps_pool} ({_names(ps_servers)}) and leaves the "
        f"workers {_names(worker_servers)}, after the CPU each used ({_percent(share)} PS) and requested.",
    )
    return NextExperiment(changes, advice)


def _team_program_partitioning(hot: tuple[str, ...], ps_count: int) -> str:
    return (
        f"Partition the variables that live on {_names(hot)} over the {ps_count} PS: in TF2, "
        "ParameterServerStrategy(cluster_resolver, variable_partitioner="
        f"tf.distribute.experimental.partitioners.FixedShardsPartitioner(num_shards={ps_count})) (or "
        "MinSizePartitioner); in TF1, tf.get_variable(..., partitioner="
        f"tf.fixed_size_partitioner({ps_count})). One unpartitioned variable lives on one PS."
    )


def hot_ps(shape: ExperimentShape, figures: Figures, hot: tuple[str, ...]) -> NextExperiment:
    lead = f"{_names(hot)} {'does' if len(hot) == 1 else 'do'} most of the PS work (imbalance {figures.ps_imbalance})"
    if shape.partition is None:
        return NextExperiment((), (f"{lead}. {_team_program_partitioning(hot, shape.ps_replicas)}",))
    if shape.partition in ("none", "range"):
        why = (
            "one shard holds the whole embedding, so one PS serves every lookup"
            if shape.partition == "none"
            else "range shards keep ids in ranges, so the frequent ids' range loads one PS"
        )
        return NextExperiment(
            (Change(KEY_PARTITION, shape.partition, "auto"),),
            (f"{lead}: with partition {shape.partition} {why}; auto gives one shard per PS and hashes the ids.",),
        )
    return NextExperiment(
        (),
        (
            f"{lead}, though the embedding is already sharded with ids hashed: a few very frequent ids (hot ids, "
            "skewed data such as tfk8s:trainer.zipfExponent's) land on one PS, which more PS do not spread. "
            "Keep tfk8s:trainer.dedup true (each distinct id looked up once per batch); a larger batch shares "
            "each hot id's lookup among more examples.",
        ),
    )


def _partition_for_more_ps(shape: ExperimentShape, ps: int) -> list[Change]:
    if shape.partition == "none" and ps > 1:
        return [Change(KEY_PARTITION, "none", "auto")]
    return []


def _requests_past_cores(figures: Figures) -> list[str]:
    """Servers on which doubling the PS' requested CPU (more PS or more CPU each) would pass the cores."""
    past = []
    for load in figures.servers:
        on_it = [t for t in figures.tasks if t.node == load.server]
        ps_requested = sum(t.allowed or 0.0 for t in on_it if load_of(t.role) == "variables")
        requested = sum(t.allowed or 0.0 for t in on_it)
        if ps_requested and requested + ps_requested > load.cores:
            past.append(load.server)
    return past


def ps_bound(shape: ExperimentShape, figures: Figures) -> NextExperiment:
    ps = max(1, shape.ps_replicas) * 2
    more_ps = replica_changes(shape, ps, shape.worker_replicas) + _partition_for_more_ps(shape, ps)
    more_cpu = [Change(KEY_PS_CPU, shape.ps_cpu, doubled_cpu(shape.ps_cpu))]
    ps_on_full = [load for load in figures.saturated if load.ps_cores > 0]
    advice = []
    if ps_on_full:
        changes = more_cpu
        advice.append(
            f"{'; '.join(describe_server(load) for load in ps_on_full)}. On a full server the kernel shares "
            f"the cores by request: {KEY_PS_CPU} {shape.ps_cpu} -> {more_cpu[0].new} gives each PS twice the share. "
            f"The other way: {ps} PS, which the same servers must hold."
        )
    else:
        changes = more_ps
        advice.append(
            f"{ps} PS share the PS work where the variables are partitioned over them. The other way: "
            f"{KEY_PS_CPU} {shape.ps_cpu} -> {more_cpu[0].new}; with no CPU limit a PS already uses spare "
            "cores, so a larger request helps only where its server is full."
        )
    if shape.partition is None:
        advice.append("More PS share the work only if the program partitions its variables over every PS.")
    past = _requests_past_cores(figures)
    if past:
        advice.append(
            f"The PS' requests, doubled, would pass the cores of {_names(tuple(past))}: add servers to the pool."
        )
    return NextExperiment(tuple(changes), tuple(advice))


def worker_bound(shape: ExperimentShape, figures: Figures) -> NextExperiment:
    advice = []
    if figures.hot_ps:
        advice.append(
            f"{_names(figures.hot_ps)} already {'does' if len(figures.hot_ps) == 1 else 'do'} most of the PS work "
            f"(imbalance {figures.ps_imbalance}): "
            "it will be the limit once the workers are many; partition what lives on it."
        )
    isolated = isolate(shape, figures)
    if isolated is not None:
        return NextExperiment(isolated.changes, isolated.advice + tuple(advice))
    workers = shape.worker_replicas * 2
    ps = (
        ps_count_for_ratio(shape.ratio, workers)
        if shape.ratio is not None and shape.ps_replicas > 0
        else shape.ps_replicas
    )
    changes = replica_changes(shape, ps, workers)
    if shape.ratio is not None and shape.ps_replicas > 0:
        advice.append(f"cluster.ratio {shape.ratio} gives {ps} PS for {workers} workers.")
    full = [load for load in figures.saturated if load.worker_cores > 0]
    if full:
        advice.append(
            f"{'; '.join(describe_server(load) for load in full)}: the new workers need servers too; add nodes to "
            f"pool {shape.worker_pool} ({KEY_NODE_POOLS})."
        )
    if shape.worker_gpus == 0:
        advice.append(f"GPUs are the other way: {KEY_WORKER_GPUS} with a pool whose nodes have them (nodePools[].gpu).")
    return NextExperiment(tuple(changes), tuple(advice))


def idle(shape: ExperimentShape, figures: Figures, step_time_s: Optional[float]) -> NextExperiment:
    advice = []
    if figures.not_running:
        advice.append(
            f"{_names(figures.not_running)} did not run for the whole window: `python -m components status` "
            "on this stack says why (Pending, restarts, the node)."
        )
    slow = tuple(task for task in figures.stragglers if task not in figures.not_running)
    if slow:
        advice.append(f"{_names(slow)} straggles (under half the other workers' CPU): look at its server and its log.")
    near = figures.servers_near_link()
    if near:
        advice.append(
            f"The tasks on {_names(near)} move close to a 1 Gbit/s link: they may wait on the network. Fewer "
            "bytes per step (partitioned variables, dedup of ids) or the PS spread over more servers."
        )
    chief = [t for t in figures.of_role("chief") if t.utilisation is not None and t.utilisation >= BUSY]
    if chief and shape.partition is not None:
        advice.append(
            f"The chief is busy while PS and workers wait: it schedules steps too slowly; raise {KEY_STEPS_PER_CALL}."
        )
    if not advice:
        advice.append(
            "Nothing else stands out: the likely wait is the input pipeline. Prefetch (dataset.prefetch("
            "tf.data.AUTOTUNE)), read and parse in parallel (interleave and map with num_parallel_calls="
            "tf.data.AUTOTUNE), and look at where the data is read from."
        )
    if step_time_s is not None:
        advice.append(f"The chief's step time over the window: {step_time_s:g} s.")
    return NextExperiment((), tuple(advice))


def more_of_everything(shape: ExperimentShape, figures: Figures) -> NextExperiment:
    """PS and workers doubled; where colocated PS and workers fill a server together, their own
    servers first (more tasks on full servers would only share the same cores)."""
    if figures.ps.measured + figures.workers.measured == 0:
        return NextExperiment(
            (),
            (
                "No figures to go on: run diagnose again once the tasks run and the metrics have read each "
                "of them (metrics-server needs two readings of a pod).",
            ),
        )
    isolated = isolate(shape, figures)
    if isolated is not None:
        return isolated
    ps = shape.ps_replicas * 2
    workers = shape.worker_replicas * 2
    changes = replica_changes(shape, ps, workers) + _partition_for_more_ps(shape, ps)
    advice = ["Nothing stands out at this size: the next step is more of everything."]
    if figures.saturated:
        advice.append(
            f"{'; '.join(describe_server(load) for load in figures.saturated)}: more tasks need more servers "
            f"too; add nodes to the pools ({KEY_NODE_POOLS})."
        )
    return NextExperiment(tuple(changes), tuple(advice))


def next_experiment(
    bottleneck: str, shape: ExperimentShape, figures: Figures, hot: tuple[str, ...], step_time_s: Optional[float]
) -> NextExperiment:
    """The changes and advice for `bottleneck`, found in `figures` (`hot`: the PS that hot-ps names)."""
    if bottleneck == "hot-ps":
        return hot_ps(shape, figures, hot)
    if bottleneck == "ps-bound":
        return ps_bound(shape, figures)
    if bottleneck == "worker-bound":
        return worker_bound(shape, figures)
    if bottleneck == "idle":
        return idle(shape, figures, step_time_s)
    return more_of_everything(shape, figures)
