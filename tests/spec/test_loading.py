"""Bad stack files fail before anything is registered, with a message naming stack, field and fix."""

from __future__ import annotations

import copy

import pulumi
import pytest

from components.objects import manifests
from components.objects.loading import load_experiment_values
from components.spec.kubernetes_limits import MAX_ARG_STRLEN as MAX_ENV_STRING
from components.plan.trainer_bundle import load_trainer_bundle
from components.spec.loading import load_stack_config
from components.spec.models import StackConfigError
from components.spec.stack_files import PROJECT_ROOT
from tests.harness import by_identity, run_program

STACK = "bad-stack"


def base_values() -> dict:
    return {
        "tfk8s:nodePools": [
            {"name": "servers", "nodes": ["srv-00", "srv-01"]},
            {"name": "gpus", "nodes": ["gpu-00"], "gpu": {"product": "Tesla-P40", "perNode": 4}},
        ],
        "tfk8s:cluster": {
            "placement": "colocated",
            "ps": {"replicas": 2, "pool": "servers"},
            "workers": {"replicas": 20, "pool": "servers"},
        },
        "tfk8s:trainer": {},
    }


def mutated(change) -> dict:
    values = copy.deepcopy(base_values())
    change(values)
    return values


def cluster(values):
    return values["tfk8s:cluster"]


BAD_INPUTS = {
    "unknown key (typo)": (
        lambda v: cluster(v)["workers"].update(replics=3),
        r"tfk8s:cluster\.workers\.replics: unknown key \(did you mean 'replicas'\?\); allowed: replicas, pool",
    ),
    "unknown top-level key": (
        lambda v: v.update({"tfk8s:clustr": {}}),
        r"tfk8s:clustr: unknown key \(did you mean 'cluster'\?\)",
    ),
    "unknown trainer setting": (
        lambda v: v.update({"tfk8s:trainer": {"embedingRows": 10}}),
        r"tfk8s:trainer\.embedingRows: unknown setting \(did you mean 'embeddingRows'\?\)",
    ),
    "zero replicas": (
        lambda v: cluster(v)["workers"].update(replicas=0),
        r"tfk8s:cluster\.workers\.replicas: .*greater than or equal to 1 \(got 0\)",
    ),
    "negative PS replicas": (
        lambda v: cluster(v)["ps"].update(replicas=-1),
        r"tfk8s:cluster\.ps\.replicas: .*greater than or equal to 0 \(got -1\)",
    ),
    "unknown placement": (
        lambda v: cluster(v).update(placement="mixed"),
        r"tfk8s:cluster\.placement: Input should be 'colocated', 'isolated' or 'spread' \(got 'mixed'\)",
    ),
    "unknown pool": (
        lambda v: cluster(v)["ps"].update(pool="nowhere"),
        r"tfk8s:cluster\.ps\.pool: unknown pool 'nowhere'; defined pools: servers, gpus",
    ),
    "node listed twice in a pool": (
        lambda v: v["tfk8s:nodePools"][0].update(nodes=["srv-00", "srv-00"]),
        r"tfk8s:nodePools\[0\]: node 'srv-00' is listed twice",
    ),
    "node in two pools": (
        lambda v: v["tfk8s:nodePools"][1].update(nodes=["srv-01"]),
        r"tfk8s:nodePools: node 'srv-01' is listed in pools 'servers' and 'gpus'; a node belongs to one pool",
    ),
    "overlapping pools under isolated": (
        lambda v: (
            cluster(v).update(placement="isolated"),
            cluster(v)["workers"].update(pool="gpus"),
            v["tfk8s:nodePools"][1].update(nodes=["gpu-00", "srv-01"]),
        ),
        r"node 'srv-01' is in both the PS pool 'servers' and the worker pool 'gpus'; isolated placement needs disjoint pools",
    ),
    "one pool under isolated": (
        lambda v: cluster(v).update(placement="isolated"),
        r"tfk8s:cluster\.workers\.pool: isolated placement needs separate PS and worker pools",
    ),
    "two pools under colocated": (
        lambda v: cluster(v)["workers"].update(pool="gpus"),
        r"tfk8s:cluster\.workers\.pool: colocated placement puts PS and workers on the same servers",
    ),
    "GPUs on a pool without GPUs": (
        lambda v: cluster(v)["workers"].update(gpus=1),
        r"tfk8s:cluster\.workers\.gpus: 1 GPUs asked, but pool 'servers' has no GPUs",
    ),
    "more GPUs than a node has": (
        lambda v: (
            cluster(v).update(placement="isolated"),
            cluster(v)["workers"].update(pool="gpus", gpus=8),
        ),
        r"tfk8s:cluster\.workers\.gpus: 8 GPUs per worker do not fit on a node of pool 'gpus' \(4 per node\)",
    ),
    "malformed ratio": (
        lambda v: cluster(v).update(ratio="one to ten"),
        r"tfk8s:cluster\.ratio: ratio 'one to ten' is not of the form 'P:W'",
    ),
    "zero in ratio": (
        lambda v: cluster(v).update(ratio="0:10"),
        r"tfk8s:cluster\.ratio: ratio '0:10' is not of the form 'P:W' with positive whole numbers",
    ),
    "inconsistent ratio": (
        lambda v: cluster(v).update(ratio="1:5"),
        r"ratio '1:5' with 20 workers means 4 PS, but ps\.replicas is 2",
    ),
    "neither ratio nor PS replicas": (
        lambda v: cluster(v)["ps"].pop("replicas"),
        r"tfk8s:cluster: set ps\.replicas or ratio",
    ),
    "selector pool with pinned placement": (
        lambda v: v["tfk8s:nodePools"][0].update(nodes=None, selector={"pool": "tf"}),
        r"tfk8s:cluster\.ps\.pool: pool 'servers' is given by a selector, so its servers are unknown and "
        r"colocated placement cannot pin tasks; list its nodes or use placement: spread",
    ),
    "pool with nodes and selector": (
        lambda v: v["tfk8s:nodePools"][0].update(selector={"pool": "tf"}),
        r"tfk8s:nodePools\[0\]: give exactly one of 'nodes' \(a list of node names\) or 'selector'",
    ),
    "bad memory quantity": (
        lambda v: cluster(v)["ps"].update(memory="lots"),
        r"tfk8s:cluster\.ps\.memory: must be a Kubernetes quantity such as '500m', '2', '4Gi' \(got 'lots'\)",
    ),
    "unpinned image": (
        lambda v: cluster(v).update(image="tensorflow/tensorflow:latest"),
        r"tfk8s:cluster\.image: image 'tensorflow/tensorflow:latest' must be pinned",
    ),
    "the cluster's own priority class": (
        lambda v: cluster(v).update(priorityClass="system-cluster-critical"),
        r"tfk8s:cluster\.priorityClass: 'system-cluster-critical' is one of the cluster's own PriorityClasses "
        r"\(system-\*\); name one created for experiments",
    ),
    "bad trainer partition": (
        lambda v: v.update({"tfk8s:trainer": {"partition": "hash"}}),
        r"tfk8s:trainer\.partition: must be one of auto, range, none \(got 'hash'\)",
    ),
    "trainer number as text": (
        lambda v: v.update({"tfk8s:trainer": {"steps": "many"}}),
        r"tfk8s:trainer\.steps: must be a whole number \(got 'many'\)",
    ),
    "system namespace": (
        lambda v: cluster(v).update(namespace="kube-system"),
        r"tfk8s:cluster\.namespace: 'kube-system' belongs to the cluster itself; name the team's namespace or a new one",
    ),
    "system namespace, existing": (
        lambda v: cluster(v).update(namespace={"name": "kube-system", "existing": True}),
        r"tfk8s:cluster\.namespace: 'kube-system' belongs to the cluster itself",
    ),
    "default namespace": (
        lambda v: cluster(v).update(namespace="default"),
        r"tfk8s:cluster\.namespace: 'default' exists on every cluster and tfk8s would delete it with the experiment; "
        r"write \{name: default, existing: true\} to share it",
    ),
    "namespace mapping without a name": (
        lambda v: cluster(v).update(namespace={"existing": True}),
        r"tfk8s:cluster\.namespace\.name: Field required",
    ),
    "namespace existing as text": (
        lambda v: cluster(v).update(namespace={"name": "ml-team", "existing": "yes"}),
        r"tfk8s:cluster\.namespace\.existing: Input should be a valid boolean \(got .yes.\)",
    ),
    "unknown namespace key": (
        lambda v: cluster(v).update(namespace={"name": "ml-team", "shared": True}),
        r"tfk8s:cluster\.namespace\.shared: unknown key",
    ),
    "checkpoint keep as text": (
        lambda v: cluster(v).update(chief={"checkpointVolume": {"size": "1Gi", "keep": "no"}}),
        r"tfk8s:cluster\.chief\.checkpointVolume\.keep: Input should be a valid boolean \(got .no.\)",
    ),
    "PS memory of one byte": (
        lambda v: cluster(v)["ps"].update(memory="1"),
        r"tfk8s:cluster\.ps\.memory: memory '1' is below 128Mi, the least a tfk8s pod is given",
    ),
    "zero worker memory": (
        lambda v: cluster(v)["workers"].update(memory="0"),
        r"tfk8s:cluster\.workers\.memory: memory '0' is below 128Mi",
    ),
    "zero chief CPU": (
        lambda v: cluster(v).update(chief={"cpu": "0"}),
        r"tfk8s:cluster\.chief\.cpu: CPU '0' is below 10m",
    ),
    "PS memory below its shard": (
        lambda v: (
            cluster(v)["ps"].update(memory="1Gi"),
            v.update({"tfk8s:trainer": {"embeddingRows": 20000000, "embeddingDim": 32}}),
        ),
        r"tfk8s:cluster\.ps\.memory: 1Gi is below the 2442Mi that each PS's embedding shard needs "
        r"\(20000000 rows x 32 over 2 shard\(s\), optimizer slots included\)",
    ),
    "chief memory below one checkpoint": (
        lambda v: (
            cluster(v).update(chief={"memory": "1Gi"}),
            v.update({"tfk8s:trainer": {"embeddingRows": 20000000, "embeddingDim": 32}}),
        ),
        r"tfk8s:cluster\.chief\.memory: 1Gi is below the 4883Mi of one checkpoint \(20000000 rows x 32, "
        r"optimizer slots included\), which passes through the chief's memory when it saves",
    ),
    "replicas quoted": (
        lambda v: cluster(v)["workers"].update(replicas="20"),
        r"tfk8s:cluster\.workers\.replicas: Input should be a valid integer \(got '20'\)",
    ),
    "gpus as a boolean": (
        lambda v: cluster(v)["workers"].update(gpus=True),
        r"tfk8s:cluster\.workers\.gpus: Input should be a valid integer \(got true\)",
    ),
    "strict as text": (
        lambda v: cluster(v).update(strict="no"),
        r"tfk8s:cluster\.strict: Input should be a valid boolean \(got 'no'\)",
    ),
    "trainer as a list": (
        lambda v: v.update({"tfk8s:trainer": []}),
        r"tfk8s:trainer: must be a mapping of settings, or \{\} for the defaults \(got \[\]\)",
    ),
    "trainer as a number": (
        lambda v: v.update({"tfk8s:trainer": 0}),
        r"tfk8s:trainer: must be a mapping of settings, or \{\} for the defaults \(got 0\)",
    ),
    "without ps and without ratio, for tfk8s's trainer": (
        lambda v: cluster(v).pop("ps"),
        r"tfk8s:cluster\.ps: no PS \(ps\.replicas: 0, or ps and ratio left out: workers only\) cannot run "
        r"tfk8s's trainer",
    ),
    "ps without replicas or ratio": (
        lambda v: cluster(v)["ps"].pop("replicas"),
        r"tfk8s:cluster: set ps\.replicas or ratio \('1:10' means one PS per ten workers\)",
    ),
    # Colocated PS take the workers' pool where theirs is left out; spread ones have none to take.
    "ps without a pool": (
        lambda v: (cluster(v).update(placement="spread"), cluster(v)["ps"].pop("pool")),
        r"tfk8s:cluster: ps\.pool: required with PS \(ps\.replicas: 0 runs workers only\)",
    ),
    "no PS and isolated": (
        lambda v: cluster(v).update(placement="isolated", ps={"replicas": 0}),
        r"placement: isolated keeps the PS' servers apart from the workers', and there are no PS",
    ),
    "isolated without ps": (
        lambda v: (cluster(v).pop("ps"), cluster(v).update(placement="isolated", ratio="1:10")),
        r"tfk8s:cluster\.ps: Field required",
    ),
    "remote checkpointDir and a checkpoint volume": (
        lambda v: (
            cluster(v).update(chief={"checkpointVolume": {"size": "20Gi"}}),
            v.update({"tfk8s:trainer": {"checkpointDir": "gs://bucket/ckpt"}}),
        ),
        r"tfk8s:cluster\.chief\.checkpointVolume and tfk8s:trainer\.checkpointDir \('gs://bucket/ckpt'\) are both set",
    ),
    "checkpoint volume without a size": (
        lambda v: cluster(v).update(chief={"checkpointVolume": {"storageClass": "fast"}}),
        r"tfk8s:cluster\.chief\.checkpointVolume\.size: Field required",
    ),
    "missing cluster": (
        lambda v: v.pop("tfk8s:cluster"),
        r"tfk8s:cluster: missing; every stack needs it",
    ),
    "a StatefulSet cluster with more tasks than one environment variable can list": (
        lambda v: cluster(v).update(workload="statefulset", workers={**cluster(v)["workers"], "replicas": 3000}),
        r"tfk8s:cluster\.workers\.replicas: 3,003 tasks make a TF_CONFIG of 1[0-9]{2},[0-9]{3} bytes, but Linux "
        r"passes at most 131,072 bytes in one environment variable \(about 2,[0-9]{3} tasks with these names\); "
        r"use fewer PS and workers, shorter server and stack names, or tfk8s:cluster.workload: jobset",
    ),
    "a cluster past the largest experiment tfk8s is tested with": (
        lambda v: cluster(v)["workers"].update(replicas=25_000),
        r"tfk8s:cluster\.workers\.replicas: 25,000 workers and 2 PS make 25,003 tasks; tfk8s is tested up to "
        r"11,001 tasks",
    ),
}


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_bad_stack_fails_before_anything_is_registered(case, recording_monitor):
    change, message = BAD_INPUTS[case]
    with pytest.raises(pulumi.RunError, match=rf"stack '{STACK}' has an invalid configuration:\n(.|\n)*{message}"):
        run_program(STACK, mutated(change), monitor=recording_monitor)
    assert recording_monitor.registrations == [], "nothing may be registered for a bad stack"


def test_the_base_of_the_bad_inputs_is_itself_valid():
    config = load_stack_config(STACK, base_values())
    assert config.cluster.ps_count == 2


def test_every_problem_is_reported_at_once():
    values = mutated(lambda v: (cluster(v)["workers"].update(replicas=0), cluster(v).update(placement="x")))
    with pytest.raises(StackConfigError) as error:
        load_stack_config(STACK, values)
    text = str(error.value)
    assert "tfk8s:cluster.workers.replicas" in text and "tfk8s:cluster.placement" in text


def test_a_typo_in_the_trainer_and_one_in_the_cluster_are_both_reported():
    values = mutated(
        lambda v: (cluster(v)["workers"].update(replics=3), v.update({"tfk8s:trainer": {"batchSise": 64}}))
    )
    with pytest.raises(StackConfigError) as error:
        load_stack_config(STACK, values)
    text = str(error.value)
    assert "tfk8s:trainer.batchSise: unknown setting (did you mean 'batchSize'?)" in text
    assert "tfk8s:cluster.workers.replics: unknown key (did you mean 'replicas'?)" in text


def test_the_tf_config_limit_is_the_kernels():
    """The largest environment string a StatefulSet task is started with is its expanded TF_CONFIG."""
    def env_size(workers: int) -> int:
        values = mutated(lambda v: cluster(v).update(workload="statefulset", workers={**cluster(v)["workers"], "replicas": workers}))
        experiment = load_experiment_values(STACK, values, load_trainer_bundle(PROJECT_ROOT))
        name, size = experiment.tf_config.largest_env_string("statefulset")
        assert name == "TF_CONFIG"
        return size

    assert env_size(2000) <= MAX_ENV_STRING
    with pytest.raises(StackConfigError, match="a TF_CONFIG of .* Linux passes at most 131,072 bytes"):
        env_size(3000)


def test_a_jobset_cluster_past_the_variable_limit_is_a_mounted_file():
    """A JobSet task's trainer composes TF_CONFIG from the cluster: in a variable while it fits, past
    Linux's 128 KiB a file from its own ConfigMap, which the pods mount and TFK8S_CLUSTER_FILE names."""
    def experiment(workers: int):
        values = mutated(lambda v: cluster(v)["workers"].update(replicas=workers))
        return load_experiment_values(STACK, values, load_trainer_bundle(PROJECT_ROOT))

    small, large = experiment(2000), experiment(3500)
    assert small.tf_config.largest_env_string("jobset")[1] <= MAX_ENV_STRING
    assert large.tf_config.largest_env_string("jobset")[1] > MAX_ENV_STRING
    assert (small.cluster_as_file, large.cluster_as_file) == (False, True)
    env = manifests.trainer_env(large)
    assert "TFK8S_CLUSTER" not in env and env["TFK8S_CLUSTER_FILE"] == "/etc/tfk8s/cluster.json"
    assert manifests.cluster_config_map(large)["data"] == {"cluster.json": large.tf_config.cluster_json}
    assert manifests.cluster_config_map(small) is None and "TFK8S_CLUSTER" in manifests.trainer_env(small)


def test_ratio_stands_in_for_ps_replicas():
    values = mutated(lambda v: (cluster(v)["ps"].pop("replicas"), cluster(v).update(ratio="1:10")))
    assert load_stack_config(STACK, values).cluster.ps_count == 2
    values = mutated(lambda v: (cluster(v)["ps"].pop("replicas"), cluster(v).update(ratio="1:3")))
    assert load_stack_config(STACK, values).cluster.ps_count == 7  # ceil(20 / 3)


def test_defaults_apply_to_an_empty_trainer_and_namespace():
    config = load_stack_config("scene1-case3", base_values())
    assert config.namespace == "tf-scene1-case3"
    assert config.trainer.partition == "auto"
    assert config.cluster.strict is True


def test_a_namespace_is_a_name_tfk8s_creates_or_a_teams_it_shares():
    assert not load_stack_config(STACK, mutated(lambda v: cluster(v).update(namespace="ml-team"))).shares_namespace
    given = {"name": "ml-team", "existing": True}
    config = load_stack_config(STACK, mutated(lambda v: cluster(v).update(namespace=given)))
    assert (config.namespace, config.shares_namespace) == ("ml-team", True)
    shared_default = {"name": "default", "existing": True}
    assert load_stack_config(STACK, mutated(lambda v: cluster(v).update(namespace=shared_default))).namespace == "default"


@pytest.mark.parametrize("stack, why", [
    ("Ranking_A", "must be a DNS label"),
    ("ranking-" + "a" * 31, "of at most 38 characters"),
])
def test_in_a_shared_namespace_the_stack_name_must_start_every_object_name(stack, why):
    values = mutated(lambda v: cluster(v).update(namespace={"name": "ml-team", "existing": True}))
    with pytest.raises(StackConfigError, match=rf"tfk8s:cluster\.namespace: in the shared namespace 'ml-team' .*{why}"):
        load_experiment_values(stack, values, load_trainer_bundle(PROJECT_ROOT))
    assert load_experiment_values("ranking-" + "a" * 30, values, load_trainer_bundle(PROJECT_ROOT)).names.jobset == (
        "ranking-" + "a" * 30 + "-tf")


def test_stack_name_that_cannot_make_a_namespace_asks_for_one():
    with pytest.raises(StackConfigError, match=r"default namespace 'tf-Scene_1' .* set cluster\.namespace"):
        load_stack_config("Scene_1", base_values())
    values = mutated(lambda v: cluster(v).update(namespace="scene-one"))
    assert load_stack_config("Scene_1", values).namespace == "scene-one"


def test_a_colocated_cluster_without_ps_takes_the_workers_pool_and_the_ratio():
    short = mutated(lambda v: (cluster(v).pop("ps"), cluster(v).update(ratio="1:4"),
                               cluster(v)["workers"].update(replicas=24)))
    long = mutated(lambda v: (cluster(v).update(ratio="1:4", ps={"replicas": 6, "pool": "servers"}),
                              cluster(v)["workers"].update(replicas=24)))
    parsed = load_stack_config(STACK, short).cluster
    assert (parsed.ps.pool, parsed.ps_count) == ("servers", 6)
    short_run, long_run = run_program(STACK, short), run_program(STACK, long)
    assert short_run.outputs == long_run.outputs
    assert short_run.outputs["tasks"] == {"chief": 1, "ps": 6, "worker": 24, "evaluator": 0}
    assert by_identity(short_run.manifests()) == by_identity(long_run.manifests())
    assert len(short_run.manifests()) == len(long_run.manifests())


def test_queue_and_restarts_need_the_jobset_model():
    values = mutated(lambda v: cluster(v).update(workload="statefulset", queue="team-a", restarts=2))
    with pytest.raises(StackConfigError) as error:
        load_stack_config(STACK, values)
    text = str(error.value)
    assert f"stack '{STACK}'" in text and "tfk8s:cluster" in text
    assert "queue and restarts need workload: jobset" in text
    assert load_stack_config(STACK, mutated(lambda v: cluster(v).update(workload="statefulset"))).cluster.restarts == 3
    with pytest.raises(StackConfigError, match=r"tfk8s:cluster\.workload: .*'jobset' or 'statefulset'"):
        load_stack_config(STACK, mutated(lambda v: cluster(v).update(workload="deployment")))
