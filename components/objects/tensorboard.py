"""`tfk8s:tensorboard`: TensorBoard's Deployment, its Service and the NetworkPolicy that admits only
the peers the stack lists (plain dicts, no Pulumi here).

Its pod is no task (components/objects/side_pods.py): its own policy closes its port to everyone the
stack does not list. `python -m components tensorboard` reaches it through the API server's
port-forward, which no NetworkPolicy sees.

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
from ..spec.roles import CHECKPOINT_MOUNT, checkpoint_volume_folder
from ..spec.task_roles import checkpoint_writer
from ..spec.tensorboard import TENSORBOARD_PORT, TensorBoardSpec
from .pods import CHECKPOINT_VOLUME, restricted_container_security, with_checkpoint_claim
from .side_pods import headless_service, side_deployment, side_network_policy, side_pod_labels, side_pod_spec

Manifest = dict[str, Any]

PORT_NAME = "http"
TMP_VOLUME = "tmp"
# TensorBoard writes only its info file, under the temporary folder.
TMP_SIZE = "64Mi"


def pod_labels(experiment: Experiment) -> dict[str, str]:
    """TensorBoard's pod: the stack's, and not the experiment's task selector."""
    return side_pod_labels(experiment, L.TENSORBOARD)


def tensorboard_objects(experiment: Experiment) -> list[tuple[str, Manifest]]:
    """(Pulumi suffix, manifest) of each object; none without tfk8s:tensorboard."""
    spec = experiment.config.tensorboard
    if spec is None:
        return []
    name = experiment.names.tensorboard
    return [
        ("tensorboard-policy", _network_policy(experiment, spec)),
        ("tensorboard-service", headless_service(experiment, name, L.TENSORBOARD, PORT_NAME, TENSORBOARD_PORT)),
        ("tensorboard", _deployment(experiment, spec)),
    ]


def _network_policy(experiment: Experiment, spec: TensorBoardSpec) -> Manifest:
    peers = [_peer(peer.namespace, peer.pod_labels) for peer in spec.allow_from]
    # No rule: no one connects (a port-forward does not pass through the network).
    ingress = [{"from": peers, "ports": [{"protocol": "TCP", "port": TENSORBOARD_PORT}]}] if peers else []
    return side_network_policy(experiment, experiment.names.tensorboard, L.TENSORBOARD, ingress)


def _peer(namespace: Optional[str], labels: dict[str, str]) -> Manifest:
    peer: Manifest = {"podSelector": {"matchLabels": dict(labels)}}
    if namespace is not None:
        peer["namespaceSelector"] = {"matchLabels": {"kubernetes.io/metadata.name": namespace}}
    return peer


def _deployment(experiment: Experiment, spec: TensorBoardSpec) -> Manifest:
    log_dir = experiment.tensorboard_log_dir
    assert log_dir is not None  # tensorboard_checks refused the stack otherwise
    on_volume = checkpoint_volume_folder(log_dir) is not None
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
    pod = side_pod_spec(experiment, container, [{"name": TMP_VOLUME, "emptyDir": {"sizeLimit": TMP_SIZE}}])
    if on_volume:
        container["volumeMounts"].append({"name": CHECKPOINT_VOLUME, "mountPath": CHECKPOINT_MOUNT, "readOnly": True})
        with_checkpoint_claim(experiment, pod)
        # On the chief's server while the chief runs: a ReadWriteOnce network volume attaches to one.
        pod["affinity"]["podAffinity"] = {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 100,
                    "podAffinityTerm": {
                        "labelSelector": {"matchLabels": L.role_selector(experiment.stack, checkpoint_writer().name)},
                        "topologyKey": L.HOSTNAME,
                    },
                }
            ]
        }
    return side_deployment(experiment, experiment.names.tensorboard, L.TENSORBOARD, pod)
