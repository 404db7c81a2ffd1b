"""Pods beside the tasks: TensorBoard (tfk8s:tensorboard) and the log collector (tfk8s:logs). One
Deployment of one pod each, and a headless Service, in the chief's pool (plain dicts, no Pulumi here).

Such a pod is no task: it carries the stack's instance label but not the experiment's selector, so
the gRPC port's NetworkPolicy neither admits it to the tasks nor governs its own ports, which its
own NetworkPolicy sets. It runs on after the experiment ended, until `pulumi destroy`.
"""

from __future__ import annotations

from typing import Any, Optional

from ..plan import labels as L
from ..plan.experiment import Experiment
from .manifests import SKIP_AWAIT
from .pod_placement import pool_expressions
from .pods import restricted_pod_security

Manifest = dict[str, Any]


def side_pod_labels(experiment: Experiment, component: str) -> dict[str, str]:
    return L.side_pod_labels(experiment.stack, component)


def side_metadata(experiment: Experiment, name: str, component: str) -> Manifest:
    return {
        "name": name,
        "namespace": experiment.namespace,
        "labels": L.experiment_labels(experiment.stack) | {L.COMPONENT: component},
    }


def side_pod_spec(experiment: Experiment, container: Manifest, volumes: list[Manifest]) -> Manifest:
    """A restricted pod of one container in the chief's pool, tolerating what the chief tolerates
    there, pulling with the stack's image pull secrets."""
    cluster = experiment.config.cluster
    chief_pool = experiment.config.pools[cluster.chief_pool]
    pod: Manifest = {
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "securityContext": restricted_pod_security(),
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": pool_expressions(experiment, chief_pool)}]
                }
            }
        },
        "containers": [container],
        "volumes": volumes,
    }
    chief_tolerations = [toleration.manifest() for toleration in cluster.chief.tolerations]
    if chief_tolerations:
        pod["tolerations"] = chief_tolerations
    if cluster.image_pull_secrets:
        pod["imagePullSecrets"] = [{"name": name} for name in cluster.image_pull_secrets]
    return pod


def side_deployment(experiment: Experiment, name: str, component: str, pod: Manifest) -> Manifest:
    labels = side_pod_labels(experiment, component)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        # `pulumi up` waits for the experiment's objects, not for this pod's image and volume.
        "metadata": side_metadata(experiment, name, component) | {"annotations": {SKIP_AWAIT: "true"}},
        "spec": {
            "replicas": 1,
            # One pod at a time: the old one lets go of a ReadWriteOnce volume first.
            "strategy": {"type": "Recreate"},
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": pod},
        },
    }


def side_network_policy(
    experiment: Experiment, name: str, component: str, ingress: list[Manifest], egress: Optional[list[Manifest]] = None
) -> Manifest:
    """Who may connect to the pod (`ingress`), and with `egress` where it may connect."""
    spec: Manifest = {
        "podSelector": {"matchLabels": side_pod_labels(experiment, component)},
        "policyTypes": ["Ingress"] if egress is None else ["Ingress", "Egress"],
    }
    # No rule is no field: a policy type without rules admits nothing, as Kubernetes' own
    # default-deny policies write it, and as the inputs Pulumi's engine records hold an empty list:
    # `render` shows what `pulumi up` applies.
    for direction, rules in (("ingress", ingress), ("egress", egress)):
        if rules:
            spec[direction] = rules
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": side_metadata(experiment, name, component),
        "spec": spec,
    }


def headless_service(experiment: Experiment, name: str, component: str, port_name: str, port: int) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": side_metadata(experiment, name, component),
        "spec": {
            # Headless, as every Service of an experiment: its name resolves to the pod itself.
            "clusterIP": "None",
            "selector": side_pod_labels(experiment, component),
            "ports": [{"name": port_name, "port": port, "targetPort": port_name, "protocol": "TCP"}],
        },
    }
