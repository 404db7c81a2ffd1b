"""Kubernetes objects of an experiment, as plain dicts (no Pulumi here): its namespace, network
policy, checkpoint claim, the trainer's ConfigMaps, the role Services, the StatefulSet model's
workloads and the node patches. A task's pod comes from pods.py.

The components hand these dicts to pulumi_kubernetes unchanged, and the tests
validate the same dicts against the Kubernetes OpenAPI schema.
"""

from __future__ import annotations

from typing import Optional

from ..plan import labels as L
from ..plan.experiment import Experiment
from ..plan.tf_config import TF_PORT
from ..plan.workloads import TaskGroup, pod_hostname, pod_subdomain
from ..spec.pools import NodePoolSpec
from ..spec.secrets import SECRET_PLACEHOLDER
from ..spec.task_roles import role_of
from ..spec.trainer_contract import CLUSTER_ENV, CLUSTER_FILE_ENV, SETTINGS_ENV, TENSORBOARD_DIR_ENV
from .failure_rules import pod_failure_policy
from .log_shipping import COLLECTOR_ENV, collector_address, collector_egress_rule
from .pods import (
    CLUSTER_FILE,
    CLUSTER_MOUNT,
    CODE_ROOT,
    CONTAINER_NAME,
    SCRATCH_DIR,
    TF_PORT_NAME,
    Manifest,
    pod_template,
)
from .program_container import program_config_map_data, shared_program_env

SKIP_AWAIT = "pulumi.com/skipAwait"


def namespace(experiment: Experiment) -> Manifest:
    labels = {
        **L.experiment_labels(experiment.stack),
        # The pods meet the restricted Pod Security Standard; enforce it.
        "pod-security.kubernetes.io/enforce": "restricted",
    }
    if experiment.config.cluster.production:
        labels[L.PRODUCTION] = "true"
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": experiment.namespace, "labels": labels},
    }


def network_policy(experiment: Experiment) -> Manifest:
    """Only this experiment's pods may reach TensorFlow's unauthenticated gRPC port."""
    experiment_pods = {"matchLabels": L.experiment_selector(experiment.stack)}
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": metadata(experiment, experiment.names.network_policy),
        "spec": {
            "podSelector": experiment_pods,
            "policyTypes": ["Ingress"],
            "ingress": [
                {
                    "from": [{"podSelector": experiment_pods}],
                    "ports": [{"protocol": "TCP", "port": TF_PORT}],
                }
            ],
        },
    }


# The cluster's DNS as Kubernetes deploys it: CoreDNS pods labelled k8s-app: kube-dns in
# kube-system. A cluster that serves DNS elsewhere (a node-local cache, the node) lists that
# address in `egress`; port 53 is not opened to every address (a way out for any data).
CLUSTER_DNS = {
    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
    "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
}
DNS_PORTS = [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]


def egress_policy(experiment: Experiment) -> Optional[Manifest]:
    """With `egress` set: the experiment's pods reach each other, DNS and the listed addresses only."""
    allowed = experiment.config.cluster.egress
    if allowed is None:
        return None
    experiment_pods = {"matchLabels": L.experiment_selector(experiment.stack)}
    listed = [
        {
            "to": [{"ipBlock": {"cidr": rule.cidr}}],
            # Without ports: every port, of the rule's protocol only.
            "ports": [{"protocol": rule.protocol, "port": port} for port in rule.ports]
            or [{"protocol": rule.protocol}],
        }
        for rule in allowed
    ]
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": metadata(experiment, experiment.names.egress_policy),
        "spec": {
            "podSelector": experiment_pods,
            "policyTypes": ["Egress"],
            "egress": [
                {"to": [{"podSelector": experiment_pods}]},
                {"to": [CLUSTER_DNS], "ports": DNS_PORTS},
                *([collector_egress_rule(experiment)] if experiment.config.logs is not None else []),
                *listed,
            ],
        },
    }


def checkpoint_claim(experiment: Experiment) -> Optional[Manifest]:
    """The chief's checkpoint volume, when the stack asks for one."""
    volume = experiment.config.cluster.chief.checkpoint_volume
    if volume is None:
        return None
    spec: Manifest = {
        "accessModes": ["ReadWriteOnce"],  # one chief at a time writes it
        "resources": {"requests": {"storage": volume.size}},
    }
    if volume.storage_class is not None:
        spec["storageClassName"] = volume.storage_class
    meta = metadata(experiment, experiment.names.checkpoint_claim)
    # A claim of a WaitForFirstConsumer class binds only once the chief's pod
    # exists, and that pod waits for the claim: `pulumi up` must not wait.
    meta["annotations"] = {SKIP_AWAIT: "true"}
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec}


def trainer_config_map(experiment: Experiment) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(experiment, experiment.names.trainer_config_map),
        "data": experiment.trainer_bundle.config_map_data(),
    }


def trainer_env_config_map(experiment: Experiment) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(experiment, experiment.names.trainer_env_config_map),
        "data": trainer_env(experiment),
    }


def cluster_config_map(experiment: Experiment) -> Optional[Manifest]:
    """The TF cluster as a file, where it is too large for an environment variable."""
    if not experiment.cluster_as_file:
        return None
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(experiment, experiment.names.cluster_config_map),
        "data": {CLUSTER_FILE: experiment.tf_config.cluster_json},
    }


def program_config_map(experiment: Experiment) -> Optional[Manifest]:
    """The program's source folder, when the stack ships one."""
    if experiment.program_source is None:
        return None
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(experiment, experiment.names.program_config_map),
        **program_config_map_data(experiment),
    }


def program_secret(experiment: Experiment) -> Optional[Manifest]:
    """The Secret that carries the program's secret `env` values, when the stack has any. Its
    values here are placeholders: only the Pulumi resource gets the real ones, as Pulumi secrets
    (components/resources/tf_cluster.py), so no rendering, plan or diff can show one."""
    if not experiment.secret_env:
        return None
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": metadata(experiment, experiment.names.program_secret),
        "type": "Opaque",
        "stringData": {name: SECRET_PLACEHOLDER for name in sorted(experiment.secret_env)},
    }


def task_env_for_side_pods(experiment: Experiment) -> dict[str, str]:
    """What every task is told of the side pods: with tfk8s:tensorboard, where it may write event
    files for TensorBoard; with tfk8s:logs, where its log shipper sends."""
    log_dir = experiment.tensorboard_log_dir
    env = {TENSORBOARD_DIR_ENV: log_dir} if log_dir is not None else {}
    if experiment.config.logs is not None:
        env[COLLECTOR_ENV] = collector_address(experiment)
    return env


def trainer_env(experiment: Experiment) -> dict[str, str]:
    """Environment of every task but its own variables: the TF cluster (or its file) and the
    trainer's settings, or what every task of a team's program reads."""
    if experiment.program is not None:
        return shared_program_env(experiment, SCRATCH_DIR) | task_env_for_side_pods(experiment)
    if experiment.cluster_as_file:
        cluster = {CLUSTER_FILE_ENV: f"{CLUSTER_MOUNT}/{CLUSTER_FILE}"}
    else:
        cluster = {CLUSTER_ENV: experiment.tf_config.cluster_json}
    return {
        SETTINGS_ENV: experiment.trainer_settings_json,
        **cluster,
        **task_env_for_side_pods(experiment),
        "PYTHONPATH": CODE_ROOT,
        "PYTHONDONTWRITEBYTECODE": "1",  # the code mount is read-only
        "PYTHONUNBUFFERED": "1",
        "HOME": SCRATCH_DIR,
        "TMPDIR": SCRATCH_DIR,
    }


def role_service(experiment: Experiment, task_type: str) -> Manifest:
    """Headless Service of a role: each of its pods gets a stable DNS name, even before it is ready."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(
            experiment, experiment.names.service(task_type), L.role_labels(experiment.stack, task_type)
        ),
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": L.role_selector(experiment.stack, task_type),
            "ports": [{"name": TF_PORT_NAME, "port": TF_PORT}],
        },
    }


def group_workload(experiment: Experiment, group: TaskGroup) -> Manifest:
    """StatefulSet model: the chief is a Job (it finishes); PS and workers serve until destroyed."""
    template = pod_template(experiment, group)
    meta = metadata(experiment, experiment.names.workload(group.name), L.group_labels(experiment.stack, group))
    if role_of(group.task_type).runs_to_completion:
        meta["annotations"] = {SKIP_AWAIT: "true"}  # `pulumi up` must not wait for training
        # The Job's pods get random names; the host name gives the chief its DNS name.
        template["spec"]["hostname"] = pod_hostname(group, group.first_index, experiment.workload, experiment.names)
        template["spec"]["subdomain"] = pod_subdomain(group, experiment.workload, experiment.names)
        return {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": meta,
            "spec": {
                "completions": 1,
                "parallelism": 1,
                "backoffLimit": experiment.config.cluster.chief.restarts,
                **chief_deadline(experiment),
                # Never a second chief while the first is still terminating.
                "podReplacementPolicy": "Failed",
                **pod_failure_policy(experiment, group, CONTAINER_NAME),
                "template": template,
            },
        }
    # A StatefulSet never runs two pods of one ordinal, that is of one task, at once.
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": meta,
        "spec": {
            "replicas": group.count,
            # Ordinals are task indexes: pod `<group>-<index>`, label apps.kubernetes.io/pod-index.
            "ordinals": {"start": group.first_index},
            # Every task is needed from the start: no one-by-one start.
            "podManagementPolicy": "Parallel",
            "serviceName": experiment.names.service(group.task_type),
            "selector": {"matchLabels": L.group_selector(experiment.stack, group)},
            "template": template,
        },
    }


def chief_deadline(experiment: Experiment) -> Manifest:
    """The chief Job's activeDeadlineSeconds, when the stack sets one: past it the Job fails
    (DeadlineExceeded), which fails the experiment."""
    deadline = experiment.config.cluster.chief.active_deadline_seconds
    return {"activeDeadlineSeconds": deadline} if deadline is not None else {}


def node_labels(experiment: Experiment, pool: NodePoolSpec, node: str) -> dict[str, str]:
    """Labels a NodePool writes on one of its nodes."""
    node_labels = {
        L.node_pool_key(experiment.stack): pool.name,
        L.node_role_key(experiment.stack): experiment.pool_role(pool.name),
        L.node_server_key(experiment.stack): experiment.server_label_values[node],
    }
    if pool.gpu is not None and pool.gpu_labeller == "tfk8s":
        # Never a label under nvidia.com/: GPU Feature Discovery owns those.
        node_labels[L.TFK8S_GPU_PRODUCT] = pool.gpu.product
    return node_labels


def node_patch(experiment: Experiment, node: str, pool: NodePoolSpec) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        # No pulumi.com/patchFieldManager annotation: it would be written on the node, one
        # value per experiment, and two experiments would conflict over it. Without it
        # pulumi-kubernetes gives each NodePatch a field manager of its own, so destroy
        # still releases exactly that patch's labels.
        "metadata": {"name": node, "labels": node_labels(experiment, pool, node)},
    }


# -- pieces -------------------------------------------------------------------


def metadata(experiment: Experiment, name: str, object_labels: Optional[dict[str, str]] = None) -> Manifest:
    """An experiment's object `name` in its namespace, with the experiment's labels (or `object_labels`)."""
    return {
        "name": name,
        "namespace": experiment.namespace,
        "labels": object_labels or L.experiment_labels(experiment.stack),
    }
