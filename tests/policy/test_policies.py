"""The policy pack: every stack passes; each deliberately broken program trips exactly its policy."""

from __future__ import annotations

import copy
import json
import subprocess

import pytest

from components.spec.stack_files import read_stack_values
from tests.harness import run_program
from tests.policy_harness import MANDATORY, POLICIES, Object, objects_of, tripped, violations
from tests.runs import SHIPPED_STACKS, EXAMPLE_STACKS, program_run
from trainer.settings import TrainerSettings


def find(objects: list[Object], kind: str, name: str) -> Object:
    return next(o for o in objects if o.kind == kind and o.props["metadata"]["name"] == name)


def group(objects: list[Object], name: str) -> Object:
    """A task group's Job template in the experiment's JobSet, as an object whose changes are the JobSet's."""
    jobset = find(objects, "JobSet", "tf")
    (replicated,) = [r for r in jobset.props["spec"]["replicatedJobs"] if r["name"] == name]
    return Object(jobset.type, name, jobset.urn, {"metadata": {"name": name}, "spec": replicated["template"]["spec"]})


_statefulset_runs: dict = {}


def statefulset_run(stack: str):
    """The program's run of `stack` under the StatefulSet workload model."""
    if stack not in _statefulset_runs:
        name, values = read_stack_values(stack)
        values = copy.deepcopy(values)
        values["tfk8s:cluster"]["workload"] = "statefulset"
        _statefulset_runs[stack] = run_program(name, values)
    return _statefulset_runs[stack]


def pod_spec(obj: Object) -> dict:
    return obj.props["spec"]["template"]["spec"]


def container(obj: Object) -> dict:
    return pod_spec(obj)["containers"][0]


@pytest.mark.parametrize("stack", SHIPPED_STACKS)
def test_every_stack_passes_the_mandatory_policies(stack):
    """Any stack in stacks/, a user's own included: nothing that would stop `pulumi up`."""
    assert tripped(objects_of(program_run(stack))) == {}


@pytest.mark.parametrize("stack", EXAMPLE_STACKS)
def test_the_example_stacks_trip_no_advisory_policy_either(stack):
    assert tripped(objects_of(program_run(stack)), POLICIES) == {}


@pytest.mark.parametrize("stack", EXAMPLE_STACKS)
def test_the_example_stacks_as_statefulsets_pass_every_policy(stack):
    assert tripped(objects_of(statefulset_run(stack)), POLICIES) == {}


def test_an_experiment_with_an_evaluator_passes_every_policy():
    """The evaluator's pod is a TF pod like the others (seccomp, read-only root, no token), though
    it serves no port: nothing in the pack asks it to."""
    name, values = read_stack_values("scene1-case2-durable")
    values = copy.deepcopy(values)
    values["tfk8s:cluster"]["evaluator"] = {"replicas": 1}
    run = run_program(name, values)
    (jobset,) = [obj for obj in objects_of(run) if obj.kind == "JobSet"]
    assert "evaluator" in [job["name"] for job in jobset.props["spec"]["replicatedJobs"]]
    assert tripped(objects_of(run), POLICIES) == {}
    objects = objects_of(run)
    (jobset,) = [obj for obj in objects if obj.kind == "JobSet"]
    (evaluator,) = [job for job in jobset.props["spec"]["replicatedJobs"] if job["name"] == "evaluator"]
    evaluator["template"]["spec"]["completions"] = evaluator["template"]["spec"]["parallelism"] = 2
    assert tripped(objects) == {
        "tfk8s-tf-config-consistent": [
            "experiment scene1-case2-durable in tf-scene1-case2-durable: JobSet tf/evaluator is task evaluator-1: "
            "TensorFlow runs one evaluator, evaluator-0, and no cluster lists it"
        ]
    }


def test_every_policy_has_a_description_severity_and_remediation():
    for policy in POLICIES.values():
        assert policy.description and policy.severity and policy.remediation_steps
        assert policy.enforcement_level is not None


# -- one broken program per mandatory policy ------------------------------------


def drop_network_policy(objects):
    return [o for o in objects if o.kind != "NetworkPolicy"]


def node_port_service(objects):  # StatefulSet model: a Service per role
    spec = find(objects, "Service", "worker").props["spec"]
    spec.pop("clusterIP")
    spec["type"] = "NodePort"
    return objects


def inconsistent_tf_config(objects):
    # The workers' own cluster, one worker short.
    workers = group(objects, "worker")
    cluster = json.loads(find(objects, "ConfigMap", "tfk8s-trainer-env").props["data"]["TFK8S_CLUSTER"])
    cluster["worker"] = cluster["worker"][:-1]
    container(workers)["env"].append({"name": "TFK8S_CLUSTER", "value": json.dumps(cluster)})
    return objects


def ps_tolerates_gpus(objects):
    pod_spec(group(objects, "ps"))["tolerations"] = [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    ]
    return objects


def fractional_gpus(objects):
    for replicated in find(objects, "JobSet", "tf").props["spec"]["replicatedJobs"]:
        if replicated["name"] == "worker":
            container(group(objects, replicated["name"]))["resources"]["limits"]["nvidia.com/gpu"] = "1.5"
    return objects


def one_worker_with_more_gpus(objects):  # StatefulSet model: a workload per server
    first = next(o for o in objects if o.kind == "StatefulSet" and o.props["metadata"]["name"].startswith("worker-"))
    container(first)["resources"]["limits"]["nvidia.com/gpu"] = "2"
    return objects


def worker_with_its_own_partition(objects):
    # One worker's literal env value overrides the shared settings: it would shard the table by range.
    settings = json.loads(find(objects, "ConfigMap", "tfk8s-trainer-env").props["data"]["TFK8S_TRAINER"])
    assert settings["partition"] == "auto"
    overridden = json.dumps(settings | {"partition": "range"})
    TrainerSettings.from_json(overridden)  # settings the trainer accepts
    container(group(objects, "worker"))["env"].append({"name": "TFK8S_TRAINER", "value": overridden})
    return objects


def latest_image(objects):
    container(group(objects, "worker"))["image"] = "tensorflow/tensorflow:latest"
    return objects


def shared_process_namespace(objects):
    pod_spec(group(objects, "worker"))["shareProcessNamespace"] = True
    return objects


def stray_object_in_default_namespace(objects):
    stray = Object("kubernetes:core/v1:ConfigMap", "stray", "urn:stray", {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "stray", "namespace": "default"}, "data": {},
    })
    return objects + [stray]


def removed_api_version(objects):  # StatefulSet model
    find(objects, "StatefulSet", "worker-srv-00").type = "kubernetes:apps/v1beta1:StatefulSet"
    return objects


# (policy: stack, how its program is broken, what the policy says; "sts:" runs the StatefulSet model)
BROKEN = {
    "tfk8s-tf-grpc-isolation": ("scene1-case1", drop_network_policy, "no NetworkPolicy selects its pods"),
    "tfk8s-headless-task-services": ("sts:scene1-case1", node_port_service, "Service worker is NodePort"),
    "tfk8s-tf-config-consistent": ("scene1-case1", inconsistent_tf_config, "tasks disagree on the cluster"),
    "tfk8s-ps-without-gpu": ("scene1-case1", ps_tolerates_gpus, "PS tf/ps tolerates the GPU taint"),
    "tfk8s-gpu-containers": ("gpu-p40", fractional_gpus, "must be a whole number in limits"),
    "tfk8s-uniform-gpu-workers": ("sts:gpu-p40", one_worker_with_more_gpus, "workers differ in GPUs"),
    "tfk8s-embedding-shards-match-ps": (
        "scene1-case2", worker_with_its_own_partition,
        "worker gets other trainer settings than the chief (partition 'range', 5 embedding shards, "
        "against the chief's 'auto', 5 shards for 5 PS)",
    ),
    "tfk8s-container-hygiene": ("scene1-case1", latest_image, "untagged or latest"),
    "tfk8s-tf-pod-security": ("scene1-case1", shared_process_namespace, "shareProcessNamespace is on"),
    "tfk8s-not-default-namespace": ("scene1-case1", stray_object_in_default_namespace, "in the default namespace"),
    "tfk8s-no-removed-apis": ("sts:scene1-case1", removed_api_version, "apps/v1beta1 StatefulSet was removed"),
}


def test_every_mandatory_policy_has_a_broken_program():
    assert set(BROKEN) == set(MANDATORY)


@pytest.mark.parametrize("name, trips", [
    pytest.param("tfm7dpd", False, id="tf + 5 generated characters: preview's name for the replacement"),
    pytest.param("tfaeiou", True, id="tf + 5 characters the name generator never makes"),
    pytest.param("other", True, id="a name no address derives from"),
])
def test_a_jobset_that_preview_renamed_for_its_replacement_is_read_under_its_own_name(name, trips):
    """pulumi-kubernetes previews replacing a JobSet (its spec is immutable) by a dry-run create
    under a generated name, which the stack policies then see: the experiment must still pass."""
    objects = objects_of(program_run("scene1-case2"))
    find(objects, "JobSet", "tf").props["metadata"]["name"] = name
    found = tripped(objects)
    assert ("tfk8s-tf-config-consistent" in found) == trips, found
    if trips:
        assert any("no Service tf in tf-scene1-case2" in message for message in found["tfk8s-tf-config-consistent"])


def test_tf_config_referring_to_an_undefined_variable_is_reported():
    objects = objects_of(program_run("scene1-case1"))
    del find(objects, "ConfigMap", "tfk8s-trainer-env").props["data"]["TFK8S_CLUSTER"]
    found = tripped(objects)
    assert list(found) == ["tfk8s-tf-config-consistent"], found
    assert any("TF_CONFIG refers to TFK8S_CLUSTER, which no env or envFrom ConfigMap" in m for m in found["tfk8s-tf-config-consistent"])


def one_worker_short(objects):
    find(objects, "StatefulSet", "worker-srv-00").props["spec"]["replicas"] = 9
    return objects


def overlapping_ordinals(objects):
    find(objects, "StatefulSet", "worker-srv-01").props["spec"]["ordinals"]["start"] = 5
    return objects


def workers_under_another_service(objects):
    find(objects, "StatefulSet", "worker-srv-00").props["spec"]["serviceName"] = "ps"
    return objects


def no_task_index(objects):
    env = container(find(objects, "StatefulSet", "worker-srv-00"))["env"]
    env[:] = [item for item in env if item["name"] != "TFK8S_TASK_INDEX"]
    return objects


def one_jobset_worker_short(objects):
    group(objects, "worker").props["spec"]["completions"] = 49
    return objects


def shifted_first_index(objects):
    env = container(group(objects, "worker"))["env"]
    (first,) = [item for item in env if item["name"] == "TFK8S_FIRST_INDEX"]
    first["value"] = "1"
    return objects


def jobset_without_dns_names(objects):
    find(objects, "JobSet", "tf").props["spec"]["network"]["enableDNSHostnames"] = False
    return objects


def no_first_index(objects):
    env = container(group(objects, "worker"))["env"]
    env[:] = [item for item in env if item["name"] != "TFK8S_FIRST_INDEX"]
    return objects


@pytest.mark.parametrize("breaks, message", [
    (one_jobset_worker_short, "worker-49 address tf-worker-0-49.tf.tf-scene1-case2.svc:2222: no pod has host "
                              "name tf-worker-0-49 under Service tf"),
    (shifted_first_index, "pod tf-worker-0-4 runs worker-5, not worker-4"),
    (jobset_without_dns_names, "worker-0 address tf-worker-0-0.tf.tf-scene1-case2.svc:2222: no Service tf"),
    (no_first_index, "JobSet tf/worker: TF_CONFIG refers to TFK8S_FIRST_INDEX, which no env"),
])
def test_a_jobset_task_without_exactly_one_pod_at_its_address_is_reported(breaks, message):
    found = tripped(breaks(objects_of(program_run("scene1-case2"))))
    assert list(found) == ["tfk8s-tf-config-consistent"], found
    assert any(message in text for text in found["tfk8s-tf-config-consistent"]), found


@pytest.mark.parametrize("breaks, message", [
    (one_worker_short, "worker-9 address worker-srv-00-9.worker.tf-scene1-case2.svc:2222: no pod has host name "
                       "worker-srv-00-9 under Service worker"),
    # (which of the two pods is named first follows the order the engine lists resources in)
    (overlapping_ordinals, "are both task worker-5"),
    (workers_under_another_service, "worker-0 address worker-srv-00-0.worker.tf-scene1-case2.svc:2222: no pod has "
                                    "host name worker-srv-00-0 under Service worker"),
    (no_task_index, "StatefulSet worker-srv-00: TF_CONFIG refers to TFK8S_TASK_INDEX, which no env"),
])
def test_a_task_without_exactly_one_pod_at_its_address_is_reported(breaks, message):
    found = tripped(breaks(objects_of(statefulset_run("scene1-case2"))))
    assert list(found) == ["tfk8s-tf-config-consistent"], found
    assert any(message in text for text in found["tfk8s-tf-config-consistent"]), found
    if breaks is overlapping_ordinals:
        (both,) = [text for text in found["tfk8s-tf-config-consistent"] if message in text]
        assert "pod worker-srv-00-5" in both and "pod worker-srv-01-5" in both


@pytest.mark.parametrize("policy", list(BROKEN))
def test_broken_program_trips_exactly_its_policy(policy):
    stack, breaks, message = BROKEN[policy]
    run = statefulset_run(stack.removeprefix("sts:")) if stack.startswith("sts:") else program_run(stack)
    found = tripped(breaks(objects_of(run)))
    assert list(found) == [policy], found
    assert any(message in text for text in found[policy]), found[policy]


# -- property-missing and hand-built cases ---------------------------------------


def workload(name="w", component="worker", spec=None, labels=None, kind="StatefulSet", namespace="tf-x") -> Object:
    template_labels = {"app.kubernetes.io/instance": "x", "app.kubernetes.io/component": component, **(labels or {})}
    return Object(f"kubernetes:apps/v1:{kind}", name, f"urn:{name}", {
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"template": {"metadata": {"labels": template_labels}, "spec": spec if spec is not None else {}}},
    })


def test_container_without_security_context_or_resources_is_reported_not_crashed():
    bare = workload(spec={"containers": [{"name": "c", "image": "repo/img:1"}]})
    found = violations("tfk8s-container-hygiene", [bare])
    assert any("set cpu and memory requests" in m for m in found)
    assert any("set a memory limit" in m for m in found)
    assert any("allowPrivilegeEscalation" in m for m in found)
    assert any("runAsNonRoot" in m for m in found)


def test_host_access_is_reported():
    spec = {"hostNetwork": True, "volumes": [{"name": "h", "hostPath": {"path": "/"}}], "containers": [
        {"name": "c", "image": "i:1", "ports": [{"containerPort": 2222, "hostPort": 2222}]}]}
    found = violations("tfk8s-container-hygiene", [workload(spec=spec)])
    assert any("hostNetwork" in m for m in found) and any("hostPath" in m for m in found) and any("hostPort" in m for m in found)


def test_pod_on_tf_port_without_any_network_policy_is_reported():
    spec = {"containers": [{"name": "c", "image": "i:1", "ports": [{"containerPort": 2222}]}]}
    assert violations("tfk8s-tf-grpc-isolation", [workload(spec=spec)])
    plain = {"containers": [{"name": "c", "image": "i:1"}]}
    assert violations("tfk8s-tf-grpc-isolation", [workload(spec=plain)]) == []


@pytest.mark.parametrize("peer, problem", [
    ({"ipBlock": {"cidr": "0.0.0.0/0"}}, "ipBlock"),
    ({"namespaceSelector": {}}, "other namespaces"),
    ({"podSelector": {}}, "beyond this experiment"),
], ids=["an ipBlock", "every namespace", "every pod of the namespace"])
def test_network_policy_peers_that_open_the_port_too_wide(peer, problem):
    spec = {"containers": [{"name": "c", "image": "i:1", "ports": [{"containerPort": 2222}]}]}
    policy = Object("kubernetes:networking.k8s.io/v1:NetworkPolicy", "np", "urn:np", {
        "metadata": {"name": "np", "namespace": "tf-x"},
        "spec": {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": [{"from": [peer], "ports": [{"port": 2222}]}]},
    })
    found = violations("tfk8s-tf-grpc-isolation", [workload(spec=spec), policy])
    assert any(problem in m for m in found), found


def test_service_without_spec_is_not_a_crash():
    service = Object("kubernetes:core/v1:Service", "s", "urn:s", {"metadata": {"name": "s", "namespace": "tf-x"}})
    assert violations("tfk8s-headless-task-services", [service]) == []


def test_missing_trainer_settings_is_a_violation():
    objects = [o for o in objects_of(program_run("scene1-case1")) if o.props["metadata"]["name"] != "tfk8s-trainer-env"]
    found = violations("tfk8s-embedding-shards-match-ps", objects)
    assert found and "no readable trainer settings" in found[0]


def test_ratio_thresholds_come_from_the_pack_config():
    objects = objects_of(program_run("scene1-case1"))  # 1 PS : 10 workers
    assert violations("tfk8s-ps-worker-ratio", objects) == []
    found = violations("tfk8s-ps-worker-ratio", objects, config={"minWorkersPerPs": 3, "maxWorkersPerPs": 5})
    assert found and "1:10.0, outside 1:3 to 1:5" in found[0]


def test_ps_memory_below_its_shard_is_flagged():
    objects = objects_of(program_run("gpu-p40"))
    container(group(objects, "ps"))["resources"]["requests"]["memory"] = "1Gi"
    found = violations("tfk8s-ps-memory-fits-shard", objects)
    assert len(found) == 1 and "PS tf/ps requests 1Gi" in found[0]


def test_strict_placement_is_flagged_only_in_production():
    objects = objects_of(program_run("scene1-case1"))
    assert violations("tfk8s-strict-placement-in-production", objects) == []
    found = violations("tfk8s-strict-placement-in-production", objects, stack_tags={"production": "true"})
    # The PS and the 10 workers are held to their server's share, by their two Jobs; the chief is not.
    assert sorted(found) == [
        f"tf/{name} holds each server to its share of its {pods}; in production a lost server strands its share "
        "(set cluster.strict: false)" for name, pods in (("ps", "1 pod"), ("worker", "10 pods"))
    ]
    found = violations("tfk8s-strict-placement-in-production", objects_of(statefulset_run("scene1-case1")),
                       stack_tags={"production": "true"})
    # Under the StatefulSet model each task is pinned to its server.
    assert sorted(found) == [
        f"{name} requires one named server for its {pods}; in production a lost server strands them "
        "(set cluster.strict: false)" for name, pods in (("ps-srv-00", "1 pod"), ("worker-srv-00", "10 pods"))
    ]


def test_a_production_stack_is_advised_against_strict_pinning():
    name, values = read_stack_values("scene1-case1")
    values = copy.deepcopy(values)
    values["tfk8s:cluster"]["production"] = True
    objects = objects_of(run_program(name, values))
    assert len(violations("tfk8s-strict-placement-in-production", objects)) == 2
    values["tfk8s:cluster"]["strict"] = False
    assert violations("tfk8s-strict-placement-in-production", objects_of(run_program(name, values))) == []


def test_a_production_stack_is_advised_to_list_its_egress_and_passes_once_it_does():
    name, values = read_stack_values("scene1-case1")
    values = copy.deepcopy(values)
    assert violations("tfk8s-egress-in-production", objects_of(run_program(name, values))) == []
    values["tfk8s:cluster"]["production"] = True
    found = violations("tfk8s-egress-in-production", objects_of(run_program(name, values)))
    assert found == [
        f"JobSet tf/{role}: its pods may connect anywhere; a production experiment lists where "
        "(tfk8s:cluster.egress), so that code sent to its gRPC port cannot send the data or the model out"
        for role in ("chief", "ps", "worker")
    ]
    values["tfk8s:cluster"]["egress"] = [{"cidr": "10.20.0.0/16", "ports": [8020]}]
    objects = objects_of(run_program(name, values))
    assert violations("tfk8s-egress-in-production", objects) == []
    assert tripped(objects) == {}, "the egress policy passes every mandatory policy"


def test_a_production_experiment_in_a_teams_namespace_gets_the_production_advice_too():
    """tfk8s labels no namespace it does not own: the pods carry the production label."""
    name, values = read_stack_values("scene1-case1")
    values = copy.deepcopy(values)
    values["tfk8s:cluster"].update(production=True, namespace={"name": "team-a", "existing": True})
    objects = objects_of(run_program(name, values))
    assert not [o for o in objects if o.kind == "Namespace"]
    assert len(violations("tfk8s-egress-in-production", objects)) == 3
    assert len(violations("tfk8s-strict-placement-in-production", objects)) == 2


@pytest.mark.parametrize("spec, limits", [
    pytest.param({"policyTypes": ["Egress"], "egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/8"}}]}]}, True,
                 id="listed"),
    pytest.param({"egress": [{"ports": [{"port": 443}]}]}, True, id="no policyTypes: egress rules make it Egress"),
    pytest.param({"policyTypes": ["Egress"]}, True, id="no rule: nothing leaves"),
    pytest.param({"policyTypes": ["Egress"], "egress": [{}]}, False, id="a rule that admits everything"),
    pytest.param({"policyTypes": ["Ingress"], "ingress": [{}]}, False, id="ingress only"),
    pytest.param({}, False, id="no types, no rules: Ingress"),
])
def test_what_limits_egress(spec, limits):
    from tfk8s_policies.network import limits_egress

    assert limits_egress(spec) is limits


def test_unpartitioned_embedding_is_advisory_flagged():
    objects = objects_of(program_run("scene1-case1"))
    settings_map = find(objects, "ConfigMap", "tfk8s-trainer-env").props["data"]
    settings = json.loads(settings_map["TFK8S_TRAINER"]) | {"partition": "none"}
    settings_map["TFK8S_TRAINER"] = json.dumps(settings)
    assert tripped(objects) == {}, "partition: none is allowed"
    assert violations("tfk8s-unpartitioned-embedding", objects)


def test_pod_defaults_advise_a_tcp_readiness_probe_on_each_ps():
    objects = objects_of(program_run("scene1-case1"))
    del container(group(objects, "ps"))["readinessProbe"]
    assert violations("tfk8s-pod-defaults", objects) == [
        "PS tf/ps: no tcpSocket readiness probe on its gRPC port"
    ]


# (what a stack's pods could loosen; what tfk8s-tf-pod-security says) — each mandatory, each tripped
# alone on the ps of a seed experiment.
LOOSENED = {
    "pod seccomp Unconfined": (
        lambda ps: pod_spec(ps)["securityContext"].update(seccompProfile={"type": "Unconfined"}),
        "tf/ps: seccompProfile is Unconfined; use RuntimeDefault",
    ),
    "container seccomp Unconfined": (
        lambda ps: container(ps)["securityContext"].update(seccompProfile={"type": "Unconfined"}),
        "tf/ps/tensorflow: seccompProfile is Unconfined; use RuntimeDefault",
    ),
    "procMount Unmasked": (
        lambda ps: container(ps)["securityContext"].update(procMount="Unmasked"),
        "tf/ps/tensorflow: procMount is Unmasked; leave it Default",
    ),
    "an unsafe sysctl": (
        lambda ps: pod_spec(ps)["securityContext"].update(
            sysctls=[{"name": "net.ipv4.tcp_syncookies", "value": "1"}, {"name": "kernel.msgmax", "value": "65536"}]
        ),
        "tf/ps: sets unsafe sysctls kernel.msgmax",
    ),
    "shareProcessNamespace": (
        lambda ps: pod_spec(ps).update(shareProcessNamespace=True),
        "tf/ps: shareProcessNamespace is on: its containers see each other's processes and files",
    ),
    "hostUsers: true written out": (
        lambda ps: pod_spec(ps).update(hostUsers=True),
        "tf/ps: hostUsers: true written out; leave it out (the cluster's default) or set false",
    ),
    "a service-account token": (
        lambda ps: pod_spec(ps).update(automountServiceAccountToken=True),
        "tf/ps: set automountServiceAccountToken: false (a task needs no API token)",
    ),
    "no automountServiceAccountToken": (
        lambda ps: pod_spec(ps).pop("automountServiceAccountToken"),
        "tf/ps: set automountServiceAccountToken: false (a task needs no API token)",
    ),
    "a writable root filesystem": (
        lambda ps: container(ps)["securityContext"].update(readOnlyRootFilesystem=False),
        "tf/ps/tensorflow: set readOnlyRootFilesystem: true (write to a volume)",
    ),
    "a system PriorityClass": (
        lambda ps: pod_spec(ps).update(priorityClassName="system-node-critical"),
        "tf/ps: priorityClassName system-node-critical is the cluster's own; create one for experiments",
    ),
}


@pytest.mark.parametrize("loosened", list(LOOSENED))
def test_a_tf_pod_that_loosens_its_security_is_refused(loosened):
    objects = objects_of(program_run("scene1-case1"))
    loosen, said = LOOSENED[loosened]
    loosen(group(objects, "ps"))
    found = tripped(objects)
    assert found == {"tfk8s-tf-pod-security": [said]}, found


def test_what_the_pod_security_policy_leaves_alone():
    """Safe sysctls, hostUsers: false, a PriorityClass of the team's own, and a pod that serves no
    TensorFlow (a sidecar's Deployment) pass."""
    objects = objects_of(program_run("scene1-case1"))
    ps = group(objects, "ps")
    pod_spec(ps)["securityContext"]["sysctls"] = [
        {"name": "net.ipv4.tcp_keepalive_time", "value": "60"},
        {"name": "net.ipv4.tcp_rmem", "value": "4096 131072 6291456"},
    ]
    pod_spec(ps).update(hostUsers=False, priorityClassName="experiments")
    assert tripped(objects) == {}
    helper = workload(spec={"containers": [{"name": "web", "securityContext": {"procMount": "Unmasked"}}]})
    assert violations("tfk8s-tf-pod-security", [helper]) == []


SPARSE_OBJECTS = [
    Object("kubernetes:core/v1:Service", "s", "urn:s", {}),
    Object("kubernetes:apps/v1:StatefulSet", "w", "urn:w", {"metadata": {"name": "w"}}),
    workload(spec={}),
    workload(spec={"containers": [{}]}),
    workload(component="ps", spec={"containers": [{"env": [{"name": "TF_CONFIG", "value": "not json"}]}]}),
    Object("kubernetes:networking.k8s.io/v1:NetworkPolicy", "np", "urn:np", {"metadata": {"name": "np"}}),
    Object("kubernetes:core/v1:ConfigMap", "cm", "urn:cm", {"metadata": {"name": "cm", "namespace": "tf-x"}}),
]


@pytest.mark.parametrize("policy", list(POLICIES))
def test_every_policy_copes_with_missing_properties(policy):
    violations(policy, SPARSE_OBJECTS)  # reports or passes; never raises


def test_missing_properties_that_a_rule_needs_are_violations():
    assert any("default namespace" in m for m in violations("tfk8s-not-default-namespace", SPARSE_OBJECTS))
    found = violations("tfk8s-tf-config-consistent", SPARSE_OBJECTS)
    assert any("TF_CONFIG is not valid JSON" in m for m in found)
    gpu_without_product = workload(spec={"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 1}}}]})
    assert any("without selecting a GPU product" in m for m in violations("tfk8s-gpu-containers", [gpu_without_product]))


# -- scope of the default-namespace rule ------------------------------------------


@pytest.mark.parametrize("obj", [
    Object("kubernetes:scheduling.k8s.io/v1:PriorityClass", "pc", "urn:pc",
           {"metadata": {"name": "tf-high"}, "value": 1000}),
    Object("kubernetes:admissionregistration.k8s.io/v1:ValidatingWebhookConfiguration", "vwc", "urn:vwc",
           {"metadata": {"name": "hook"}, "webhooks": []}),
    Object("kubernetes:storage.k8s.io/v1:StorageClassPatch", "scp", "urn:scp", {"metadata": {"name": "fast"}}),
    Object("kubernetes:helm.sh/v3:Release", "rel", "urn:rel",
           {"name": "monitoring", "chart": "prometheus", "namespace": "monitoring"}),
], ids=["PriorityClass (cluster-scoped)", "webhook configuration (cluster-scoped)", "StorageClass patch (cluster-scoped)",
        "Helm release in its own namespace"])
def test_cluster_scoped_objects_and_namespaced_releases_are_not_in_the_default_namespace(obj):
    assert violations("tfk8s-not-default-namespace", [obj]) == []


@pytest.mark.parametrize("obj", [
    Object("kubernetes:helm.sh/v3:Release", "rel", "urn:rel", {"name": "monitoring", "chart": "prometheus"}),
    Object("kubernetes:helm.sh/v3:Release", "rel", "urn:rel",
           {"name": "monitoring", "chart": "prometheus", "namespace": "default"}),
    Object("kubernetes:core/v1:SecretPatch", "sp", "urn:sp", {"metadata": {"name": "pull", "namespace": "default"}}),
], ids=["Helm release without a namespace", "Helm release in default", "Secret patch in default"])
def test_namespaced_objects_in_default_are_still_reported(obj):
    found = violations("tfk8s-not-default-namespace", [obj])
    assert len(found) == 1 and "is in the default namespace" in found[0]


# -- which ingress rules open the TF port ------------------------------------------


def tf_pod_and_policy(ports) -> list[Object]:
    spec = {"containers": [{"name": "c", "image": "i:1", "ports": [{"name": "tf-grpc", "containerPort": 2222}]}]}
    rule = {"from": []} if ports is None else {"from": [], "ports": ports}
    policy = Object("kubernetes:networking.k8s.io/v1:NetworkPolicy", "np", "urn:np", {
        "metadata": {"name": "np", "namespace": "tf-x"},
        "spec": {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": [rule]},
    })
    return [workload(spec=spec), policy]


@pytest.mark.parametrize("ports", [
    [{"port": 2000, "endPort": 3000}],
    [{"protocol": "TCP", "port": 2222}],
    [{"port": "tf-grpc"}],
    [{"protocol": "TCP"}],
    None,  # no ports: every port
    [{"port": 80}, {"port": 2200, "endPort": 2222}],
], ids=["a range over 2222", "TCP 2222", "the port's name", "TCP, every port", "no ports: every port",
        "a second rule ending at 2222"])
def test_an_open_rule_that_covers_the_tf_port_is_reported(ports):
    found = violations("tfk8s-tf-grpc-isolation", tf_pod_and_policy(ports))
    assert len(found) == 1 and "admits every source (empty 'from') on port 2222" in found[0], found


@pytest.mark.parametrize("ports", [
    [{"port": 2000, "endPort": 2221}],
    [{"port": 8080}],
    [{"port": "metrics"}],
    [{"protocol": "UDP", "port": 2222}],
], ids=["a range ending at 2221", "another port", "another port's name", "UDP 2222"])
def test_an_open_rule_that_misses_the_tf_port_is_not_reported(ports):
    assert violations("tfk8s-tf-grpc-isolation", tf_pod_and_policy(ports)) == []


@pytest.mark.parametrize("service_type", ["LoadBalancer", "NodePort"])
def test_an_exposed_service_reaching_the_tf_port_by_name_is_reported(service_type):
    service = Object("kubernetes:core/v1:Service", "s", "urn:s", {
        "metadata": {"name": "tf-public", "namespace": "tf-x"},
        "spec": {"type": service_type, "selector": {"app": "x"}, "ports": [{"port": 80, "targetPort": "tf-grpc"}]},
    })
    found = violations("tfk8s-headless-task-services", [service])
    assert any(f"Service tf-public is {service_type}" in m for m in found), found


def test_setup_creates_the_virtualenv_the_policy_pack_names():
    import re

    import yaml

    from tests.harness import PROJECT_ROOT

    named = yaml.safe_load((PROJECT_ROOT / "policy" / "PulumiPolicy.yaml").read_text())["runtime"]["options"]["virtualenv"]
    makefile = (PROJECT_ROOT / "Makefile").read_text()
    created = re.search(r"^POLICY_VENV := (\S+)$", makefile, re.M).group(1)
    assert created == f"policy/{named}", "make setup must create the virtualenv PulumiPolicy.yaml names"
    assert re.search(r"^setup: .*\$\(POLICY_STAMP\)", makefile, re.M), "setup builds the policy environment"
    assert "venv.sh $(POLICY_VENV) policy/requirements.txt" in makefile, "it installs the pack's requirements"
    # And setup did create it: the pack's own interpreter imports the pack's SDK.
    python = PROJECT_ROOT / "policy" / named / "bin" / "python"
    assert python.exists(), "run `make setup`: it creates policy/venv"
    check = subprocess.run([str(python), "-c", "import pulumi_policy"], capture_output=True, text=True)
    assert check.returncode == 0, check.stderr


def test_long_runs_with_checkpoints_on_scratch_are_advised():
    name, values = read_stack_values("scene1-case2-durable")
    values = copy.deepcopy(values)
    assert violations("tfk8s-checkpoints-outlive-the-chief", objects_of(program_run(name))) == []
    del values["tfk8s:cluster"]["chief"]  # the same long run, checkpoints on the pod's scratch space
    objects = objects_of(run_program(name, values))
    found = violations("tfk8s-checkpoints-outlive-the-chief", objects)
    assert len(found) == 1 and "100 checkpoint intervals of training keep their checkpoints on the pod's scratch space" in found[0]
    assert tripped(objects) == {}, "advisory: it does not block"
    assert violations("tfk8s-checkpoints-outlive-the-chief", objects, config={"maxScratchCheckpointIntervals": 100}) == []
    # Short runs, like the seed stacks' 1000 steps at 500 per checkpoint, are not flagged.
    assert violations("tfk8s-checkpoints-outlive-the-chief", objects_of(program_run("scene1-case2"))) == []


def test_a_queued_experiment_passes_every_policy():
    name, values = read_stack_values("scene1-case2")
    values = copy.deepcopy(values)
    values["tfk8s:cluster"]["queue"] = "team-a"
    run = run_program(name, values)
    (queue,) = [o for o in objects_of(run) if o.kind == "LocalQueue"]
    assert queue.props["spec"] == {"clusterQueue": "team-a"}
    assert find(objects_of(run), "JobSet", "tf").props["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "tfk8s"
    assert tripped(objects_of(run), POLICIES) == {}


def test_an_experiment_with_digest_images_gpu_workers_and_the_new_settings_passes_every_policy():
    """The pack accepts what the stack reference offers: digests, tolerations, a priority class, a deadline."""
    name, values = read_stack_values("gpu-p40")
    values = copy.deepcopy(values)
    values["tfk8s:cluster"].update(
        image="registry.example.com/tensorflow@sha256:" + "0f" * 32,
        gpuImage="registry.example.com/tensorflow@sha256:" + "1e" * 32,
        priorityClass="research-low",
        chief={"activeDeadlineSeconds": 86400, "tolerations": [{"key": "dedicated", "operator": "Exists"}],
               "failOn": [2]},
        startDeadline="15m",
    )
    values["tfk8s:cluster"]["workers"]["tolerations"] = [{"key": "dedicated", "value": "ml", "effect": "NoSchedule"}]
    values["tfk8s:cluster"]["workers"]["failOn"] = ["64-78"]
    assert tripped(objects_of(run_program(name, values))) == {}


# -- the team's own program ------------------------------------------------------


# done: workers needs the JobSet model (a StatefulSet's workers never finish: refused at plan).
@pytest.mark.parametrize("workload, done", [("jobset", "chief"), ("jobset", "workers"), ("statefulset", "chief")])
def test_a_program_stack_passes_every_policy_and_tf_config_is_read_from_its_environment(workload, done):
    from tests.objects.test_program import TF2_SOURCE, program_values

    run = run_program(*program_values({"source": TF2_SOURCE, "command": ["python", "train.py"], "done": done},
                                      workload=workload))
    objects = objects_of(run)
    assert tripped(objects, POLICIES) == {}
    # The TF_CONFIG check reads the program's TF_CONFIG (the kubelet's expansion), so it still bites.
    assert violations("tfk8s-tf-config-consistent", one_jobset_worker_short(objects) if workload == "jobset"
                      else one_worker_short(objects))


@pytest.mark.parametrize("done", ["chief", "workers"])
def test_a_worker_only_program_passes_every_policy_and_the_ps_rules_do_not_apply(done):
    from tests.objects.test_program import program_values

    name, values = program_values({"command": ["python", "train.py"], "done": done})
    values["tfk8s:cluster"]["ps"] = {"replicas": 0}
    objects = objects_of(run_program(name, values))
    jobset = find(objects, "JobSet", "tf")
    assert "ps" not in [job["name"] for job in jobset.props["spec"]["replicatedJobs"]], "no PS task"
    assert tripped(objects, POLICIES) == {}
    # The TF_CONFIG check still bites: a worker short of the cluster is caught.
    assert violations("tfk8s-tf-config-consistent", one_jobset_worker_short(objects))


def test_the_model_derived_policies_say_they_apply_to_tfk8s_trainer_only():
    for name in ("tfk8s-embedding-shards-match-ps", "tfk8s-ps-memory-fits-shard", "tfk8s-unpartitioned-embedding",
                 "tfk8s-checkpoints-outlive-the-chief"):
        assert "tfk8s's own trainer only" in POLICIES[name].description, name


@pytest.mark.parametrize("workload", ["jobset", "statefulset"])
@pytest.mark.parametrize("stack", ["scene1-case2", "scene2-case2"])
def test_an_experiment_in_a_teams_namespace_placed_by_host_name_passes_every_policy(stack, workload):
    name, values = read_stack_values(stack)
    values = copy.deepcopy(values)
    values["tfk8s:cluster"].update(namespace={"name": "ml-team", "existing": True}, placeBy="hostname",
                                   workload=workload)
    assert tripped(objects_of(run_program(name, values)), POLICIES) == {}
