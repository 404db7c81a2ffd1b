"""The checks a TF-on-Kubernetes reviewer would make, as CrossGuard policies, one module per concern.

reading.py turns the engine's resources into pods and experiments; network,
tf_config, gpu, sizing, hygiene and pod_security each hold their rules, every policy under
its validator. This package never imports TensorFlow or tfk8s code
(pulumi-policy pins protobuf 5.29); facts.py holds the copies it keeps.

A validator passes `report` a violation's message and the urn of the resource it is
about, or None: a violation of the whole experiment, or any of a resource policy's
(the engine files those under the resource checked).
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel

from . import gpu, hygiene, network, pod_security, sizing, tf_config
from .facts import *  # noqa: F401,F403 (the copies, for tests/policy/test_copies.py)
from .reading import embedding_shards, quantity_bytes  # noqa: F401
from .sizing import shard_bytes  # noqa: F401

_BY_NAME = {
    policy.name: policy
    for module in (network, tf_config, gpu, sizing, hygiene, pod_security)
    for policy in module.POLICIES
}
# The order the engine reports them in.
POLICY_ORDER = [
    "tfk8s-tf-grpc-isolation",
    "tfk8s-headless-task-services",
    "tfk8s-tf-config-consistent",
    "tfk8s-ps-without-gpu",
    "tfk8s-gpu-containers",
    "tfk8s-uniform-gpu-workers",
    "tfk8s-embedding-shards-match-ps",
    "tfk8s-container-hygiene",
    "tfk8s-tf-pod-security",
    "tfk8s-not-default-namespace",
    "tfk8s-no-removed-apis",
    "tfk8s-ps-worker-ratio",
    "tfk8s-ps-memory-fits-shard",
    "tfk8s-strict-placement-in-production",
    "tfk8s-egress-in-production",
    "tfk8s-pod-defaults",
    "tfk8s-unpartitioned-embedding",
    "tfk8s-checkpoints-outlive-the-chief",
]
POLICIES = [_BY_NAME[name] for name in POLICY_ORDER]
MANDATORY_POLICIES = [p.name for p in POLICIES if p.enforcement_level == EnforcementLevel.MANDATORY]
