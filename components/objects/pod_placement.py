"""Where a task's pod may run: node affinity to its pool (and to its planned server, strictly or by
preference), the GPU product it asks for, the toleration of the GPU taint and the stack's own, the
topology spread that gives each server exactly its share, and the evaluator beside the chief's
ReadWriteOnce checkpoint volume. pods.py puts them in the pod template.
"""

from __future__ import annotations

from typing import Any

from ..plan import labels as L
from ..plan.experiment import Experiment
from ..plan.workloads import TaskGroup
from ..spec.pools import NodePoolSpec
from ..spec.task_roles import checkpoint_writer, role_of

Manifest = dict[str, Any]


def reads_checkpoint_volume(experiment: Experiment, group: TaskGroup) -> bool:
    """The chief writes its checkpoint volume; the evaluator reads it."""
    return (
        role_of(group.task_type).checkpoint_access != "none"
        and experiment.config.cluster.chief.checkpoint_volume is not None
    )


def _has_gpus(experiment: Experiment, group: TaskGroup) -> bool:
    return role_of(group.task_type).takes_gpus and experiment.config.cluster.workers.gpus > 0


def tolerations(experiment: Experiment, group: TaskGroup) -> list[Manifest]:
    """GPU workers tolerate the GPU taint; every role adds the stack's own tolerations."""
    own = experiment.config.cluster.role(group.task_type).tolerations
    tolerations = (
        [{"key": L.GPU_TAINT, "operator": "Exists", "effect": "NoSchedule"}] if _has_gpus(experiment, group) else []
    )
    return tolerations + [toleration.manifest() for toleration in own if toleration.manifest() not in tolerations]


def pool_expressions(experiment: Experiment, pool: NodePoolSpec) -> list[Manifest]:
    if pool.selector is not None:
        return [{"key": key, "operator": "In", "values": [value]} for key, value in sorted(pool.selector.items())]
    assert pool.nodes is not None
    if not experiment.labels_nodes:
        # placeBy: hostname: the nodes' own label, which the kubelet writes, not tfk8s.
        return [{"key": L.HOSTNAME, "operator": "In", "values": list(pool.nodes)}]
    # The experiment's own key: another experiment's pool of the same name is not this one.
    # On a named node it also keeps the pod Pending until tfk8s has labelled the server.
    return [{"key": L.node_pool_key(experiment.stack), "operator": "In", "values": [pool.name]}]


def _selects_gpu_product(experiment: Experiment, pool: NodePoolSpec) -> bool:
    """A GPU pool's product is selected by its label: GFD's, or tfk8s's on nodes it labels (placeBy:
    hostname labels none, and a named pool's nodes already say where its GPUs are)."""
    return pool.gpu is not None and (pool.gpu_labeller == "gfd" or experiment.labels_nodes)


def affinity(experiment: Experiment, group: TaskGroup) -> Manifest:
    """Strict: exactly the planned server. Preferred: the pool, the server if it is up.

    Unpinned tasks (chief, spread placement) may run anywhere in their pool.
    """
    pool = experiment.config.pools[group.pool]
    strict_server = group.server is not None and experiment.plan.strict
    expressions = pool_expressions(experiment, pool)
    if _has_gpus(experiment, group) and pool.gpu and _selects_gpu_product(experiment, pool):
        labeller = pool.gpu_labeller
        assert labeller is not None  # a pool with a GPU always has a labeller
        expressions.append({"key": L.gpu_product_label(labeller), "operator": "In", "values": [pool.gpu.product]})

    required_term: Manifest = {"matchExpressions": expressions}
    node_affinity: Manifest = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [required_term]}}
    if group.server is not None:
        # matchFields on the node name: hostname labels need not equal node names.
        on_server = [{"key": "metadata.name", "operator": "In", "values": [group.server]}]
        if strict_server:
            required_term["matchFields"] = on_server
        else:
            # A lost server does not strand the task: it moves within the pool.
            node_affinity["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": 100, "preference": {"matchFields": on_server}}
            ]
    affinity: Manifest = {"nodeAffinity": node_affinity}
    if role_of(group.task_type).checkpoint_access == "read" and reads_checkpoint_volume(experiment, group):
        # A ReadWriteOnce claim is mounted on one server at a time: the chief's.
        writer = {"matchLabels": L.spread_selector(experiment.stack, checkpoint_writer().name)}
        affinity["podAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": writer, "topologyKey": L.HOSTNAME}]
        }
    return affinity


def topology_spread(experiment: Experiment, group: TaskGroup) -> list[Manifest]:
    role = role_of(group.task_type)
    if role.spread == "none":
        return []
    selector = {"matchLabels": L.spread_selector(experiment.stack, group.task_type)}
    if experiment.plan.strategy == "spread":
        return [
            {
                "maxSkew": 1,
                "topologyKey": L.HOSTNAME,
                # PS are kept apart; workers spread as well as the nodes allow.
                "whenUnsatisfiable": "DoNotSchedule" if role.spread == "apart" else "ScheduleAnyway",
                "labelSelector": selector,
            }
        ]
    if experiment.plan.pinning == "count":
        return _spread_by_count(experiment, group, selector)
    return []


def _spread_by_count(experiment: Experiment, group: TaskGroup, selector: Manifest) -> list[Manifest]:
    """Each server of the pool gets exactly its share of the role's tasks, from the scheduler itself.

    Even: no server holds two more than another (maxSkew 1 over the host name), counted over the
    servers a task may use now (nodeTaintsPolicy Honor: a cordoned or not-ready server is not one).
    Strict, capped: no server holds more than its share. Skew alone cannot say that: with one
    server down, the others would take its tasks one by one. Over tfk8s's own label of each
    server, `minDomains` (every server of the pool) makes the scheduler count a missing server as
    holding none while it is missing, so the others stay within the share and that server's
    tasks wait (Pending) for it. Two constraints need two keys: Kubernetes takes one per
    {topologyKey, whenUnsatisfiable}.
    """
    servers = len(experiment.plan.servers_of(group.pool))
    _, share = experiment.plan.share_bounds(group.task_type, group.pool)
    even: Manifest = {
        "maxSkew": 1,
        "topologyKey": L.HOSTNAME,
        "whenUnsatisfiable": "DoNotSchedule" if experiment.plan.strict else "ScheduleAnyway",
        "labelSelector": selector,
        "nodeTaintsPolicy": "Honor",
    }
    if not experiment.plan.strict:
        return [even]
    capped: Manifest = {
        "maxSkew": share,
        "topologyKey": L.node_server_key(experiment.stack),
        "whenUnsatisfiable": "DoNotSchedule",
        "minDomains": servers,
        "labelSelector": selector,
        "nodeTaintsPolicy": "Honor",
    }
    if not experiment.labels_nodes:
        return _spread_by_host_name(even, capped, servers)
    return [even, capped]


def _spread_by_host_name(even: Manifest, capped: Manifest, servers: int) -> list[Manifest]:
    """placeBy: hostname: both constraints over the host name, the one per-server key every node has.

    Kubernetes takes one constraint per {topologyKey, whenUnsatisfiable}, so the even spread becomes
    the scheduler's preference (ScheduleAnyway) and the cap stays a rule. `minDomains` one more
    than the pool's servers makes the scheduler take the global minimum as 0 always, so no server
    ever holds more than its share, whether or not a server is missing: with as many tasks as the
    shares add up to, every server holds exactly its share (with shares that differ by one, the
    preference decides which servers hold the larger one).
    """
    return [
        {**even, "whenUnsatisfiable": "ScheduleAnyway"},
        {**capped, "topologyKey": L.HOSTNAME, "minDomains": servers + 1},
    ]
