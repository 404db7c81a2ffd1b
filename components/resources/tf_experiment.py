"""TFExperiment: one whole experiment as a component, for a platform team's own Pulumi program.

    from components.tf_experiment import TFExperiment, TFExperimentArgs

    TFExperiment("ranking-a", TFExperimentArgs(
        node_pools=[{"name": "servers", "nodes": ["srv-00", "srv-01"]}],
        cluster={"placement": "colocated", "ps": {"replicas": 2, "pool": "servers", "memory": "4Gi"},
                 "workers": {"replicas": 20, "pool": "servers"}},
        program={"source": "ranking", "command": ["python", "train.py"]},
    ), opts=pulumi.ResourceOptions(providers=[cluster_provider]))

The arguments are a stack file's `tfk8s:nodePools`, `tfk8s:cluster`,
`tfk8s:trainer`, `tfk8s:program`, `tfk8s:tensorboard` and `tfk8s:logs`, as mappings or
as the typed models (NodePoolSpec, ClusterSpec, TrainerSettings, ProgramSpec,
TensorBoardSpec, LogsSpec), validated by the same schema: a bad value raises
StackConfigError naming the experiment and the field before anything is
registered; an argument of another type than it takes, a TypeError naming it
(components/resources/arguments.py). A program's `source` folder is read from
`project_root` (a str or any os.PathLike): the Pulumi project's folder (the
working directory the CLI runs the program in) unless given. The name plays the stack's part (namespace
`tf-<name>`, labels). Its NodePools and TFCluster are its children, so a
provider, transforms or aliases given in `opts` reach every resource.

Its Outputs: `namespace`, `jobset` (the JobSet's name; None under the
StatefulSet model), `addresses` (TF_CONFIG's cluster: each role's task
addresses) and `pool_nodes` (the nodes each pool labelled), registered with
`register_outputs` and exported by the stack program too.

The project's own program (components/resources/entry_point.py) registers the same
NodePools and TFCluster at the top level, as it always has, so the resources
of existing stacks keep their URNs.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Union

import pulumi
from pydantic import BaseModel

from ..objects.experiment_objects import labelled_pools
from ..objects.loading import load_experiment_values
from ..plan.experiment import Experiment
from ..plan.labels import selector_text
from ..plan.trainer_bundle import load_trainer_bundle
from ..spec.logs import LogsSpec
from ..spec.models import CONFIG_NAMESPACE, ClusterSpec, StackConfig, StackConfigError
from ..spec.pools import NodePoolSpec
from ..spec.program import ProgramSpec
from ..spec.reach_rules import stack_warnings
from ..spec.secrets import ENV_PREFIX
from ..spec.stack_files import PROJECT_ROOT
from ..spec.task_roles import CHIEF, ROLES, role_of
from ..spec.tensorboard import TensorBoardSpec
from ..spec.trainer_contract import TrainerSettings
from . import arguments
from .inputs import NO_INPUTS, InputSlots, ResolvedInputError, lift, redacted
from .node_pool import NodePool, NodePoolArgs
from .tf_cluster import TFCluster, TFClusterArgs
from .tokens import TF_EXPERIMENT, answering_to_earlier_token


@dataclass(frozen=True)
class TFExperimentArgs:
    node_pools: Sequence[Union[NodePoolSpec, Mapping[str, Any]]]
    cluster: Union[ClusterSpec, Mapping[str, Any]]
    trainer: Union[TrainerSettings, Mapping[str, Any]] = field(default_factory=dict)
    # The team's own program instead of tfk8s's trainer (docs/programs.md).
    program: Optional[Union[ProgramSpec, Mapping[str, Any]]] = None
    # Where `program.source` is read (default: the working directory, the Pulumi project's folder):
    # any path-like, a str or an os.PathLike.
    project_root: Optional[Union[str, "os.PathLike[str]"]] = None
    # TensorBoard for the experiment (docs/lifecycle.md).
    tensorboard: Optional[Union[TensorBoardSpec, Mapping[str, Any]]] = None
    # Every task's log kept after its pod is gone (docs/lifecycle.md).
    logs: Optional[Union[LogsSpec, Mapping[str, Any]]] = None

    def __post_init__(self) -> None:
        owner = type(self).__name__
        arguments.check_node_pools(owner, self.node_pools, NodePoolSpec)
        arguments.check_section(owner, "cluster", self.cluster, ClusterSpec, optional=False)
        arguments.check_section(owner, "trainer", self.trainer, TrainerSettings, optional=False)
        arguments.check_section(owner, "program", self.program, ProgramSpec, optional=True)
        arguments.check_section(owner, "tensorboard", self.tensorboard, TensorBoardSpec, optional=True)
        arguments.check_section(owner, "logs", self.logs, LogsSpec, optional=True)
        arguments.project_folder(owner, self.project_root)

    def project_folder(self) -> Path:
        """The folder `program.source` is read from."""
        return arguments.project_folder(type(self).__name__, self.project_root) or Path.cwd()

    def stack_values(self) -> dict[str, Any]:
        """The arguments as a stack file's `tfk8s:*` values: one per StackConfig field, each argument
        named as its field (tests/spec/test_stack_keys.py holds them to it). An optional key
        left None is left out, and a program's stack has no `tfk8s:trainer` unless one is given, as in
        a stack file."""
        values = {}
        for key, name in StackConfig.file_keys().items():
            value = getattr(self, name)
            left_out = value is None and not StackConfig.model_fields[name].is_required()
            if left_out or (name == "trainer" and self.program is not None and not value):
                continue
            values[f"{CONFIG_NAMESPACE}:{key}"] = _as_values(value)
        return values


def _as_values(value: Any) -> Any:
    if isinstance(value, (list, tuple)):  # the node pools
        return [_as_values(item) for item in value]
    if isinstance(value, BaseModel):
        return value.model_dump(by_alias=True, exclude_none=True, mode="json")
    if isinstance(value, TrainerSettings):
        return value.to_config()
    return value


def register_experiment(
    experiment: Experiment, opts: Optional[pulumi.ResourceOptions] = None, inputs: InputSlots = NO_INPUTS
) -> tuple[dict[str, NodePool], TFCluster]:
    """The experiment's NodePools (one per pool tfk8s labels) and its TFCluster, each given `opts`;
    `inputs`: the Outputs its objects take where the experiment holds their placeholders."""
    stack = experiment.stack
    used = {pool.name for pool in experiment.used_pools()}
    for pool in experiment.config.node_pools:
        if pool.name not in used:
            pulumi.log.warn(f"stack '{stack}': node pool '{pool.name}' is not used by tfk8s:cluster")
    for warning in stack_warnings(experiment.config):
        pulumi.log.warn(warning)
    node_pools = {
        pool.name: NodePool(f"{stack}-pool-{pool.name}", NodePoolArgs(experiment, pool, inputs), opts)
        for pool in labelled_pools(experiment)
    }
    server_labels = {node: patch for pool in node_pools.values() for node, patch in pool.patches.items()}
    cluster = TFCluster(stack, TFClusterArgs(experiment, server_labels, node_pools, inputs), opts)
    return node_pools, cluster


def experiment_outputs(
    experiment: Experiment, cluster: TFCluster, node_pools: Mapping[str, NodePool]
) -> dict[str, Any]:
    """What a user looks up after `pulumi up`: where tasks run, what runs them, where the chief logs,
    the addresses TF_CONFIG gives, and the nodes each pool labelled."""

    plan = experiment.plan
    if experiment.workload == "jobset":
        workloads = [f"jobset/{experiment.names.jobset}"]
    else:
        workloads = [
            f"{'job' if role_of(g.task_type).runs_to_completion else 'statefulset'}/{experiment.names.workload(g.name)}"
            for g in experiment.groups
        ]
    return {
        "namespace": cluster.namespace,
        **plan.summary(),  # pinning, perServer, placement, unpinned
        "tasks": {role.name: plan.count(role.name) for role in ROLES},
        "psMemory": experiment.ps_memory,
        # `kubectl -n <namespace> get <workload>`
        "workloads": workloads,
        # `kubectl -n <namespace> logs -l <chiefSelector>`: the chief's progress and summary.
        "chiefSelector": selector_text(experiment.stack, (CHIEF.name,)),
        "jobset": experiment.names.jobset if experiment.workload == "jobset" else None,
        # TF_CONFIG's cluster: each role's task addresses, in index order.
        "addresses": {role: list(addresses) for role, addresses in experiment.tf_config.cluster.items()},
        "poolNodes": {name: list(pool.patches) for name, pool in node_pools.items()},  # as the pool lists them
    }


class TFExperiment(pulumi.ComponentResource):
    experiment: Experiment
    namespace: pulumi.Output[str]
    jobset: pulumi.Output[Optional[str]]
    addresses: pulumi.Output[dict[str, list[str]]]
    pool_nodes: pulumi.Output[dict[str, list[str]]]
    outputs: dict[str, Any]

    def __init__(self, name: str, args: TFExperimentArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        # Validated before the component registers: a bad argument leaves nothing behind.
        owner = type(self).__name__
        arguments.check_name(owner, name)
        arguments.check_args(owner, args, TFExperimentArgs)
        arguments.check_opts(owner, opts)
        values, inputs = lift(name, args.stack_values(), hashlib.sha256(name.encode()).hexdigest()[:8])
        loaded = _Loading(name, values, inputs, args.project_folder())
        experiment = loaded.experiment()
        inputs = inputs.checked(loaded.check_resolved)
        super().__init__(TF_EXPERIMENT, name, None, answering_to_earlier_token(TF_EXPERIMENT, opts))
        self.experiment = experiment
        node_pools, cluster = register_experiment(experiment, pulumi.ResourceOptions(parent=self), inputs)
        self.outputs = inputs.resolve(experiment_outputs(experiment, cluster, node_pools))
        self.namespace = cluster.namespace
        self.jobset = pulumi.Output.from_input(self.outputs["jobset"])
        self.addresses = pulumi.Output.from_input(self.outputs["addresses"])
        self.pool_nodes = pulumi.Output.from_input(self.outputs["poolNodes"])
        self.register_outputs(self.outputs)


@dataclass(frozen=True)
class _Loading:
    """An experiment's values as given, its Inputs standing in as placeholders; loaded once before
    anything registers, and again for each Input's value once the engine resolves it."""

    name: str
    values: Mapping[str, Any]
    inputs: InputSlots
    project_root: Path

    def experiment(self) -> Experiment:
        try:
            return self._load(self.values, {f"{ENV_PREFIX}{name}" for name in self.inputs.env_names})
        except StackConfigError as error:
            raise StackConfigError(self.inputs.shown(str(error))) from None

    def check_resolved(self, index: int, value: Any, secret: bool) -> Any:
        """`value`, what the Input at `index` resolved to, checked as that value given plain would be:
        ResolvedInputError with the message the plain value gets (a secret's value never shown)."""
        place = self.inputs.places[index]
        env_name = place.env_name
        # The others stay placeholders; this one is a plain value, a secret only where one may be.
        known = {f"{ENV_PREFIX}{name}" for name in self.inputs.env_names if name != env_name}
        if secret and env_name is None:
            known.add(place.path)  # refused as a value set with --secret there is
        try:
            self._load(place.put(self.values, value), known)
        except StackConfigError as error:
            message = self.inputs.shown(str(error))
            raise ResolvedInputError(redacted(message, value) if secret else message) from None
        if env_name is not None and not isinstance(value, str):
            # Taken plain as a Secret's reference: an Output's value goes into the experiment's Secret, as text.
            raise ResolvedInputError(
                StackConfigError.listing(
                    self.name,
                    [
                        f"{place.path}: a pulumi Output here must resolve to text (got {_kind(value)}); "
                        "a Secret's reference is a mapping {'secret': ..., 'key': ...} whose values may be Outputs"
                    ],
                ).args[0]
            )
        return value

    def _load(self, values: Mapping[str, Any], known_encrypted: set[str]) -> Experiment:
        return load_experiment_values(
            self.name,
            values,
            load_trainer_bundle(PROJECT_ROOT),
            project_root=self.project_root,
            known_encrypted=known_encrypted,
        )


def _kind(value: Any) -> str:
    return "a mapping" if isinstance(value, Mapping) else f"a {type(value).__name__}"
