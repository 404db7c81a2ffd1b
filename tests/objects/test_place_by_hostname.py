"""placeBy: hostname: exact placement without a single write outside the namespace."""

from __future__ import annotations

import copy

import pytest

from components.objects.experiment_objects import experiment_objects
from components.objects.loading import load_experiment_values
from components.plan.trainer_bundle import load_trainer_bundle
from components.spec.models import StackConfigError
from components.spec.stack_files import PROJECT_ROOT, read_stack_values


def experiment(stack: str, **cluster):
    name, values = read_stack_values(stack)
    values = copy.deepcopy(values)
    values["tfk8s:cluster"].update(cluster)
    return load_experiment_values(name, values, load_trainer_bundle(PROJECT_ROOT))


def pod_specs(experiment) -> dict[str, dict]:
    (jobset,) = [o.manifest for o in experiment_objects(experiment) if o.kind == "JobSet"]
    return {job["name"]: job["template"]["spec"]["template"]["spec"] for job in jobset["spec"]["replicatedJobs"]}


def test_no_node_is_labelled_and_every_role_is_placed_by_host_name():
    hostname = experiment("scene1-case2", placeBy="hostname")
    assert not [o for o in experiment_objects(hostname) if o.kind == "Node"]
    servers = [f"srv-0{i}" for i in range(5)]
    for role, spec in pod_specs(hostname).items():
        (term,) = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        assert term == {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": servers}]}
        keys = {c["topologyKey"] for c in spec.get("topologySpreadConstraints", ())}
        assert keys <= {"kubernetes.io/hostname"}, role


def test_each_server_is_capped_at_its_share_over_the_host_name():
    spec = pod_specs(experiment("scene1-case2", placeBy="hostname"))["worker"]
    even, capped = spec["topologySpreadConstraints"]
    assert (even["topologyKey"], even["maxSkew"], even["whenUnsatisfiable"]) == (
        "kubernetes.io/hostname", 1, "ScheduleAnyway")
    # Five servers, ten workers each: the global minimum is always taken as 0, so never more than ten.
    assert (capped["topologyKey"], capped["maxSkew"], capped["whenUnsatisfiable"], capped["minDomains"]) == (
        "kubernetes.io/hostname", 10, "DoNotSchedule", 6)
    # The default mode keeps its two hard rules over two keys.
    labelled = pod_specs(experiment("scene1-case2"))["worker"]["topologySpreadConstraints"]
    assert [(c["topologyKey"], c["whenUnsatisfiable"], c["minDomains"] if "minDomains" in c else None)
            for c in labelled] == [("kubernetes.io/hostname", "DoNotSchedule", None),
                                   ("server.tfk8s.io/scene1-case2", "DoNotSchedule", 5)]


def test_statefulset_tasks_stay_pinned_to_their_server():
    hostname = experiment("scene1-case2", placeBy="hostname", workload="statefulset")
    worker = next(o.manifest for o in experiment_objects(hostname) if o.suffix == "worker-srv-03")
    (term,) = worker["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert term["matchFields"] == [{"key": "metadata.name", "operator": "In", "values": ["srv-03"]}]
    assert term["matchExpressions"][0]["key"] == "kubernetes.io/hostname"


def test_gpu_workers_of_a_named_pool_need_no_product_label():
    gpus = experiment("gpu-p40", placeBy="hostname")
    assert not [o for o in experiment_objects(gpus) if o.kind == "Node"]
    (term,) = pod_specs(gpus)["worker"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert [e["key"] for e in term["matchExpressions"]] == ["kubernetes.io/hostname"]


def test_a_pool_labelled_by_tfk8s_is_refused_with_hostname_placement():
    name, values = read_stack_values("gpu-p40")
    values = copy.deepcopy(values)
    values["tfk8s:cluster"]["placeBy"] = "hostname"
    index = next(i for i, pool in enumerate(values["tfk8s:nodePools"]) if pool.get("gpu"))
    values["tfk8s:nodePools"][index]["gpu"]["labelledBy"] = "tfk8s"
    with pytest.raises(StackConfigError, match=rf"tfk8s:nodePools\[{index}\]\.gpu\.labelledBy: tfk8s writes no "
                                               "node label with placeBy: hostname"):
        load_experiment_values(name, values, load_trainer_bundle(PROJECT_ROOT))
