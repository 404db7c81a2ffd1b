"""The validated experiment as `export` prints it (JSON, for a tool without the program's
environment: trainer.local, `make report`) and as the bottleneck rules read its shape; one schema,
trainer/stack_export.py."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..spec.quantities import quantity_value
from ..spec.stack_files import PROJECT_ROOT
from ..spec.trainer_contract import PROGRAM_ROLES, ProgramExport, StackExport, secret_env_value, stack_export

if TYPE_CHECKING:
    from ..spec.program import EnvValue, ProgramSpec
    from .experiment import Experiment


def experiment_export(experiment: Experiment) -> StackExport:
    """What a tool without the program's environment needs of a stack, validated by the one schema
    (its JSON: trainer/stack_export.py)."""
    cluster = experiment.config.cluster
    return StackExport(
        stack=experiment.stack,
        placement=cluster.placement,
        ps=cluster.ps_count,
        workers=cluster.workers.replicas,
        evaluator=cluster.evaluator_count,
        trainer=experiment.config.trainer.to_config(),
        program=_program_export(experiment, experiment.program) if experiment.program is not None else None,
        cluster=_cluster_export(experiment),
    )


def _cluster_export(experiment: Experiment) -> stack_export.ClusterExport:
    """What the stack gives its tasks, for the bottleneck rules (`diagnose`'s and `make report`'s:
    components/insight/next_experiment.py, experiment_shape)."""
    cluster = experiment.config.cluster
    return stack_export.ClusterExport(
        pools={pool.name: list(pool.nodes or ()) for pool in experiment.config.node_pools},
        ratio=cluster.ratio,
        ps_replicas=cluster.ps.replicas,
        ps_pool=cluster.ps.pool,
        ps_cpu=cluster.ps.cpu,
        ps_cpu_cores=quantity_value(cluster.ps.cpu),
        worker_pool=cluster.workers.pool,
        worker_cpu=cluster.workers.cpu,
        worker_cpu_cores=quantity_value(cluster.workers.cpu),
        worker_gpus=cluster.workers.gpus,
        chief_cpu=cluster.chief.cpu,
        chief_cpu_cores=quantity_value(cluster.chief.cpu),
    )


def _exported_env(experiment: Experiment, name: str, value: EnvValue) -> object:
    """A value as written, or where a Secret holds it (trainer.local then takes it from the shell)."""
    if name in experiment.secret_env:
        return secret_env_value(experiment.names.program_secret, name)
    return value if isinstance(value, str) else value.model_dump()


def _program_export(experiment: Experiment, program: ProgramSpec) -> ProgramExport:
    """The program as trainer.local runs it: each role's command and args, env, the source's path."""
    argv = {}
    for role in PROGRAM_ROLES:
        command, args = program.command_of(role)
        argv[role] = None if command is None else [*command, *(args or ())]
    return ProgramExport(
        argv=argv,
        env={name: _exported_env(experiment, name, value) for name, value in program.env.items()},
        source=str(PROJECT_ROOT / program.source) if program.source else None,
        done=program.done if isinstance(program.done, str) else program.done.model_dump(),
    )
