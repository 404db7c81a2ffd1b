"""An experiment fifty times the seed's largest (scene1-case4: 1,000 servers, 1,000 PS, 10,000
workers) under mocks: no object grows with its servers past what etcd stores, no task is started
with an environment the kernel refuses, Kueue could admit it, and the policy pack passes it."""

from __future__ import annotations

import json

import pytest

from components.spec.kubernetes_limits import MAX_ARG_STRLEN as MAX_ENV_STRING
from components.spec.kubernetes_limits import MAX_CONFIG_MAP_BYTES
from components.spec.stack_files import read_stack_values
from tests.harness import run_program
from tests.pods import config_maps_of, pods_of, replicated_jobs
from tests.policy_harness import objects_of, tripped
from tests.runs import program_run
from tests.stack_variants import scaled_values

FACTOR = 50


@pytest.fixture(scope="module")
def large_run():
    stack, values = read_stack_values("scene1-case4")
    return run_program(f"{stack}-x{FACTOR}", scaled_values(values, FACTOR))


def rendered_bytes(manifest) -> int:
    return len(json.dumps(manifest, separators=(",", ":")).encode())


def sizes(run) -> dict[tuple[str, str], int]:
    """Each object's rendered size; node patches under one name (one per server, all alike), the
    namespace under none (it is named after the stack)."""
    return {
        (m["kind"], "" if m["kind"] in ("Node", "Namespace") else m["metadata"]["name"]): rendered_bytes(m)
        for m in run.manifests()
    }


def test_no_object_grows_with_the_servers(large_run):
    assert large_run.outputs["tasks"] == {"chief": 1, "ps": 1000, "worker": 10000, "evaluator": 0}
    base, large = sizes(program_run("scene1-case4")), sizes(large_run)
    # The one object that lists every task: their addresses, in their own ConfigMap (mounted as a file
    # past one variable's limit), within what a ConfigMap holds; the shared env no longer carries them.
    assert large.pop(("ConfigMap", "tfk8s-cluster")) < MAX_CONFIG_MAP_BYTES
    base.pop(("ConfigMap", "tfk8s-trainer-env"))
    assert large.pop(("ConfigMap", "tfk8s-trainer-env")) < 4096
    assert set(large) == set(base)
    grown = {key: (base[key], size) for key, size in large.items() if size > base[key] * 1.1 + 100}
    assert grown == {}  # 50 times the servers and tasks: larger counts, and a volume for the cluster
    (jobset,) = large_run.of_kind("JobSet")
    assert len(replicated_jobs(large_run)) == 3  # Kueue admits at most 8 pod sets


def test_every_task_starts_with_an_environment_the_kernel_takes_and_knows_its_task(large_run):
    config_maps = config_maps_of(large_run)
    pods = pods_of(large_run)
    assert len(pods) == 11_001
    env_strings = {
        len(f"{name}={value}".encode()) + 1 for pod in pods[:: len(pods) // 20] for name, value in pod.env(config_maps).items()
    }
    assert max(env_strings) <= MAX_ENV_STRING
    # The cluster reaches the tasks as a mounted file; first and last of each role know who they are.
    by_role: dict = {}
    for pod in pods:
        by_role.setdefault(pod.task.split("-")[0], []).append(pod)
    for role, role_pods in by_role.items():
        for pod in (role_pods[0], role_pods[-1]):
            tf_config = pod.tf_config(config_maps)
            assert f"{role}-{tf_config['task']['index']}" == pod.task
            assert tf_config["cluster"][role][tf_config["task"]["index"]].startswith(f"{pod.hostname}.{pod.subdomain}.")
            assert len(tf_config["cluster"]["worker"]) == 10_000


def test_the_policy_pack_passes_it(large_run):
    assert tripped(objects_of(large_run)) == {}
