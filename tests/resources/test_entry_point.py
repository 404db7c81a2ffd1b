"""The program under mocks, for every stack in stacks/: the objects a user would inspect."""

from __future__ import annotations

import copy
import json
import re
from collections import Counter

import kubernetes_validate
import pytest

from components.plan import labels as L
from components.spec.sizing import ps_memory_request
from components.spec.stack_files import read_stack_values
from tests.harness import run_program
from tests.pods import config_maps_of, pods_of, replicated_jobs
from tests.runs import SEED_STACKS, program_run, stack_config
from tests.scheduling import admitted_nodes

KUBERNETES_VERSION = "1.34.0"


def workloads(run):
    """What runs each task group: StatefulSets and the chief's Job, or the JobSet's replicated Jobs."""
    return run.of_kind("StatefulSet") + run.of_kind("Job") + replicated_jobs(run)


def statefulset_run(stack: str):
    name, values = read_stack_values(stack)
    values = copy.deepcopy(values)
    values["tfk8s:cluster"]["workload"] = "statefulset"
    return run_program(name, values)


def pod_spec(workload):
    return workload.manifest["spec"]["template"]["spec"]


def container(workload):
    (only,) = pod_spec(workload)["containers"]
    return only


def task_name(workload) -> str:
    return workload.manifest["metadata"]["name"]


# Kueue makes a pod set of each replicated Job, and takes at most 8 in one Workload.
KUEUE_MAX_POD_SETS = 8


def expected_statefulset_workloads(run) -> int:
    """One workload per role per server, one per role when unpinned, and the chief's Job."""
    planned = {(task.split("-")[0], server) for server, tasks in run.outputs["placement"].items() for task in tasks}
    unpinned = {(task.split("-")[0], pool) for pool, tasks in run.outputs["unpinned"].items() for task in tasks}
    return len(planned | unpinned)


def test_registers_the_expected_objects(stack_run):
    config = stack_config(stack_run.stack)
    ps, workers = config.cluster.ps_count, config.cluster.workers.replicas
    labelled_nodes = sum(
        len(pool.nodes)
        for pool in config.node_pools
        if pool.nodes and pool.name in (config.cluster.ps.pool, config.cluster.workers.pool)
    )
    kinds = Counter(r.kind for r in stack_run.resources if r.custom)
    assert len(pods_of(stack_run)) == 1 + ps + workers
    assert kinds == {
        "Namespace": 1,
        "NetworkPolicy": 1,
        "ConfigMap": 2,
        "JobSet": 1,  # a replicated Job per role
        **({"LocalQueue": 1} if config.cluster.queue else {}),
        **({"NodePatch": labelled_nodes} if labelled_nodes else {}),
        **({"PersistentVolumeClaim": 1} if config.cluster.chief.checkpoint_volume else {}),
    }
    # Whatever the number of servers: Kueue can admit every experiment.
    roles = {job.manifest["metadata"]["labels"][L.COMPONENT] for job in replicated_jobs(stack_run)}
    assert len(replicated_jobs(stack_run)) == len(roles) == 3 <= KUEUE_MAX_POD_SETS
    components = Counter(r.type for r in stack_run.resources if not r.custom)
    assert components["tfk8s:tf_cluster:TFCluster"] == 1
    namespaces = {r.manifest["metadata"].get("namespace") for r in stack_run.resources if r.custom}
    assert namespaces == {None, f"tf-{stack_run.stack}"}  # cluster-scoped Namespace and Nodes


def test_registers_a_workload_per_group_in_the_statefulset_model():
    run = statefulset_run("scene1-case2")
    kinds = Counter(r.kind for r in run.resources if r.custom)
    assert kinds["Service"] == 3  # one headless Service per role
    assert kinds["StatefulSet"] == expected_statefulset_workloads(run) - 1 and kinds["Job"] == 1
    assert "JobSet" not in kinds


def test_every_object_validates_against_kubernetes_schema(stack_run):
    for manifest in stack_run.manifests():
        if manifest["kind"] in ("JobSet", "LocalQueue"):
            continue  # custom resources: the local cluster's CRDs and webhooks check them (tests/cluster)
        # Raises kubernetes_validate.ValidationError naming the bad field.
        kubernetes_validate.validate(manifest, KUBERNETES_VERSION, strict=True)
    for job in replicated_jobs(stack_run):
        kubernetes_validate.validate(dict(job.manifest), KUBERNETES_VERSION, strict=True)


@pytest.fixture(params=["jobset", "statefulset"])
def each_model_run(request, stack_run):
    return stack_run if request.param == "jobset" else statefulset_run(stack_run.stack)


def headless_services(run) -> dict[str, dict]:
    """The Services pods are named under: the stack's, and the one the JobSet controller makes
    (named after the JobSet, selecting its pods, publishing them before they are ready)."""
    services = {s.manifest["metadata"]["name"]: s.manifest for s in run.of_kind("Service")}
    for jobset in run.of_kind("JobSet"):
        network = jobset.manifest["spec"]["network"]
        assert network["enableDNSHostnames"] is True
        name = jobset.manifest["metadata"]["name"]
        services[network.get("subdomain", name)] = {"spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": network.get("publishNotReadyAddresses", True),
            "selector": {"jobset.sigs.k8s.io/jobset-name": name},
        }}
    return services


def test_tf_config_is_one_cluster_of_pod_dns_names(each_model_run):
    stack_run = each_model_run
    namespace = f"tf-{stack_run.stack}"
    services = headless_services(stack_run)
    config_maps = config_maps_of(stack_run)
    pods = pods_of(stack_run)
    clusters = set()
    seen_tasks = set()
    for pod in pods:
        config = pod.tf_config(config_maps)
        clusters.add(json.dumps(config["cluster"], sort_keys=True))
        task = config["task"]
        assert f"{task['type']}-{task['index']}" == pod.task
        seen_tasks.add((task["type"], task["index"]))
    assert len(seen_tasks) == len(pods), "no two pods run one task"
    assert len(clusters) == 1, "every task must see the identical cluster"
    cluster = json.loads(clusters.pop())
    assert set(cluster) == {"chief", "ps", "worker"}
    assert len(cluster["chief"]) == 1
    assert seen_tasks == {(t, i) for t, addresses in cluster.items() for i in range(len(addresses))}

    pod_of_task = {pod.task: pod for pod in pods}
    for task_type, addresses in cluster.items():
        for index, address in enumerate(addresses):
            pod = pod_of_task[f"{task_type}-{index}"]
            # The pod's own DNS name under its headless Service.
            assert address == f"{pod.hostname}.{pod.subdomain}.{namespace}.svc:2222"
            service = services[pod.subdomain]
            assert service["spec"]["clusterIP"] == "None"
            assert service["spec"]["publishNotReadyAddresses"] is True
            selector = service["spec"]["selector"]
            selected = {p.task for p in pods if all(p.labels.get(k) == v for k, v in selector.items())}
            assert pod.task in selected, f"Service {pod.subdomain} must select {pod.task}'s pod"
            if service.get("metadata"):  # a Service per role: exactly that role's pods, on the gRPC port
                assert [p["port"] for p in service["spec"]["ports"]] == [2222]
                assert selected == {f"{task_type}-{i}" for i in range(len(addresses))}, (
                    f"Service {pod.subdomain} must select exactly the {task_type} pods"
                )
    hostnames = [pod.hostname for pod in pods]
    assert len(set(hostnames)) == len(hostnames)


def _nodes_as_labelled(run) -> dict[str, dict[str, str]]:
    """Nodes after `pulumi up`, plus two the experiment must never use."""
    nodes = {
        patch.manifest["metadata"]["name"]: patch.manifest["metadata"]["labels"]
        for patch in run.of_kind("NodePatch")
    }
    any_pool = next(iter(nodes.values()), {}).get(L.node_pool_key(run.stack), "servers")
    nodes["unlabelled-node"] = {}
    nodes["other-experiments-node"] = {L.node_pool_key("another-stack"): any_pool}
    return nodes


def spread_constraints(stack: str, role: str, pool_servers: int, share: int, strict: bool = True) -> list[dict]:
    """What holds each server of a pool to its share of a role's tasks (components/objects/pods.py)."""
    # One label per role and experiment: the scheduler matches it on every pod of every server.
    selector = {"matchLabels": {f"task.tfk8s.io/{stack}": role}}
    even = {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "labelSelector": selector,
            "whenUnsatisfiable": "DoNotSchedule" if strict else "ScheduleAnyway", "nodeTaintsPolicy": "Honor"}
    capped = {"maxSkew": share, "topologyKey": f"server.tfk8s.io/{stack}", "whenUnsatisfiable": "DoNotSchedule",
              "minDomains": pool_servers, "labelSelector": selector, "nodeTaintsPolicy": "Honor"}
    return [even, capped] if strict else [even]


def test_each_task_admits_exactly_its_pools_servers_and_each_server_its_share(stack_run):
    """JobSet: a Job per role, whose pods may use every server of the pool, and the scheduler gives
    each server exactly its share (tests/cluster proves it on the local control plane)."""
    config = stack_config(stack_run.stack)
    if config.cluster.placement == "spread":
        return  # test_spread_pins_nothing_and_keeps_ps_apart
    nodes = _nodes_as_labelled(stack_run)
    per_server = stack_run.outputs["perServer"]
    pods = pods_of(stack_run)
    for pod in pods:
        role = pod.task.split("-")[0]
        pool = config.pools[config.cluster.workers.pool if role == "worker" else config.cluster.ps.pool]
        assert admitted_nodes(pod.spec, nodes) == set(pool.nodes), pod.task
        if role == "chief":
            assert "topologySpreadConstraints" not in pod.spec
            continue
        share = max(per_server[server][role] for server in pool.nodes)
        constraints = pod.spec["topologySpreadConstraints"]
        assert constraints == spread_constraints(stack_run.stack, role, len(pool.nodes), share)
        counted = {p.task for p in pods if constraints[0]["labelSelector"]["matchLabels"].items() <= p.labels.items()}
        assert counted == {p.task for p in pods if p.task.startswith(f"{role}-")}, "it counts exactly the role's pods"
        for patch in stack_run.of_kind("NodePatch"):  # the key the share is counted over: one value per server
            name = patch.manifest["metadata"]["name"]
            assert patch.manifest["metadata"]["labels"][f"server.tfk8s.io/{stack_run.stack}"] == name


def test_statefulset_tasks_admit_exactly_their_planned_server():
    run = statefulset_run("scene2-case2")
    planned = {task: server for server, tasks in run.outputs["placement"].items() for task in tasks}
    assert len(planned) == 55
    for pod in pods_of(run):
        if pod.task in planned:
            assert admitted_nodes(pod.spec, _nodes_as_labelled(run)) == {planned[pod.task]}, pod.task
            assert "topologySpreadConstraints" not in pod.spec


def test_preferred_placement_keeps_the_pool_and_spreads_evenly():
    name, values = read_stack_values("scene2-case2")
    values = copy.deepcopy(values)
    values["tfk8s:cluster"]["strict"] = False
    run = run_program(name, values)
    nodes = _nodes_as_labelled(run)
    config = stack_config("scene2-case2")
    for pod in pods_of(run):
        if pod.task == "chief-0":
            continue
        role = pod.task.split("-")[0]
        pool = config.pools["ps-servers" if role == "ps" else "worker-servers"]
        assert admitted_nodes(pod.spec, nodes) == set(pool.nodes), pod.task
        share = 1 if role == "ps" else 10
        # Only even, and only preferred: a lost server's tasks move to the others.
        assert pod.spec["topologySpreadConstraints"] == spread_constraints(name, role, 5, share, strict=False)


def test_preferred_placement_under_the_statefulset_model_prefers_the_server():
    name, values = read_stack_values("scene2-case2")
    values = copy.deepcopy(values)
    values["tfk8s:cluster"].update(strict=False, workload="statefulset")
    run = run_program(name, values)
    nodes = _nodes_as_labelled(run)
    config = stack_config("scene2-case2")
    planned = {t: s for s, tasks in run.outputs["placement"].items() for t in tasks}
    assert len(planned) == 55
    for pod in pods_of(run):
        if pod.task not in planned:
            continue
        pool = config.pools["ps-servers" if pod.task.startswith("ps-") else "worker-servers"]
        affinity = pod.spec["affinity"]["nodeAffinity"]
        assert admitted_nodes(pod.spec, nodes) == set(pool.nodes), pod.task
        (preferred,) = affinity["preferredDuringSchedulingIgnoredDuringExecution"]
        assert preferred["preference"]["matchFields"] == [
            {"key": "metadata.name", "operator": "In", "values": [planned[pod.task]]}
        ]


def test_placement_output_lists_every_task_once(stack_run):
    config = stack_config(stack_run.stack)
    listed = [t for tasks in stack_run.outputs["placement"].values() for t in tasks]
    listed += [t for tasks in stack_run.outputs["unpinned"].values() for t in tasks]
    assert len(listed) == len(set(listed))
    assert set(listed) == {pod.task for pod in pods_of(stack_run)}
    assert stack_run.outputs["tasks"] == {
        "chief": 1,
        "ps": config.cluster.ps_count,
        "worker": config.cluster.workers.replicas,
        "evaluator": config.cluster.evaluator_count,
    }


@pytest.mark.parametrize("stack", [s for s in SEED_STACKS if s.startswith("scene1")])
def test_scene1_every_server_runs_ten_workers_and_one_ps(stack):
    run = program_run(stack)
    servers = stack_config(stack).pools["servers"].nodes
    assert run.outputs["perServer"] == {server: {"ps": 1, "worker": 10} for server in servers}
    assert run.outputs["pinning"] == "count"
    (unpinned,) = run.outputs["unpinned"].values()
    assert len(unpinned) == 1 + 11 * len(servers)


@pytest.mark.parametrize("stack", [s for s in SEED_STACKS if s.startswith("scene2")])
def test_scene2_ps_and_workers_never_share_a_server(stack):
    run = program_run(stack)
    config = stack_config(stack)
    ps_servers = config.pools["ps-servers"].nodes
    worker_servers = config.pools["worker-servers"].nodes
    assert not set(ps_servers) & set(worker_servers)
    assert run.outputs["perServer"] == {
        **{server: {"ps": 1, "worker": 0} for server in ps_servers},
        **{server: {"ps": 0, "worker": 10} for server in worker_servers},
    }
    # Each role's pods may only use their own pool's servers.
    nodes = _nodes_as_labelled(run)
    for pod in pods_of(run):
        pool = worker_servers if pod.task.startswith("worker-") else ps_servers
        assert admitted_nodes(pod.spec, nodes) == set(pool)
    assert run.outputs["tasks"]["worker"] == 10 * len(worker_servers)


def test_scene2_follows_the_seed_description_not_its_table():
    assert program_run("scene2-case2").outputs["tasks"]["worker"] == 50
    assert program_run("scene2-case3").outputs["tasks"]["worker"] == 100


# PS memory worked out by hand: rows x dim x 4 bytes x (1 + 1 Adagrad slot) / PS
# shards, plus 50 % and 768 MiB, rounded up to MiB. The seed stacks use the
# default 1M x 16 table: 128,000,000 bytes in all.
#   scene1-case3, 10 PS: 12,800,000 x 1.5 + 805,306,368 = 824,506,368 B = 786.3 MiB -> 787Mi
#   gpu-p40, 20M x 32 over 2 PS: 2,560,000,000 x 1.5 + 805,306,368 = 4,645,306,368 B -> 4431Mi
EXPECTED_PS_MEMORY = {
    "scene1-case1": "952Mi", "scene1-case2": "805Mi", "scene1-case3": "787Mi", "scene1-case4": "778Mi",
    "scene2-case1": "952Mi", "scene2-case2": "805Mi", "scene2-case3": "787Mi", "scene2-case4": "778Mi",
    "gpu-p40": "4431Mi", "spread-managed": "814Mi", "scene1-case2-durable": "805Mi",
    # 20,000 x 16 x 4 x 2 / 2 PS = 1,280,000 x 1.5 + 805,306,368 = 807,226,368 B = 769.8 MiB
    "scene1-case1-local": "770Mi",
}


def test_resources_gpus_only_on_workers_and_ps_memory_from_model(stack_run):
    config = stack_config(stack_run.stack)
    # The shipped stacks' figures are worked out by hand above; any other stack's come from the model.
    expected_ps_memory = EXPECTED_PS_MEMORY.get(stack_run.stack) or ps_memory_request(config)
    assert stack_run.outputs["psMemory"] == expected_ps_memory
    for workload in workloads(stack_run):
        resources = container(workload)["resources"]
        role = workload.manifest["metadata"]["labels"][L.COMPONENT]
        assert {"cpu", "memory"} <= set(resources["requests"])
        # Memory bounded as asked; CPU requested but never limited (no throttling of TensorFlow's threads).
        assert resources["limits"]["memory"] == resources["requests"]["memory"]
        assert "cpu" not in resources["limits"]
        gpus = resources["limits"].get(L.GPU_RESOURCE)
        if role == "worker" and config.cluster.workers.gpus:
            assert gpus == str(config.cluster.workers.gpus)
        else:
            assert gpus is None, f"{task_name(workload)} must not get GPUs"
            assert L.GPU_RESOURCE not in resources["requests"]
        if role == "ps":
            assert resources["requests"]["memory"] == expected_ps_memory


def test_pods_run_with_secure_defaults(stack_run):
    for workload in workloads(stack_run):
        spec = pod_spec(workload)
        assert spec["automountServiceAccountToken"] is False
        assert spec["securityContext"]["runAsNonRoot"] is True
        assert spec["securityContext"]["runAsUser"] > 0
        security = container(workload)["securityContext"]
        assert security["allowPrivilegeEscalation"] is False
        assert security["readOnlyRootFilesystem"] is True
        assert security["capabilities"] == {"drop": ["ALL"]}
        assert not any(spec.get(k) for k in ("hostNetwork", "hostPID", "hostIPC"))
        scratch = {v["name"] for v in spec["volumes"] if "emptyDir" in v}
        mounted = {m["name"] for m in container(workload)["volumeMounts"]}
        assert scratch and scratch <= mounted


def test_tf_port_reachable_only_from_the_experiment(stack_run):
    (policy,) = [r.manifest for r in stack_run.of_kind("NetworkPolicy")]
    spec = policy["spec"]
    selector = spec["podSelector"]["matchLabels"]
    for workload in workloads(stack_run):
        labels = workload.manifest["spec"]["template"]["metadata"]["labels"]
        assert all(labels.get(k) == v for k, v in selector.items()), "every pod is covered"
    assert spec["policyTypes"] == ["Ingress"]
    (rule,) = spec["ingress"]
    assert rule["ports"] == [{"protocol": "TCP", "port": 2222}]
    assert rule["from"] == [{"podSelector": {"matchLabels": selector}}]
    assert selector[L.INSTANCE] == stack_run.stack


def test_one_pod_per_task_and_the_experiment_ends_with_the_chief(stack_run):
    config = stack_config(stack_run.stack)
    (jobset,) = stack_run.of_kind("JobSet")
    spec = jobset.manifest["spec"]
    assert spec["successPolicy"] == {"operator": "Any", "targetReplicatedJobs": ["chief"]}
    # A lost PS restarts the experiment (its Job fails: no rule names it) at most `restarts` times;
    # a chief whose own retries are used up fails it; an evicted PS restarts it uncounted.
    assert spec["failurePolicy"]["maxRestarts"] == config.cluster.restarts
    assert spec["failurePolicy"]["rules"] == [
        {"name": "ChiefFailed", "action": "FailJobSet", "targetReplicatedJobs": ["chief"]},
        {"name": "PSDisrupted", "action": "RestartJobSetAndIgnoreMaxRestarts", "targetReplicatedJobs": ["ps"],
         "onJobFailureReasons": ["PodFailurePolicy"],
         "onJobFailureMessagePatterns": ["^Pod [^ ]+ has condition DisruptionTarget matching FailJob rule at index 0$"]},
    ]
    # `pulumi up` returns once the JobSet controller made its Jobs, not after training.
    assert jobset.manifest["metadata"]["annotations"] == {
        "pulumi.com/waitFor": "jsonpath={.status.replicatedJobsStatus}",
        "pulumi.com/deletionPropagationPolicy": "foreground",  # its Workload before its LocalQueue
    }
    for job in replicated_jobs(stack_run):
        job_spec, role = job.manifest["spec"], job.manifest["metadata"]["labels"][L.COMPONENT]
        assert job_spec["completionMode"] == "Indexed"
        assert job_spec["completions"] == job_spec["parallelism"]
        assert job_spec["podReplacementPolicy"] == "Failed"
        restart = job_spec["template"]["spec"]["restartPolicy"]
        # A worker's replacement waits out its own task's back-off, not its server's other workers'.
        assert (restart, job_spec["backoffLimit"], job_spec.get("backoffLimitPerIndex")) == {
            "chief": ("Never", config.cluster.chief.restarts, None),
            "ps": ("Never", 0, None),
            "worker": ("Never", 2**31 - 1, 2**31 - 1),
        }[role]
    roles_of_group: dict = {}
    for pod in pods_of(stack_run):
        roles_of_group.setdefault(pod.labels[L.WORKLOAD], set()).add(pod.task.split("-")[0])
    assert roles_of_group == {"chief": {"chief"}, "ps": {"ps"}, "worker": {"worker"}}


def test_statefulset_model_one_pod_per_task_and_the_chief_finishes():
    stack_run = statefulset_run("scene1-case2")
    planned = {t: s for s, tasks in stack_run.outputs["placement"].items() for t in tasks}
    for sts in stack_run.of_kind("StatefulSet"):
        spec = sts.manifest["spec"]
        # All tasks start together; the ordinals are the task indexes of one role on one server.
        assert spec["podManagementPolicy"] == "Parallel"
        role = sts.manifest["metadata"]["labels"][L.COMPONENT]
        assert spec["serviceName"] == role
        tasks = [f"{role}-{i}" for i in range(spec["ordinals"]["start"], spec["ordinals"]["start"] + spec["replicas"])]
        assert len({planned.get(task) for task in tasks}) == 1, f"{task_name(sts)} runs tasks of one server"
    (job,) = stack_run.of_kind("Job")
    assert task_name(job) == "chief"
    assert job.manifest["spec"]["template"]["spec"]["hostname"] == "chief-0"
    assert job.manifest["spec"]["completions"] == 1
    assert job.manifest["spec"]["parallelism"] == 1
    assert job.manifest["spec"]["podReplacementPolicy"] == "Failed"
    assert job.manifest["metadata"]["annotations"]["pulumi.com/skipAwait"] == "true"


def test_trainer_shipped_in_a_configmap_and_run_from_a_pinned_image(stack_run):
    config_maps = {c.manifest["metadata"]["name"]: c.manifest for c in stack_run.of_kind("ConfigMap")}
    code = config_maps["tfk8s-trainer"]["data"]
    assert "settings.py" in code and "__init__.py" in code
    settings = json.loads(config_maps["tfk8s-trainer-env"]["data"]["TFK8S_TRAINER"])
    config = stack_config(stack_run.stack)
    expected = config.trainer.to_config()
    if config.cluster.chief.checkpoint_volume:  # the one setting tfk8s decides: where the volume is
        expected["checkpointDir"] = "/checkpoints"
    assert settings == expected
    for workload in workloads(stack_run):
        c = container(workload)
        assert c["command"] == ["python", "-m", "trainer"]
        assert re.match(r"^[^:]+:[\w.-]+$", c["image"]) and not c["image"].endswith(":latest")
        volumes = {v["name"]: v for v in pod_spec(workload)["volumes"]}
        assert volumes["trainer"]["configMap"]["name"] == "tfk8s-trainer"


def test_node_labels_replace_kubectl_label(stack_run):
    config = stack_config(stack_run.stack)
    for patch in stack_run.of_kind("NodePatch"):
        metadata = patch.manifest["metadata"]
        pool = next(p for p in config.node_pools if p.nodes and metadata["name"] in p.nodes)
        labels = metadata["labels"]
        # Keys of this experiment's own: other experiments may label the same node.
        assert labels[f"pool.tfk8s.io/{stack_run.stack}"] == pool.name
        assert labels[f"role.tfk8s.io/{stack_run.stack}"] in ("ps", "worker", "mixed")
        if pool.gpu:
            assert labels[L.TFK8S_GPU_PRODUCT] == pool.gpu.product
        else:
            assert L.TFK8S_GPU_PRODUCT not in labels
        # pulumi-kubernetes gives each patch its own field manager; an annotation naming one would
        # be written on the node, and two experiments' values would conflict.
        assert "annotations" not in metadata


def test_the_jobset_waits_for_every_server_label(stack_run):
    patches = {p.urn for p in stack_run.of_kind("NodePatch")}
    (jobset,) = stack_run.of_kind("JobSet")
    assert {"Namespace", "ConfigMap"} <= {d.kind for d in stack_run.dependencies_of(jobset)}
    assert patches <= set(jobset.dependencies)


def test_statefulset_pods_wait_for_their_servers_labels():
    """A pinned workload depends on its own server's NodePatch, not on every node."""
    stack_run = statefulset_run("scene1-case2")
    patch_of = {p.manifest["metadata"]["name"]: p.urn for p in stack_run.of_kind("NodePatch")}
    planned = {t: s for s, tasks in stack_run.outputs["placement"].items() for t in tasks}
    server_of = {pod.workload.urn: planned.get(pod.task) for pod in pods_of(stack_run)}
    for workload in workloads(stack_run):
        depends = {d.kind for d in stack_run.dependencies_of(workload)}
        assert {"Namespace", "ConfigMap"} <= depends
        server = server_of[workload.urn]
        if server is not None:
            patches = [u for u in workload.dependencies if u in patch_of.values()]
            assert patches == [patch_of[server]]


def test_gpu_workers_require_the_gpu_product():
    run = program_run("gpu-p40")
    for workload in workloads(run):
        terms = pod_spec(workload)["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        keys = {e["key"] for term in terms for e in term["matchExpressions"]}
        if workload.manifest["metadata"]["labels"][L.COMPONENT] == "worker":
            assert L.TFK8S_GPU_PRODUCT in keys
        else:
            assert L.TFK8S_GPU_PRODUCT not in keys


def test_spread_pins_nothing_and_keeps_ps_apart():
    run = program_run("spread-managed")
    assert run.outputs["placement"] == {}
    assert not run.of_kind("NodePatch")
    for workload in workloads(run):
        if workload.manifest["metadata"]["labels"][L.COMPONENT] == "chief":
            continue
        spec = pod_spec(workload)
        terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        assert terms == [
            {"matchExpressions": [{"key": "cloud.google.com/gke-nodepool", "operator": "In", "values": ["tf-pool"]}]}
        ]
        (spread,) = spec["topologySpreadConstraints"]
        assert spread["topologyKey"] == "kubernetes.io/hostname"
        role = workload.manifest["metadata"]["labels"][L.COMPONENT]
        assert spread["whenUnsatisfiable"] == ("DoNotSchedule" if role == "ps" else "ScheduleAnyway")
        template_labels = workload.manifest["spec"]["template"]["metadata"]["labels"]
        assert spread["labelSelector"]["matchLabels"] == {f"task.tfk8s.io/{run.stack}": role}
        assert spread["labelSelector"]["matchLabels"].items() <= template_labels.items()


def test_the_checkpoint_volume_is_a_claim_mounted_only_into_the_chief():
    run = program_run("scene1-case2-durable")
    (claim,) = run.of_kind("PersistentVolumeClaim")
    assert claim.manifest["metadata"]["name"] == "tfk8s-checkpoints"
    assert claim.manifest["metadata"]["namespace"] == "tf-scene1-case2-durable"
    assert claim.manifest["spec"] == {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "20Gi"}}}
    for workload in workloads(run):
        claims = [v for v in pod_spec(workload)["volumes"] if "persistentVolumeClaim" in v]
        mounts = [m["mountPath"] for m in container(workload)["volumeMounts"]]
        if task_name(workload) == "chief":
            assert claims == [{"name": "checkpoints", "persistentVolumeClaim": {"claimName": "tfk8s-checkpoints"}}]
            assert "/checkpoints" in mounts
            assert pod_spec(workload)["securityContext"]["fsGroup"] == 1000
        else:
            assert claims == [] and "/checkpoints" not in mounts
    # The pods' settings point the chief's checkpoints at the volume; the chief waits for the claim.
    env = {c.manifest["metadata"]["name"]: c.manifest["data"] for c in run.of_kind("ConfigMap")}["tfk8s-trainer-env"]
    assert json.loads(env["TFK8S_TRAINER"])["checkpointDir"] == "/checkpoints"
    (jobset,) = run.of_kind("JobSet")
    assert "PersistentVolumeClaim" in {d.kind for d in run.dependencies_of(jobset)}


def test_without_a_volume_checkpoints_stay_on_scratch():
    run = program_run("scene1-case2")
    assert run.of_kind("PersistentVolumeClaim") == []
    env = {c.manifest["metadata"]["name"]: c.manifest["data"] for c in run.of_kind("ConfigMap")}["tfk8s-trainer-env"]
    assert json.loads(env["TFK8S_TRAINER"])["checkpointDir"] == "default"

