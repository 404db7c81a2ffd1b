"""TFExperiment takes pulumi Inputs where a platform team's program has them: the image its image
build produced, an env value or a Secret's name from another resource. Values that decide the plan
stay plain, and an Input there is refused before anything registers."""

from __future__ import annotations

import pytest


from components.plan.object_names import PROGRAM_SECRET
from tests.resources.test_secret_env import SECRET_SIGNATURE, SECRET_SIGNATURE_KEY
from components.spec.models import StackConfigError
from tests.harness import RecordingMonitor, reset_pulumi, run_program

IMAGE = "registry.team.example/ranking@sha256:" + "a1" * 32
TOKEN = "tok-4c9f1e"


@pytest.fixture(autouse=True)
def _reset():
    yield
    reset_pulumi()


def _program(tmp_path, cluster_extra: str = "", env: str = "{}", before: str = "") -> object:
    program = tmp_path / "__main__.py"
    program.write_text(
        "import pulumi\n"
        "import pulumi_kubernetes as k8s\n"
        "from components.tf_experiment import TFExperiment, TFExperimentArgs\n"
        f"{before}"
        "experiment = TFExperiment('ranking', TFExperimentArgs(\n"
        "    node_pools=[{'name': 'servers', 'nodes': ['srv-00', 'srv-01']}],\n"
        "    cluster={'placement': 'colocated', 'ps': {'replicas': 2, 'pool': 'servers', 'memory': '4Gi'},\n"
        f"             'workers': {{'replicas': 4, 'pool': 'servers'}}{cluster_extra}}},\n"
        f"    program={{'command': ['python', '-m', 'ranking.train'], 'env': {env}}}))\n"
    )
    return program


def _pod_specs(run) -> dict[str, dict]:
    (jobset,) = run.of_kind("JobSet")
    return {job["name"]: job["template"]["spec"]["template"]["spec"] for job in jobset.manifest["spec"]["replicatedJobs"]}


def _env(spec: dict) -> dict[str, dict]:
    (container,) = spec["containers"]
    return {entry["name"]: entry for entry in container["env"]}


def test_an_image_from_the_teams_image_build_is_what_every_task_runs(tmp_path):
    program = _program(tmp_path, cluster_extra=f", 'image': pulumi.Output.from_input({IMAGE!r})")
    run = run_program("dev", {}, program=program)
    specs = _pod_specs(run)
    assert set(specs) == {"chief", "ps", "worker"}
    assert {spec["containers"][0]["image"] for spec in specs.values()} == {IMAGE}
    assert not [r for r in run.resources if "tfk8s-input-" in r.wire_text]


def test_an_env_value_from_another_resource_reaches_the_tasks_through_the_experiments_secret(tmp_path):
    before = (
        "settings = k8s.core.v1.ConfigMap('settings', metadata={'name': 'ranking-settings-7f3a', 'namespace': 'ml'},\n"
        "                                 data={'lr': '0.01'})\n"
    )
    program = _program(
        tmp_path, before=before,
        env="{'SETTINGS': settings.metadata.name, 'TOKEN': pulumi.Output.secret(" + repr(TOKEN) + "), 'LEVEL': 'debug'}",
    )
    run = run_program("dev", {}, program=program)
    (secret,) = run.of_kind("Secret")
    # Held as a Pulumi secret: tfk8s cannot tell before the engine resolves an Output whether it is one.
    assert secret.manifest["stringData"] == {
        SECRET_SIGNATURE_KEY: SECRET_SIGNATURE,
        "value": {"SETTINGS": "ranking-settings-7f3a", "TOKEN": TOKEN},
    }
    (configmap,) = [r for r in run.of_kind("ConfigMap") if r.name == "settings"]
    assert configmap.urn in secret.dependencies, "the Secret waits for the resource its value comes from"
    for spec in _pod_specs(run).values():
        env = _env(spec)
        for name in ("SETTINGS", "TOKEN"):
            assert env[name] == {"name": name, "valueFrom": {"secretKeyRef": {"name": PROGRAM_SECRET, "key": name}}}
        assert env["LEVEL"] == {"name": "LEVEL", "value": "debug"}
    for resource in run.resources:
        if resource is not secret:
            assert TOKEN not in resource.wire_text, f"{resource.type} {resource.name} holds the secret"


def test_a_secret_reference_may_name_a_secret_another_resource_created(tmp_path):
    before = (
        "creds = k8s.core.v1.Secret('creds', metadata={'name': 'warehouse-creds-91b2', 'namespace': 'tf-ranking'},\n"
        "                           string_data={'password': pulumi.Output.secret('pw')})\n"
    )
    program = _program(tmp_path, before=before, env="{'DB_PASSWORD': {'secret': creds.metadata.name, 'key': 'password'}}")
    run = run_program("dev", {}, program=program)
    (jobset,) = run.of_kind("JobSet")
    (creds,) = [r for r in run.resources if r.name == "creds"]
    assert creds.urn in jobset.dependencies
    for spec in _pod_specs(run).values():
        assert _env(spec)["DB_PASSWORD"]["valueFrom"]["secretKeyRef"] == {"name": "warehouse-creds-91b2", "key": "password"}
    assert not [r for r in run.of_kind("Secret") if r.manifest["metadata"]["name"] == PROGRAM_SECRET]


@pytest.mark.parametrize(
    "field, value",
    [
        ("tfk8s:cluster.workers.replicas", "pulumi.Output.from_input(4)"),
        ("tfk8s:cluster.placement", "pulumi.Output.from_input('colocated')"),
    ],
)
def test_an_input_where_the_plan_needs_a_plain_value_is_refused_naming_the_field(tmp_path, field, value):
    program = _program(tmp_path)
    text = program.read_text()
    if field.endswith("replicas"):
        text = text.replace("'workers': {'replicas': 4,", f"'workers': {{'replicas': {value},")
    else:
        text = text.replace("{'placement': 'colocated',", f"{{'placement': {value},")
    program.write_text(text)
    monitor = RecordingMonitor()
    with pytest.raises(StackConfigError) as error:
        run_program("dev", {}, monitor=monitor, program=program)
    message = str(error.value)
    assert "stack 'ranking'" in message and f"{field}: takes a plain value, not a pulumi Output" in message
    assert "cluster.image" in message, "the error says where Inputs are taken"
    assert monitor.registrations == []


def test_an_image_input_with_gpu_workers_needs_the_gpu_image_named_and_the_error_shows_no_placeholder(tmp_path):
    program = _program(
        tmp_path,
        cluster_extra=f", 'image': pulumi.Output.from_input({IMAGE!r})",
    )
    text = program.read_text().replace(
        "'workers': {'replicas': 4, 'pool': 'servers'}", "'workers': {'replicas': 4, 'pool': 'servers', 'gpus': 1}"
    )
    program.write_text(text)
    with pytest.raises(StackConfigError) as error:
        run_program("dev", {}, program=program)
    message = str(error.value)
    assert "gpuImage" in message and "<a pulumi Output>" in message and "tfk8s-input-" not in message, message


def test_node_names_from_another_resource_are_the_servers_labelled_and_planned_on(tmp_path):
    before = (
        "first = k8s.core.v1.ConfigMap('node-names', metadata={'name': 'gpu-node-7', 'namespace': 'ml'})\n"
    )
    program = _program(tmp_path, before=before)
    text = program.read_text().replace("'nodes': ['srv-00', 'srv-01']", "'nodes': [first.metadata.name, 'srv-01']")
    program.write_text(
        text + "pulumi.export('poolNodes', experiment.pool_nodes)\n"
        "pulumi.export('perServer', experiment.outputs['perServer'])\n"
    )
    run = run_program("dev", {}, program=program)
    patched = {r.manifest["metadata"]["name"]: r for r in run.of_kind("NodePatch")}
    assert set(patched) == {"gpu-node-7", "srv-01"}
    (configmap,) = [r for r in run.of_kind("ConfigMap") if r.name == "node-names"]
    assert configmap.urn in patched["gpu-node-7"].dependencies
    # A name the plan cannot measure may be longer than a label value: the pool is labelled by position.
    assert {name: patch.manifest["metadata"]["labels"]["server.tfk8s.io/ranking"] for name, patch in patched.items()} == {
        "gpu-node-7": "s0", "srv-01": "s1"}
    # What a user looks up: the nodes labelled, and the tasks the plan gives each server, by name.
    assert run.outputs["poolNodes"] == {"servers": ["gpu-node-7", "srv-01"]}
    assert set(run.outputs["perServer"]) == {"gpu-node-7", "srv-01"}
    assert not [r.name for r in run.resources if "tfk8s-input-" in r.wire_text]
