"""`tfk8s:tensorboard`: TensorBoard's Deployment, its Service and the NetworkPolicy that admits only
the peers the stack lists (plain dicts, no Pulumi here).

Its pod is no task: it carries the stack's instance label but not the experiment's selector, so
the gRPC port's NetworkPolicy neither admits it to the tasks nor governs its own port, which its
own policy closes to everyone the stack does not list. `python -m components tensorboard`
reaches it through the API server's port-forward, which no NetworkPolicy sees.

It reads the chief's checkpoint volume read-only in its container, and mounts the claim writable
at the pod with the chief's fsGroup, as the evaluator does: Kubernetes sets a local volume's
owner only for the first pod that mounts it writable. It prefers the chief's server while the
chief runs (a ReadWriteOnce network volume attaches to one server), and runs on after the
experiment ended, until `pulumi destroy`.
"""

from __future__ import annotations

from typing import Any, Optional

from ..plan import labels as L
from ..plan.experiment import Experiment
from ..spec.roles import CHECKPOINT_MOUNT
from ..spec.tensorboard import TENSORBOARD_PORT, TensorBoardSpec
from .manifests import SKIP_AWAIT
from .pods import (
    CHECKPOINT_VOLUME,
    pool_expressions,
    restricted_container_security,
    restricted_pod_security,
    with_checkpoint_claim,
)

Manifest = dict[str, Any]

PORT_NAME = "http"
TMP_VOLUME = "tmp"
# TensorBoard writes only its info file, under the temporary folder.
TMP_SIZE = "64Mi"


def pod_labels(experiment: Experiment) -> dict[str, str]:
    """TensorBoard's pod: the stack's, and not the experiment's task selector."""
    return {L.NAME: L.TENSORBOARD, L.INSTANCE: experiment.stack, L.COMPONENT: L.TENSORBOARD}


def tensorboard_objects(experiment: Experiment) -> list[tuple[str, Manifest]]:
    """(Pulumi suffix, manifest) of each object; none without tfk8s:tensorboard."""
    spec = experiment.config.tensorboard
    if spec is None:
        return []
    return [
        ("tensorboard-policy", _network_policy(experiment, spec)),
        ("tensorboard-service", _service(experiment)),
        ("tensorboard", _deployment(experiment, spec)),
    ]


def _metadata(experiment: Experiment) -> Manifest:
    return {
        "name": experiment.names.tensorboard,
        "namespace": experiment.namespace,
        "labels": L.experiment_labels(experiment.stack) | {L.COMPONENT: L.TENSORBOARD},
    }


def _network_policy(experiment: Experiment, spec: TensorBoardSpec) -> Manifest:
    peers = [_peer(peer.namespace, peer.pod_labels) for peer in spec.allow_from]
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": _metadata(experiment),
        "spec": {
            "podSelector": {"matchLabels": pod_labels(experiment)},
            "policyTypes": ["Ingress"],
            # No rule: no one connects (a port-forward does not pass through the network).
            "ingress": [{"from": peers, "ports": [{"protocol": "TCP", "port": TENSORBOARD_PORT}]}] if peers else [],
        },
    }


def _peer(namespace: Optional[str], labels: dict[str, str]) -> Manifest:
    peer: Manifest = {"podSelector": {"matchLabels": dict(labels)}}
    if namespace is not None:
        peer["namespaceSelector"] = {"matchLabels": {"kubernetes.io/metadata.name": namespace}}
    return peer


def _service(experiment: Experiment) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _metadata(experiment),
        "spec": {
            # Headless, as every Service of an experiment: its name resolves to the pod itself.
            "clusterIP": "None",
            "selector": pod_labels(experiment),
            "ports": [{"name": PORT_NAME, "port": TENSORBOARD_PORT, "targetPort": PORT_NAME, "protocol": "TCP"}],
        },
    }


def _deployment(experiment: Experiment, spec: TensorBoardSpec) -> Manifest:
    log_dir = experiment.tensorboard_log_dir
    assert log_dir is not None  # tensorboard_checks refused the stack otherwise
    on_volume = log_dir.startswith(CHECKPOINT_MOUNT)
    container: Manifest = {
        "name": L.TENSORBOARD,
        "image": spec.image,
        "command": ["python3", "-m", "tensorboard.main"],
        "args": ["--logdir", log_dir, "--host", "0.0.0.0", "--port", str(TENSORBOARD_PORT)],
        "ports": [{"name": PORT_NAME, "containerPort": TENSORBOARD_PORT}],
        "readinessProbe": {"httpGet": {"path": "/", "port": PORT_NAME}},
        "resources": {"requests": {"cpu": spec.cpu, "memory": spec.memory}, "limits": {"memory": spec.memory}},
        "securityContext": restricted_container_security(),
        "env": [{"name": "HOME", "value": "/tmp"}],
        "volumeMounts": [{"name": TMP_VOLUME, "mountPath": "/tmp"}],
    }
    pod: Manifest = {
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "securityContext": restricted_pod_security(),
        "affinity": _affinity(experiment, on_volume),
        "containers": [container],
        "volumes": [{"name": TMP_VOLUME, "emptyDir": {"sizeLimit": TMP_SIZE}}],
    }
    if on_volume:
        container["volumeMounts"].append({"name": CHECKPOINT_VOLUME, "mountPath": CHECKPOINT_MOUNT, "readOnly": True})
        with_checkpoint_claim(experiment, pod)
    # In the chief's pool, it tolerates what the chief tolerates there.
    chief_tolerations = [t.manifest() for t in experiment.config.cluster.role("chief").tolerations]
    if chief_tolerations:
        pod["tolerations"] = chief_tolerations
    if experiment.config.cluster.image_pull_secrets:
        pod["imagePullSecrets"] = [{"name": name} for name in experiment.config.cluster.image_pull_secrets]
    labels = pod_labels(experiment)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        # `pulumi up` waits for the experiment's objects, not for TensorBoard's image and volume.
        "metadata": _metadata(experiment) | {"annotations": {SKIP_AWAIT: "true"}},
        "spec": {
            "replicas": 1,
            # One pod at a time: the old one lets go of a ReadWriteOnce volume first.
            "strategy": {"type": "Recreate"},
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": pod},
        },
    }


def _affinity(experiment: Experiment, on_volume: bool) -> Manifest:
    """In the chief's pool; with the volume, on the chief's server while the chief runs."""
    chief_pool = experiment.config.pools[experiment.config.cluster.ps_pool]
    affinity: Manifest = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": pool_expressions(experiment, chief_pool)}]
            }
        }
    }
    if on_volume:
        affinity["podAffinity"] = {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 100,
                    "podAffinityTerm": {
                        "labelSelector": {"matchLabels": L.role_selector(experiment.stack, "chief")},
                        "topologyKey": L.HOSTNAME,
                    },
                }
            ]
        }
    return affinity
