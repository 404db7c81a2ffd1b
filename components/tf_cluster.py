"""TFCluster: the Kubernetes objects of one TensorFlow parameter-server experiment.

Namespace, NetworkPolicy, the trainer's code and settings as ConfigMaps, and per task a headless
Service plus a one-pod workload pinned as the plan says.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Optional

import pulumi

from . import kube, manifests
from .experiment import Experiment
from .planner import TaskPlacement


@dataclass(frozen=True)
class TFClusterArgs:
    experiment: Experiment
    # server -> the NodePatch labelling it: a pinned task waits for its server only.
    server_labels: Mapping[str, pulumi.Resource] = field(default_factory=dict)
    # pool -> NodePool: an unpinned task waits for its whole pool.
    pool_labels: Mapping[str, pulumi.Resource] = field(default_factory=dict)


class TFCluster(pulumi.ComponentResource):
    namespace: pulumi.Output[str]  # known once the Namespace is registered

    def __init__(
        self, name: str, args: TFClusterArgs, opts: Optional[pulumi.ResourceOptions] = None
    ) -> None:
        super().__init__("tfk8s:tf_cluster:TFCluster", name, None, opts)
        experiment = args.experiment

        namespace = kube.create(
            f"{name}-namespace", manifests.namespace(experiment), pulumi.ResourceOptions(parent=self)
        )
        in_namespace = pulumi.ResourceOptions(parent=self, depends_on=[namespace])
        kube.create(f"{name}-network-policy", manifests.network_policy(experiment), in_namespace)
        trainer = [
            kube.create(f"{name}-trainer", manifests.trainer_config_map(experiment), in_namespace),
            kube.create(
                f"{name}-trainer-env", manifests.trainer_env_config_map(experiment), in_namespace
            ),
        ]

        for placement in experiment.plan.placements:
            task = placement.task
            kube.create(
                f"{name}-{task.name}-service",
                manifests.task_service(experiment, task),
                in_namespace,
            )
            kube.create(
                f"{name}-{task.name}",
                manifests.task_workload(experiment, placement),
                pulumi.ResourceOptions(
                    parent=self,
                    depends_on=[namespace, *trainer, *self._labels_needed(args, placement)],
                ),
            )

        self.namespace = namespace.urn.apply(lambda _: experiment.namespace)
        self.register_outputs({"namespace": self.namespace})

    @staticmethod
    def _labels_needed(args: TFClusterArgs, placement: TaskPlacement) -> list[pulumi.Resource]:
        """Node labels that must exist before this task's pod can be scheduled."""
        if placement.server is not None and placement.server in args.server_labels:
            return [args.server_labels[placement.server]]
        pool = args.pool_labels.get(placement.pool)
        return [pool] if pool is not None else []
