"""The rules that relate a stack's pools to its cluster: each returns messages, or nothing."""

from __future__ import annotations

import math
import posixpath
from typing import Collection

from .combination_rules import combination_checks
from .kubernetes_limits import dns1123_label_problem, image_reference
from .limit_checks import kubernetes_limit_checks
from .models import CONFIG_NAMESPACE, MAX_TASKS, StackConfig
from .placement_rules import placement_problems
from .program import SCRATCH_MOUNT
from .quantities import quantity_value
from .roles import is_remote
from .sizing import checkpoint_bytes, embedding_shard_bytes
from .task_counts import task_counts
from .task_roles import role_of


def cross_checks(config: StackConfig, secret_env: Collection[str] = ()) -> list[str]:
    """Rules that relate keys to each other (pools to the cluster, a task's settings to the tasks there
    are, a program's volumes to tfk8s's mounts) and Kubernetes' limits on every value."""
    return [*_pool_checks(config), *combination_checks(config), *kubernetes_limit_checks(config, secret_env)]


def _pool_checks(config: StackConfig) -> list[str]:
    """Rules that relate pools to the cluster; each returns a message or nothing."""
    errors: list[str] = []
    cluster = config.cluster
    pools = config.pools
    ns = CONFIG_NAMESPACE

    if cluster.namespace is None and dns1123_label_problem(config.namespace):
        errors.append(
            f"{ns}:cluster.namespace: the default namespace '{config.namespace}' made from the "
            "stack name is not a DNS label; set cluster.namespace"
        )

    seen_names: set[str] = set()
    for index, pool in enumerate(config.node_pools):
        if pool.name in seen_names:
            errors.append(f"{ns}:nodePools[{index}].name: pool '{pool.name}' is defined twice")
        seen_names.add(pool.name)

    named = (  # no PS: the ps pool is the workers'
        ("ps", cluster.ps.pool),
        ("workers", cluster.workers.pool),
        ("evaluator", cluster.evaluator.pool if cluster.evaluator is not None else None),
    )
    for role, pool_name in ((role, name) for role, name in named if name is not None):
        if pool_name not in pools:
            errors.append(f"{ns}:cluster.{role}.pool: unknown pool '{pool_name}'; defined pools: {', '.join(pools)}")
    if errors:
        return errors

    ps_pool, worker_pool = pools[cluster.ps_pool], pools[cluster.workers.pool]

    errors.extend(
        str(problem)
        for problem in placement_problems(
            cluster.placement, ps_pool.name, ps_pool.nodes, worker_pool.name, worker_pool.nodes
        )
    )

    if cluster.place_by == "hostname":
        for index, pool in enumerate(config.node_pools):
            if pool.gpu is not None and pool.gpu.labelled_by == "tfk8s":
                errors.append(
                    f"{ns}:nodePools[{index}].gpu.labelledBy: tfk8s writes no node label with placeBy: hostname "
                    "(the pool's node names say where its GPUs are); drop labelledBy, or use gfd"
                )

    # A node carries one pool label, so it can belong to one pool only.
    owner: dict[str, str] = {}
    for pool in config.node_pools:
        for node in pool.nodes or ():
            other = owner.setdefault(node, pool.name)
            if other != pool.name and not (
                cluster.placement == "isolated" and {other, pool.name} == {ps_pool.name, worker_pool.name}
            ):
                errors.append(
                    f"{ns}:nodePools: node '{node}' is listed in pools '{other}' and "
                    f"'{pool.name}'; a node belongs to one pool"
                )

    if config.program is None and cluster.ps_count == 0:
        errors.append(
            f"{ns}:cluster.ps: no PS (ps.replicas: 0, or ps and ratio left out: workers only) cannot run tfk8s's "
            "trainer, which trains with parameter servers; give PS (ps.replicas or ratio), or run your own "
            "program (tfk8s:program)"
        )
        return errors
    errors.extend(evaluator_checks(config))
    if config.program is not None:
        errors.extend(_program_checks(config))
    elif cluster.ps.memory is not None:
        shard = embedding_shard_bytes(config.trainer, cluster.ps_count)
        if quantity_value(cluster.ps.memory) < shard:
            errors.append(
                f"{ns}:cluster.ps.memory: {cluster.ps.memory} is below the {math.ceil(shard / 2**20)}Mi "
                f"that each PS's embedding shard needs ({config.trainer.embedding_rows} rows x "
                f"{config.trainer.embedding_dim} over {config.trainer.shard_count(cluster.ps_count)} "
                f"shard(s), optimizer slots included); raise it or leave it unset to derive it"
            )

    if cluster.chief.memory is not None and config.program is None:
        checkpoint = checkpoint_bytes(config.trainer)
        if quantity_value(cluster.chief.memory) < checkpoint:
            errors.append(
                f"{ns}:cluster.chief.memory: {cluster.chief.memory} is below the {math.ceil(checkpoint / 2**20)}Mi "
                f"of one checkpoint ({config.trainer.embedding_rows} rows x {config.trainer.embedding_dim}, "
                "optimizer slots included), which passes through the chief's memory when it saves; "
                "raise it or leave it unset to derive it"
            )

    volume = cluster.chief.checkpoint_volume
    if volume is not None and config.trainer.checkpoint_dir != "default":
        errors.append(
            f"{ns}:cluster.chief.checkpointVolume and {ns}:trainer.checkpointDir "
            f"('{config.trainer.checkpoint_dir}') are both set: the chief writes its checkpoints to one "
            "place; keep the volume and leave checkpointDir at 'default' (tfk8s points it at the volume), "
            "or drop the volume"
        )
    elif volume is not None and config.program is None and config.trainer.checkpoint_every == 0:
        errors.append(
            f"{ns}:cluster.chief.checkpointVolume: a volume for the chief's checkpoints, and "
            f"{ns}:trainer.checkpointEvery: 0 writes none; give checkpointEvery steps, or drop the volume"
        )
    elif config.program is None and _unwritable_in_pod(config.trainer.checkpoint_dir):
        errors.append(
            f"{ns}:trainer.checkpointDir: '{config.trainer.checkpoint_dir}' is a folder of the chief's pod outside "
            f"its scratch folder ({SCRATCH_MOUNT}), and the pod's root filesystem is read-only, so no checkpoint "
            f"could be written; leave checkpointDir at 'default' (the scratch folder), set "
            f"{ns}:cluster.chief.checkpointVolume, or give a remote URL (gs://, s3://, hdfs://)"
        )

    gpus = cluster.workers.gpus
    reference = image_reference(cluster.image)
    if gpus and cluster.gpu_image is None and reference is not None and reference.digest is not None:
        errors.append(
            f"{ns}:cluster.gpuImage: GPU workers need TensorFlow's GPU build, and image '{cluster.image}' "
            "is a digest, so its GPU build cannot be derived; set gpuImage (a tag or a digest)"
        )
    if gpus:
        if worker_pool.gpu is None:
            errors.append(
                f"{ns}:cluster.workers.gpus: {gpus} GPUs asked, but pool '{worker_pool.name}' "
                "has no GPUs; add gpu: {product, perNode} to the pool or set gpus: 0"
            )
        elif gpus > worker_pool.gpu.per_node:
            errors.append(
                f"{ns}:cluster.workers.gpus: {gpus} GPUs per worker do not fit on a node of "
                f"pool '{worker_pool.name}' ({worker_pool.gpu.per_node} per node)"
            )
    return errors


def evaluator_checks(config: StackConfig) -> list[str]:
    """The evaluator reads what the chief writes: it must be able to (its pools are known by now)."""
    cluster, ns = config.cluster, CONFIG_NAMESPACE
    evaluator = cluster.evaluator
    if evaluator is None or evaluator.replicas == 0:
        return []
    errors = []
    used = sorted({cluster.ps_pool, cluster.workers.pool})
    volume = cluster.chief.checkpoint_volume
    if evaluator.pool is not None and evaluator.pool not in used:
        errors.append(
            f"{ns}:cluster.evaluator.pool: pool '{evaluator.pool}' runs neither PS nor workers, and the evaluator "
            f"runs beside them; use {' or '.join(repr(pool) for pool in used)}, or leave it out (the chief's pool "
            "with checkpointVolume or GPU workers, else the workers')"
        )
    elif volume is not None and evaluator.pool is not None and evaluator.pool != cluster.chief_pool:
        errors.append(
            f"{ns}:cluster.evaluator.pool: '{evaluator.pool}', but the evaluator reads chief.checkpointVolume, a "
            f"ReadWriteOnce claim that only pods on the chief's server can mount, and the chief runs in pool "
            f"'{cluster.chief_pool}'; leave evaluator.pool out (or set it to '{cluster.chief_pool}')"
        )
    if config.program is not None:
        return errors  # a team's program knows where its checkpoints are
    memory = evaluator.memory
    if memory is not None and quantity_value(memory) < checkpoint_bytes(config.trainer):
        errors.append(
            f"{ns}:cluster.evaluator.memory: {memory} is below the "
            f"{math.ceil(checkpoint_bytes(config.trainer) / 2**20)}Mi of one checkpoint, which the evaluator loads "
            "whole; raise it or leave it unset to derive it"
        )
    if config.trainer.checkpoint_every == 0:
        errors.append(
            f"{ns}:cluster.evaluator: the evaluator evaluates the chief's checkpoints, and "
            f"{ns}:trainer.checkpointEvery: 0 writes none; give checkpointEvery steps, or drop the evaluator"
        )
    if volume is None and not is_remote(config.trainer.checkpoint_dir):
        errors.append(
            f"{ns}:cluster.evaluator: the chief writes its checkpoints to "
            f"'{config.trainer.checkpoint_dir}' in its own pod, which the evaluator cannot read; set "
            f"{ns}:cluster.chief.checkpointVolume (mounted read-only into the evaluator) or a remote "
            f"{ns}:trainer.checkpointDir (gs://, hdfs://, s3://)"
        )
    return errors


def task_count_problems(config: StackConfig) -> list[str]:
    """A stack past the largest experiment tfk8s is tested with, named by the field that makes it so:
    checked before anything is planned, since the plan is built task by task."""
    cluster = config.cluster
    counts = task_counts(config)
    workers, ps = counts["worker"], counts["ps"]
    # The training cluster's tasks, what the limit was measured on: the evaluator is outside it.
    tasks = sum(count for role, count in counts.items() if role_of(role).in_training_cluster)
    if tasks <= MAX_TASKS:
        return []
    if ps > workers:
        field = "ps.replicas" if cluster.ps.replicas is not None else "ratio"
    else:
        field = "workers.replicas"
    return [
        f"{CONFIG_NAMESPACE}:cluster.{field}: {workers:,} workers and {ps:,} PS make {tasks:,} tasks; tfk8s is "
        f"tested up to {MAX_TASKS:,} tasks (1,000 PS, 10,000 workers and a chief), so it plans no more: "
        "use fewer PS and workers"
    ]


def _program_checks(config: StackConfig) -> list[str]:
    """What a stack running the team's own program must say itself: tfk8s does not know its model."""
    ns = CONFIG_NAMESPACE
    errors = []
    if config.cluster.ps.memory is None and config.cluster.ps_count > 0:
        errors.append(
            f"{ns}:cluster.ps.memory: required with {ns}:program: tfk8s derives a PS's memory from its own "
            "trainer's model, and cannot from a program it does not know; give each PS its variables' "
            "share, optimizer slots included, plus about 1Gi for TensorFlow (e.g. '4Gi')"
        )
    program = config.program
    if program is not None and not program.has_chief and "chief" in config.cluster.model_fields_set:
        errors.append(
            f"{ns}:cluster.chief: with {ns}:program.done: {program.done_text} there is no chief task (worker 0 "
            "acts as chief); drop cluster.chief"
        )
    replicas = config.cluster.workers.replicas
    if program is not None and program.workers_to_finish(replicas) > replicas:
        errors.append(
            f"{ns}:program.done.workers: {program.workers_to_finish(replicas)} workers must exit 0, but "
            f"{ns}:cluster.workers.replicas runs {replicas}; give at most {replicas}"
        )
    return errors


def _unwritable_in_pod(path: str) -> bool:
    """An absolute path in the chief's pod outside its scratch folder (a relative one is under it, the
    working directory): not 'default', not a URL."""
    if path == "default" or is_remote(path) or not path.startswith("/"):
        return False
    normal = posixpath.normpath("/" + path.lstrip("/"))
    return normal != SCRATCH_MOUNT and not normal.startswith(f"{SCRATCH_MOUNT}/")
