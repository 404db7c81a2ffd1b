"""What the pack knows of tfk8s, copied because it imports no tfk8s code (pulumi-policy pins
protobuf 5.29, the trainer needs 6); tests/test_policy_copies.py holds each copy against its original."""

from __future__ import annotations

TF_PORT = 2222
TF_PORT_NAME = "tf-grpc"  # the name tfk8s gives the port in pods and Services
GPU_RESOURCE = "nvidia.com/gpu"
GPU_PRODUCT = "nvidia.com/gpu.product"
INSTANCE = "app.kubernetes.io/instance"
COMPONENT = "app.kubernetes.io/component"
SETTINGS_ENV = "TFK8S_TRAINER"
PRODUCTION_LABEL = "tfk8s.io/production"
REMOVED_API_VERSIONS = ("extensions/v1beta1", "apps/v1beta1", "apps/v1beta2")
WORKLOAD_KINDS = ("Pod", "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob")
OPTIMIZER_SLOTS = {"sgd": 0, "adagrad": 1, "adam": 2}
QUANTITY_SUFFIX = {
    "": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18,
    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60, "m": 1e-3,
}
POD_INDEX = "apps.kubernetes.io/pod-index"
