"""A team's namespace (`cluster.namespace: {name, existing: true}`): tfk8s creates only the
experiment's own objects there, named after the stack, and the checkpoints outlive `destroy`."""

from __future__ import annotations

import copy

import pytest

from components.objects.experiment_objects import kept_on_destroy_note
from components.objects.loading import load_experiment_values
from components.plan.trainer_bundle import load_trainer_bundle
from components.spec.stack_files import PROJECT_ROOT, read_stack_values
from tests.harness import reset_pulumi, run_program

TEAM = "ml-team"
SHARED = {"name": TEAM, "existing": True}


@pytest.fixture(autouse=True)
def _reset():
    yield
    reset_pulumi()


def values_of(stack: str, **cluster) -> dict:
    _, values = read_stack_values(stack)
    values = copy.deepcopy(values)
    values["tfk8s:cluster"].update(cluster)
    return values


def matches(selector: dict, labels: dict) -> bool:
    return all(labels.get(key) == value for key, value in selector["matchLabels"].items())


def pod_labels(run) -> list[dict]:
    (jobset,) = run.of_kind("JobSet")
    return [job["template"]["spec"]["template"]["metadata"]["labels"]
            for job in jobset.manifest["spec"]["replicatedJobs"]]


def test_two_experiments_share_a_teams_namespace_without_a_namespace_object_or_a_common_name():
    runs = {stack: run_program(stack, values_of("scene1-case1", namespace=SHARED))
            for stack in ("ranking-a", "ranking-b")}
    names = {}
    for stack, run in runs.items():
        assert not run.of_kind("Namespace"), "tfk8s never creates a team's namespace"
        namespaced = [m for m in run.manifests() if m["kind"] != "Node"]
        assert {m["metadata"]["namespace"] for m in namespaced} == {TEAM}
        names[stack] = {(m["kind"], m["metadata"]["name"]) for m in namespaced}
        assert all(name.startswith(f"{stack}-") for _, name in names[stack]), sorted(names[stack])
        assert run.outputs["namespace"] == TEAM and run.outputs["workloads"] == [f"jobset/{stack}-tf"]
    assert not names["ranking-a"] & names["ranking-b"]
    assert ("JobSet", "ranking-a-tf") in names["ranking-a"]
    assert ("NetworkPolicy", "ranking-a-tf-grpc-from-experiment-only") in names["ranking-a"]

    # Each NetworkPolicy selects its own experiment's pods, and only those, and lets in only them.
    for stack, other in (("ranking-a", "ranking-b"), ("ranking-b", "ranking-a")):
        (policy,) = runs[stack].of_kind("NetworkPolicy")
        spec = policy.manifest["spec"]
        (allowed,) = spec["ingress"][0]["from"]
        for labels in pod_labels(runs[stack]):
            assert matches(spec["podSelector"], labels) and matches(allowed["podSelector"], labels)
        for labels in pod_labels(runs[other]):
            assert not matches(spec["podSelector"], labels) and not matches(allowed["podSelector"], labels)


def test_task_addresses_and_references_use_the_stacks_names():
    run = run_program("ranking-a", values_of("scene1-case2-durable", namespace=SHARED))
    (jobset,) = run.of_kind("JobSet")
    chief = jobset.manifest["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    claims = [v["persistentVolumeClaim"]["claimName"] for v in chief["volumes"] if "persistentVolumeClaim" in v]
    config_maps = [v["configMap"]["name"] for v in chief["volumes"] if "configMap" in v]
    assert claims == ["ranking-a-tfk8s-checkpoints"] and config_maps == ["ranking-a-tfk8s-trainer"]
    assert chief["containers"][0]["envFrom"] == [{"configMapRef": {"name": "ranking-a-tfk8s-trainer-env"}}]
    cluster = run.named("ConfigMap", "ranking-a-tfk8s-trainer-env")["data"]["TFK8S_CLUSTER"]
    assert '"ranking-a-tf-ps-0-0.ranking-a-tf.ml-team.svc:2222"' in cluster


def test_statefulset_workloads_and_their_services_are_named_after_the_stack():
    run = run_program("ranking-a", values_of("scene1-case2", namespace=SHARED, workload="statefulset"))
    services = {m["metadata"]["name"] for m in run.manifests() if m["kind"] == "Service"}
    assert services == {"ranking-a-chief", "ranking-a-ps", "ranking-a-worker"}
    stateful_sets = [r.manifest for r in run.of_kind("StatefulSet")]
    assert all(s["metadata"]["name"].startswith("ranking-a-") and s["spec"]["serviceName"] in services
               for s in stateful_sets)
    (chief,) = run.of_kind("Job")
    pod = chief.manifest["spec"]["template"]["spec"]
    assert (chief.manifest["metadata"]["name"], pod["hostname"], pod["subdomain"]) == (
        "ranking-a-chief", "ranking-a-chief-0", "ranking-a-chief")
    cluster = run.named("ConfigMap", "ranking-a-tfk8s-trainer-env")["data"]["TFK8S_CLUSTER"]
    assert '"ranking-a-worker-srv-04-49.ranking-a-worker.ml-team.svc:2222"' in cluster


@pytest.mark.parametrize("namespace, keep, kept", [
    (None, True, {"Namespace", "PersistentVolumeClaim"}),  # deleting the namespace would delete the claim
    (None, False, set()),
    (SHARED, True, {"PersistentVolumeClaim"}),
    (SHARED, False, set()),
])
def test_destroy_keeps_the_checkpoints_unless_told_not_to(namespace, keep, kept):
    values = values_of("scene1-case2-durable", **({"namespace": namespace} if namespace else {}))
    values["tfk8s:cluster"]["chief"]["checkpointVolume"]["keep"] = keep
    run = run_program("durable", values)
    assert {r.kind for r in run.resources if r.custom and r.retain_on_delete} == kept
    assert run.of_kind("PersistentVolumeClaim")


def test_what_destroy_keeps_is_said_with_how_to_delete_it():
    bundle = load_trainer_bundle(PROJECT_ROOT)
    own = load_experiment_values("durable", values_of("scene1-case2-durable"), bundle)
    assert kept_on_destroy_note(own) == (
        "stack 'durable': pulumi destroy keeps namespace tf-durable with the checkpoint claim tfk8s-checkpoints "
        "(and nothing else of the experiment), so the next pulumi up resumes from the last checkpoint; to delete "
        "the checkpoints: kubectl delete namespace tf-durable, or set "
        "tfk8s:cluster.chief.checkpointVolume.keep: false and pulumi up before destroying")
    shared = load_experiment_values("durable", values_of("scene1-case2-durable", namespace=SHARED), bundle)
    assert "keeps the checkpoint claim durable-tfk8s-checkpoints in namespace ml-team" in kept_on_destroy_note(shared)
    assert "kubectl -n ml-team delete pvc durable-tfk8s-checkpoints" in kept_on_destroy_note(shared)
    assert kept_on_destroy_note(load_experiment_values("plain", values_of("scene1-case2"), bundle)) is None


def test_a_stack_without_the_new_keys_keeps_its_names_and_deletes_everything():
    run = run_program("scene1-case2", values_of("scene1-case2"))
    assert run.named("Namespace", "tf-scene1-case2")
    assert {m["metadata"]["name"] for m in run.manifests() if m["kind"] == "ConfigMap"} == {
        "tfk8s-trainer", "tfk8s-trainer-env"}
    assert not [r.kind for r in run.resources if r.retain_on_delete]
