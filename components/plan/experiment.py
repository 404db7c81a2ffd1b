"""One experiment, fully derived: validated config + plan + trainer bundle.

Everything the Kubernetes objects need is computed here once, without Pulumi,
so the components only turn it into resources.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass, field
from functools import cached_property
from typing import Optional

from ..spec.kubernetes_limits import MAX_ARG_STRLEN, MAX_CONFIG_MAP_BYTES
from ..spec.models import CONFIG_NAMESPACE, StackConfig, Workload
from ..spec.pools import NodePoolSpec
from ..spec.program import ProgramSpec
from ..spec.roles import CHECKPOINT_MOUNT, RoleName
from ..spec.sizing import (
    SCRATCH_BASE_BYTES,
    chief_scratch_bytes,
    mebibytes,
)
from ..spec.task_roles import PLACED_ROLES, PS, role_of
from ..spec.tensorboard_rules import tensorboard_log_dir
from ..spec.trainer_contract import TrainerSettings
from .labels import node_role, server_label_values
from .object_names import ObjectNames
from .planner import Plan, plan_stack
from .program_source import ProgramSource
from .tf_config import TFConfigRenderer, cluster_spec
from .trainer_bundle import TrainerBundle
from .workloads import TaskGroup, max_group_name, pool_servers, task_groups


@dataclass(frozen=True)
class Experiment:
    config: StackConfig
    trainer_bundle: TrainerBundle
    # The program's `source` folder, when the stack runs its own program and ships one.
    program_source: Optional[ProgramSource] = None
    # `tfk8s:program.env` names whose values are secrets (components/spec/secrets.py): they reach the
    # tasks through the experiment's own Secret, never as a value in an object.
    secret_env: frozenset[str] = frozenset()
    plan: Plan = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "plan", plan_stack(self.config))

    @property
    def stack(self) -> str:
        return self.config.stack

    @property
    def namespace(self) -> str:
        return self.config.namespace

    @property
    def shares_namespace(self) -> bool:
        return self.config.shares_namespace

    @property
    def labels_nodes(self) -> bool:
        """tfk8s labels its pools' nodes (placeBy: labels), which needs patch on Nodes."""
        return self.config.cluster.place_by == "labels"

    @cached_property
    def names(self) -> ObjectNames:
        """The names of the experiment's objects in its namespace."""
        return ObjectNames.of(self.config)

    @cached_property
    def groups(self) -> list[TaskGroup]:
        """The workloads that run the plan's tasks: one per role (JobSet), or per role per server."""
        return task_groups(self.plan, pool_servers(self.config), max_group_name(self.workload, self.names))

    @property
    def workload(self) -> Workload:
        return self.config.cluster.workload

    @cached_property
    def tf_config(self) -> TFConfigRenderer:
        return TFConfigRenderer(cluster_spec(self.groups, self.namespace, self.workload, self.names))

    @cached_property
    def cluster_as_file(self) -> bool:
        """The cluster reaches the trainer's tasks as a mounted file: a JobSet's, past one variable's
        limit. Never a program's: TF_CONFIG, which it reads, is one variable."""
        _, size = self.tf_config.largest_env_string(self.workload)
        return self.program is None and self.workload == "jobset" and size > MAX_ARG_STRLEN

    @cached_property
    def trainer_settings(self) -> TrainerSettings:
        """The settings the pods run: the stack's, with checkpoints on the chief's volume if it has one."""
        settings = self.config.trainer
        if self.config.cluster.chief.checkpoint_volume is not None:
            settings = dataclasses.replace(settings, checkpoint_dir=CHECKPOINT_MOUNT)
        return settings

    @cached_property
    def tensorboard_log_dir(self) -> Optional[str]:
        """What TensorBoard reads and the tasks have as TFK8S_TENSORBOARD_DIR; None without it."""
        return tensorboard_log_dir(self.config)

    @cached_property
    def trainer_settings_json(self) -> str:
        return self.trainer_settings.to_json()

    @property
    def program(self) -> Optional[ProgramSpec]:
        """The team's own program; None when the tasks run tfk8s's trainer."""
        return self.config.program

    @cached_property
    def trainer_hash(self) -> str:
        """Hash of everything the tasks take from ConfigMaps: the trainer's code and settings, or
        the program's source, the TF cluster, and with tfk8s:logs the log shipper's code. Neither a
        mounted ConfigMap nor envFrom restarts a running pod, so a pod template annotation of this
        hash is what rolls every task (the chief's Job included) when one of them changes. (A
        program's command, args and env, and the shell that starts the shipper, are in the pod
        template itself; the collector's code is not the tasks': it rolls the collector alone,
        components/objects/log_archive.py.)"""
        if self.program is None:
            code = f"{self.trainer_bundle.sha256}\0{self.trainer_settings_json}"
        else:
            code = self.program_source.sha256 if self.program_source is not None else "no source"
        if self.config.logs is not None:
            code += f"\0{self.trainer_bundle.shipper_sha256}"
        return hashlib.sha256(f"{code}\0{self.tf_config.cluster_json}".encode()).hexdigest()

    @property
    def ps_memory(self) -> str:
        return self.memory_of(PS.name)

    def memory_of(self, task_type: RoleName) -> str:
        """A task's memory request and limit (its role's `memory`)."""
        return role_of(task_type).memory(self.config)

    @property
    def scratch_base(self) -> str:
        """The size limit of a scratch volume that holds no checkpoints (every task's but the chief's)."""
        return mebibytes(SCRATCH_BASE_BYTES)

    def scratch_size(self, task_type: str) -> str:
        """The size limit of a task's scratch volume (and the chief's ephemeral-storage request)."""
        if role_of(task_type).checkpoint_access != "write":
            return self.scratch_base
        # "default" is the chief's scratch folder (trainer/chief.py); a volume or a remote URL is not.
        on_scratch = self.trainer_settings.checkpoint_dir == "default"
        return mebibytes(chief_scratch_bytes(self.trainer_settings, on_scratch))

    @cached_property
    def server_label_values(self) -> dict[str, str]:
        """Each named server's value of its node label `server.tfk8s.io/<stack>`."""
        values: dict[str, str] = {}
        for pool in self.config.node_pools:
            values.update(server_label_values(list(pool.nodes or ())))
        return values

    @property
    def ps_pool(self) -> NodePoolSpec:
        return self.config.pools[self.config.cluster.ps_pool]

    @property
    def worker_pool(self) -> NodePoolSpec:
        return self.config.pools[self.config.cluster.workers.pool]

    def used_pools(self) -> list[NodePoolSpec]:
        """Pools the cluster runs in, PS pool first, each once."""
        pools = [self.ps_pool]
        if self.worker_pool.name != self.ps_pool.name:
            pools.append(self.worker_pool)
        return pools

    @cached_property
    def _pool_roles(self) -> dict[str, str]:
        task_types: dict[str, set[str]] = {}
        for placement in self.plan.placements:
            if placement.task.type in PLACED_ROLES:
                task_types.setdefault(placement.pool, set()).add(placement.task.type)
        return {pool: node_role(types) for pool, types in task_types.items()}

    def pool_role(self, pool_name: str) -> str:
        """What the plan runs on the pool's servers: ps, worker or mixed."""
        return self._pool_roles[pool_name]


def tf_config_size_errors(experiment: Experiment) -> list[str]:
    """A TF cluster the tasks could not be given is an error now, not a crash loop later."""
    tasks = sum(group.count for group in experiment.groups)
    if experiment.program is not None:
        _, size = experiment.tf_config.largest_env_string(experiment.workload, program=True)
        if size <= MAX_ARG_STRLEN:
            return []
        return [
            f"{CONFIG_NAMESPACE}:cluster.workers.replicas: {tasks:,} tasks make a TF_CONFIG of {size:,} bytes, but "
            f"a program gets TF_CONFIG in its environment, and Linux passes at most {MAX_ARG_STRLEN:,} bytes in one "
            f"variable (about {tasks * MAX_ARG_STRLEN // size:,} tasks with these names); use fewer PS and workers "
            "or a shorter stack name, or run tfk8s's trainer (leave out tfk8s:program), which reads a larger "
            "cluster from a file"
        ]
    if experiment.workload == "jobset":
        size = len(experiment.tf_config.cluster_json.encode())
        if size <= MAX_CONFIG_MAP_BYTES:
            return []
        return [
            f"{CONFIG_NAMESPACE}:cluster.workers.replicas: {tasks:,} tasks make a cluster of {size:,} bytes, but "
            f"a ConfigMap holds at most {MAX_CONFIG_MAP_BYTES:,} (about {tasks * MAX_CONFIG_MAP_BYTES // size:,} "
            "tasks with these names); use fewer PS and workers, or a shorter stack name"
        ]
    variable, size = experiment.tf_config.largest_env_string(experiment.workload)
    if size <= MAX_ARG_STRLEN:
        return []
    return [
        f"{CONFIG_NAMESPACE}:cluster.workers.replicas: {tasks:,} tasks make a {variable} of {size:,} bytes, "
        f"but Linux passes at most {MAX_ARG_STRLEN:,} bytes in one environment variable (about "
        f"{tasks * MAX_ARG_STRLEN // size:,} tasks with these names); use fewer PS and workers, shorter "
        f"server and stack names, or {CONFIG_NAMESPACE}:cluster.workload: jobset (which passes a larger "
        "cluster as a file)"
    ]
