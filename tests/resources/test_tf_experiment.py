"""What a platform team expects of a Pulumi project: options passed through, a component library, outputs."""

from __future__ import annotations

import copy

import pytest

from components.spec.models import StackConfigError
from components.spec.stack_files import read_stack_values
from tests.harness import PROJECT_ROOT, RecordingMonitor, reset_pulumi, run_program
from tests.runs import program_run

EXPLICIT_PROVIDER = PROJECT_ROOT / "tests" / "programs" / "explicit_provider.py"
PLATFORM_PROGRAM = PROJECT_ROOT / "docs" / "examples" / "platform-program" / "__main__.py"


@pytest.fixture(autouse=True)
def _reset():
    yield
    reset_pulumi()


@pytest.mark.parametrize("stack", ["scene1-case1", "gpu-p40"])
def test_a_provider_given_to_the_program_reaches_every_resource(stack):
    monitor = RecordingMonitor()
    run = run_program(*read_stack_values(stack), monitor=monitor, program=EXPLICIT_PROVIDER)
    (provider,) = [r for r in run.resources if r.type == "pulumi:providers:kubernetes"]
    reference = f"{provider.urn}::{provider.name}-id"
    kubernetes = [r for r in run.resources if r.custom and r.type.startswith("kubernetes:")]
    assert kubernetes and all(r.provider == reference for r in kubernetes), {r.name: r.provider for r in kubernetes}
    # The transform is on every component, which the engine applies to all its children.
    components = [(request.type, len(request.transforms)) for request, _ in monitor.registrations if not request.custom]
    assert components and all(count == 1 for _, count in components), components


def test_without_options_the_default_provider_is_used():
    run = program_run("scene1-case1")
    assert all(r.provider == "" for r in run.resources if r.custom)


def test_outputs_name_the_workloads_and_the_chiefs_log_selector():
    outputs = program_run("scene1-case2").outputs
    assert set(outputs) >= {"namespace", "placement", "tasks", "psMemory", "workloads", "chiefSelector", "jobset",
                            "addresses", "poolNodes"}
    assert outputs["jobset"] == "tf" and len(outputs["addresses"]["worker"]) == 50
    assert outputs["poolNodes"] == {"servers": [f"srv-0{i}" for i in range(5)]}
    assert outputs["workloads"] == ["jobset/tf"]
    assert outputs["chiefSelector"] == (
        "app.kubernetes.io/instance=scene1-case2,app.kubernetes.io/part-of=tfk8s,app.kubernetes.io/component in (chief)"
    )

    name, values = read_stack_values("scene1-case2")
    values = copy.deepcopy(values)
    values["tfk8s:cluster"]["workload"] = "statefulset"
    workloads = run_program(name, values).outputs["workloads"]
    assert workloads[0] == "job/chief" and "statefulset/ps-srv-00" in workloads and "statefulset/worker-srv-04" in workloads


def test_the_tasks_output_counts_every_role_the_experiment_runs():
    name, values = read_stack_values("scene1-case2")
    values = copy.deepcopy(values)
    values["tfk8s:cluster"]["chief"] = {"checkpointVolume": {"size": "1Gi"}}
    values["tfk8s:cluster"]["evaluator"] = {"replicas": 1}
    assert run_program(name, values).outputs["tasks"] == {"chief": 1, "ps": 5, "worker": 50, "evaluator": 1}


def test_a_platform_program_builds_experiments_from_its_own_config():
    run = run_program("dev", {}, program=PLATFORM_PROGRAM)
    experiments = {r.name: r for r in run.resources if r.type == "tfk8s:tf_experiment:TFExperiment"}
    assert set(experiments) == {"ranking-dev", "ctr-dev"}
    namespaces = {r.manifest["metadata"]["name"] for r in run.of_kind("Namespace")}
    assert namespaces == {"tf-ranking-dev", "tf-ctr-dev"}
    assert run.outputs["ranking"]["tasks"] == {"chief": 1, "ps": 4, "worker": 40, "evaluator": 0}
    assert run.outputs["ctr"]["workloads"] == ["jobset/tf"]
    # Every Kubernetes object sits under its experiment and goes through the team's provider.
    (provider,) = [r for r in run.resources if r.type == "pulumi:providers:kubernetes"]
    by_urn = run.by_urn()
    for resource in run.resources:
        if resource.custom and resource.type.startswith("kubernetes:"):
            assert resource.provider.startswith(provider.urn)
            ancestors = []
            parent = by_urn.get(resource.parent)
            while parent is not None:
                ancestors.append(parent.type)
                parent = by_urn.get(parent.parent)
            assert ancestors[-1] == "tfk8s:tf_experiment:TFExperiment", (resource.name, ancestors)
    # Both experiments label the same four servers, each with its own keys.
    keys = {key for patch in run.of_kind("NodePatch") for key in patch.manifest["metadata"]["labels"]}
    assert keys == {f"{domain}/{stack}" for domain in ("pool.tfk8s.io", "role.tfk8s.io", "server.tfk8s.io")
                    for stack in ("ranking-dev", "ctr-dev")}


def test_typed_arguments_are_validated_like_a_stack_file():
    from components.resources.tf_experiment import TFExperimentArgs
    from components.spec.models import ClusterSpec
    from components.spec.pools import NodePoolSpec
    from trainer.settings import TrainerSettings

    args = TFExperimentArgs(
        node_pools=[NodePoolSpec(name="servers", nodes=("srv-00",))],
        cluster=ClusterSpec.model_validate({"placement": "colocated", "ps": {"replicas": 1, "pool": "servers"},
                                            "workers": {"replicas": 4, "pool": "servers"}}),
        trainer=TrainerSettings(embedding_rows=50_000),
    )
    values = args.stack_values()
    assert values["tfk8s:cluster"]["workers"]["replicas"] == 4
    assert values["tfk8s:trainer"]["embeddingRows"] == 50_000
    assert values["tfk8s:nodePools"] == [{"name": "servers", "nodes": ["srv-00"]}]


def test_bad_arguments_name_the_experiment_and_the_field_and_register_nothing(tmp_path):
    program = tmp_path / "bad.py"
    program.write_text(
        "from components.tf_experiment import TFExperiment, TFExperimentArgs\n"
        "TFExperiment('ranking', TFExperimentArgs(node_pools=[{'name': 'servers', 'nodes': ['srv-00']}],\n"
        "    cluster={'placement': 'colocated', 'ps': {'replicas': 1, 'pool': 'servers'},\n"
        "             'workers': {'replicas': 4, 'pool': 'gpus'}}))\n"
    )
    monitor = RecordingMonitor()
    with pytest.raises(StackConfigError) as error:
        run_program("dev", {}, monitor=monitor, program=program)
    assert "stack 'ranking'" in str(error.value) and "tfk8s:cluster.workers.pool" in str(error.value)
    assert monitor.registrations == []


def test_a_teams_program_runs_from_the_component_and_its_outputs_name_the_cluster(tmp_path):
    """`program=` takes what `tfk8s:program` takes, its source read from the project's folder; the
    component's Outputs are the namespace, the JobSet, TF_CONFIG's addresses and the labelled nodes."""
    (tmp_path / "ranking").mkdir()
    (tmp_path / "ranking" / "train.py").write_text("print('training')\n")
    program = tmp_path / "__main__.py"
    program.write_text(
        "import pulumi\n"
        "from components.tf_experiment import TFExperiment, TFExperimentArgs\n"
        "experiment = TFExperiment('ranking', TFExperimentArgs(\n"
        "    node_pools=[{'name': 'servers', 'nodes': ['srv-00', 'srv-01']}],\n"
        "    cluster={'placement': 'colocated', 'ps': {'replicas': 2, 'pool': 'servers', 'memory': '4Gi'},\n"
        "             'workers': {'replicas': 4, 'pool': 'servers'}},\n"
        "    program={'source': 'ranking', 'command': ['python', 'train.py']},\n"
        f"    project_root=__import__('pathlib').Path({str(tmp_path)!r})))\n"
        "pulumi.export('jobset', experiment.jobset)\n"
        "pulumi.export('addresses', experiment.addresses)\n"
        "pulumi.export('poolNodes', experiment.pool_nodes)\n"
    )
    run = run_program("dev", {}, program=program)
    shipped = [m for m in (r.manifest for r in run.of_kind("ConfigMap")) if "train.py" in (m.get("data") or {})]
    assert len(shipped) == 1 and shipped[0]["data"]["train.py"] == "print('training')\n"
    assert not [r for r in run.of_kind("ConfigMap") if r.manifest["metadata"]["name"] == "tfk8s-trainer"]
    assert run.outputs["jobset"] == "tf"
    assert run.outputs["addresses"]["ps"] == [
        f"tf-ps-0-{i}.tf.tf-ranking.svc:2222" for i in range(2)
    ]
    assert len(run.outputs["addresses"]["worker"]) == 4 and len(run.outputs["addresses"]["chief"]) == 1
    assert run.outputs["poolNodes"] == {"servers": ["srv-00", "srv-01"]}
