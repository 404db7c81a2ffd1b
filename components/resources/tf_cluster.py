"""TFCluster: the Kubernetes objects of one TensorFlow parameter-server experiment.

Its namespace (unless it runs in a team's, which tfk8s never creates), NetworkPolicy, the trainer's
code and settings as ConfigMaps, and what runs the tasks: one JobSet (components/objects/jobset.py)
or, in the StatefulSet model, a headless Service per role and
per task group (a role's tasks on one server) one workload pinned as the plan says.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, TypedDict

import pulumi

from ..objects.experiment_objects import (
    KubeObject,
    kept_on_destroy_note,
    namespace_object,
    role_services,
    shared_objects,
    workload_objects,
)
from ..plan.experiment import Experiment
from . import arguments, kube
from .inputs import NO_INPUTS, InputSlots
from .tokens import TF_CLUSTER, answering_to_earlier_token


class _Replacement(TypedDict, total=False):
    """The ResourceOptions that say how a workload is replaced (see TFCluster._replacement)."""

    replace_on_changes: list[str]
    delete_before_replace: bool


@dataclass(frozen=True)
class TFClusterArgs:
    experiment: Experiment
    # server -> the NodePatch labelling it: a pinned task waits for its server only.
    server_labels: Mapping[str, pulumi.Resource] = field(default_factory=dict)
    # pool -> NodePool: an unpinned task waits for its whole pool.
    pool_labels: Mapping[str, pulumi.Resource] = field(default_factory=dict)
    # The Outputs (an image, env values, Secret names) whose placeholders the experiment holds.
    inputs: InputSlots = NO_INPUTS

    def __post_init__(self) -> None:
        owner = type(self).__name__
        arguments.check_instance(owner, "experiment", self.experiment, Experiment, arguments.EXPERIMENT)
        for argument, labels in (("server_labels", self.server_labels), ("pool_labels", self.pool_labels)):
            takes = "a mapping of names to pulumi Resources"
            arguments.check_instance(owner, argument, labels, Mapping, takes)
            for key, resource in labels.items():
                arguments.check_instance(owner, f"{argument}[{key!r}]", resource, pulumi.Resource, "a pulumi Resource")
        arguments.check_instance(owner, "inputs", self.inputs, InputSlots)


class TFCluster(pulumi.ComponentResource):
    namespace: pulumi.Output[str]  # known once the Namespace is registered

    def __init__(self, name: str, args: TFClusterArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        owner = type(self).__name__
        arguments.check_name(owner, name)
        arguments.check_args(owner, args, TFClusterArgs)
        arguments.check_opts(owner, opts)
        super().__init__(TF_CLUSTER, name, None, answering_to_earlier_token(TF_CLUSTER, opts))
        experiment = args.experiment

        namespace_obj = namespace_object(experiment)
        namespace = (
            []
            if namespace_obj is None
            else [
                kube.create(f"{name}-{namespace_obj.suffix}", namespace_obj.manifest, self._kept(namespace_obj, self))
            ]
        )
        in_namespace = pulumi.ResourceOptions(parent=self, depends_on=namespace)
        # Trainer code and settings, the NetworkPolicy that isolates the gRPC
        # port and the chief's checkpoint claim exist before any pod starts.
        shared = [
            kube.create(
                f"{name}-{obj.suffix}",
                *self._with_secret_values(
                    experiment, obj, args.inputs, pulumi.ResourceOptions.merge(in_namespace, self._kept(obj, self))
                ),
            )
            for obj in shared_objects(experiment)
        ]
        kept = kept_on_destroy_note(experiment)
        if kept is not None:
            pulumi.log.info(kept, self)

        for obj in role_services(experiment):
            kube.create(f"{name}-{obj.suffix}", obj.manifest, in_namespace)
        queues: list[pulumi.Resource] = []
        for obj in workload_objects(experiment):
            opts = pulumi.ResourceOptions(
                parent=self,
                depends_on=[*namespace, *shared, *queues, *self._labels_needed(args, obj)],
                **self._replacement(obj),
            )
            created = kube.create(f"{name}-{obj.suffix}", args.inputs.resolve(obj.manifest), opts)
            if obj.kind == "LocalQueue":
                queues.append(created)

        self.namespace = (
            namespace[0].urn.apply(lambda _: experiment.namespace)
            if namespace
            else pulumi.Output.from_input(experiment.namespace)
        )
        self.register_outputs({"namespace": self.namespace})

    @staticmethod
    def _kept(obj: KubeObject, parent: pulumi.Resource) -> pulumi.ResourceOptions:
        """The checkpoints (and a namespace that holds them) outlive `pulumi destroy`: the engine
        forgets them instead of deleting them, whatever the volume's reclaim policy."""
        return pulumi.ResourceOptions(parent=parent, retain_on_delete=obj.kept_on_destroy or None)

    @staticmethod
    def _with_secret_values(
        experiment: Experiment, obj: KubeObject, inputs: InputSlots, opts: pulumi.ResourceOptions
    ) -> tuple[Mapping[str, Any], pulumi.ResourceOptions]:
        """The program's Secret gets the stack's real values here, and only here, as Pulumi
        secrets: encrypted in the state, `[secret]` in every preview (the object itself holds
        placeholders, for `render`). An env value given as an Output is one of them."""
        if obj.kind != "Secret":
            return inputs.resolve(obj.manifest), opts
        program = experiment.program
        assert program is not None
        values = inputs.resolve({name: program.env[name] for name in sorted(experiment.secret_env)})
        manifest = {**obj.manifest, "stringData": pulumi.Output.secret(values)}
        secret_outputs = pulumi.ResourceOptions(additional_secret_outputs=["data", "stringData"])
        return manifest, pulumi.ResourceOptions.merge(opts, secret_outputs)

    @staticmethod
    def _replacement(obj: KubeObject) -> _Replacement:
        """A JobSet's replicatedJobs cannot change: a changed experiment is a new JobSet, the old
        one deleted first (the name is the same). An unchanged stack changes nothing, so
        `pulumi up` never starts a finished experiment again."""
        if obj.kind != "JobSet":
            return {}
        return {"replace_on_changes": ["spec"], "delete_before_replace": True}

    @staticmethod
    def _labels_needed(args: TFClusterArgs, obj: KubeObject) -> list[pulumi.Resource]:
        """Node labels that must exist before this workload's pods can be scheduled."""
        group = obj.group
        if group is None:  # the JobSet (or its queue): every label of the experiment
            return [*args.server_labels.values(), *args.pool_labels.values()] if obj.kind == "JobSet" else []
        if group.server is not None and group.server in args.server_labels:
            return [args.server_labels[group.server]]
        pool = args.pool_labels.get(group.pool)
        return [pool] if pool is not None else []
