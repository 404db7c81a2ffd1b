"""`tfk8s:tensorboard` under mocks: what a user checks in a preview or `render`: TensorBoard reads the
chief's volume read-only, every task knows where to write, no one but the listed peers reaches its
port, it is no peer of the gRPC port, the pack passes it, and a stack that gives it nothing to read
is refused naming the field."""

from __future__ import annotations

import copy

import pytest

import pulumi
from components.spec.stack_files import read_stack_values
from tests.harness import reset_pulumi, run_program
from tests.policy_harness import objects_of, tripped

IMAGE = "localhost/tfk8s/tensorboard:2.21.0"


@pytest.fixture(autouse=True)
def _reset():
    yield
    reset_pulumi()


def _values(tensorboard, volume=True, stack="scene1-case1"):
    name, values = read_stack_values(stack)
    values = copy.deepcopy(values)
    if volume:
        values["tfk8s:cluster"]["chief"] = {"checkpointVolume": {"size": "1Gi"}}
    if tensorboard is not None:
        values["tfk8s:tensorboard"] = tensorboard
    return name, values


def _pod_spec(run) -> dict:
    (deployment,) = run.of_kind("Deployment")
    return deployment.manifest["spec"]["template"]["spec"]


def test_tensorboard_reads_the_chiefs_volume_read_only_and_every_task_is_told_where_to_write():
    run = run_program(*_values({"image": IMAGE}))
    spec = _pod_spec(run)
    (container,) = spec["containers"]
    assert container["image"] == IMAGE
    assert container["args"][:2] == ["--logdir", "/checkpoints/tensorboard"]
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    assert mounts["checkpoints"] == {"name": "checkpoints", "mountPath": "/checkpoints", "readOnly": True}
    claims = [v["persistentVolumeClaim"]["claimName"] for v in spec["volumes"] if "persistentVolumeClaim" in v]
    assert claims == ["tfk8s-checkpoints"]
    # Writable at the pod, with the chief's group: it may be the first pod to mount a local volume.
    assert spec["securityContext"]["fsGroup"] == 1000
    (env,) = [r for r in run.of_kind("ConfigMap") if r.manifest["metadata"]["name"] == "tfk8s-trainer-env"]
    assert env.manifest["data"]["TFK8S_TENSORBOARD_DIR"] == "/checkpoints/tensorboard"
    (service,) = [r for r in run.of_kind("Service") if r.manifest["metadata"]["name"] == "tensorboard"]
    assert service.manifest["spec"]["ports"][0]["port"] == 6006
    assert not tripped(objects_of(run)), "the pack's mandatory policies pass"


def test_no_one_reaches_its_port_unless_listed_and_it_is_no_peer_of_the_grpc_port():
    run = run_program(*_values({"image": IMAGE}))
    (deployment,) = run.of_kind("Deployment")
    labels = deployment.manifest["spec"]["template"]["metadata"]["labels"]
    policies = {r.manifest["metadata"]["name"]: r.manifest["spec"] for r in run.of_kind("NetworkPolicy")}
    grpc = policies["tf-grpc-from-experiment-only"]["podSelector"]["matchLabels"]
    assert not grpc.items() <= labels.items(), "the gRPC port's policy neither admits nor governs TensorBoard"
    own = policies["tensorboard"]
    assert own["podSelector"]["matchLabels"] == labels and "ingress" not in own, "a type without rules admits nothing"

    listed = {"image": IMAGE, "allowFrom": [{"namespace": "monitoring", "podLabels": {"app": "grafana"}}]}
    run = run_program(*_values(listed))
    own = {r.manifest["metadata"]["name"]: r.manifest["spec"] for r in run.of_kind("NetworkPolicy")}["tensorboard"]
    assert own["ingress"] == [{
        "from": [{"podSelector": {"matchLabels": {"app": "grafana"}},
                  "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}],
        "ports": [{"protocol": "TCP", "port": 6006}],
    }]


def test_a_remote_log_dir_needs_no_volume_and_mounts_none():
    run = run_program(*_values({"image": IMAGE, "logDir": "gs://team-bucket/ranking/tb"}, volume=False))
    spec = _pod_spec(run)
    assert spec["containers"][0]["args"][:2] == ["--logdir", "gs://team-bucket/ranking/tb"]
    assert not [v for v in spec["volumes"] if "persistentVolumeClaim" in v]


def test_without_tensorboard_nothing_of_it_is_created_and_the_tasks_env_is_unchanged():
    run = run_program(*_values(None))
    assert not run.of_kind("Deployment")
    assert all("TFK8S_TENSORBOARD_DIR" not in (r.manifest.get("data") or {}) for r in run.of_kind("ConfigMap"))


@pytest.mark.parametrize(
    "tensorboard, volume, field, says",
    [
        ({"image": IMAGE}, False, "tfk8s:tensorboard:", "set tfk8s:cluster.chief.checkpointVolume"),
        ({"image": IMAGE, "logDir": "/data/tb"}, True, "tfk8s:tensorboard.logDir", "not under /checkpoints"),
        ({"image": IMAGE, "logDir": "/checkpoints/../etc"}, True, "tfk8s:tensorboard.logDir", "not under /checkpoints"),
        ({"image": IMAGE, "logDir": "/checkpoints/tb"}, False, "tfk8s:tensorboard.logDir", "mounts only"),
        ({"image": "tensorboard:latest"}, True, "tfk8s:tensorboard.image", "pinned"),
        ({}, True, "tfk8s:tensorboard.image", "required"),
        ({"image": IMAGE, "port": 80}, True, "tfk8s:tensorboard.port", "unknown key"),
    ],
)
def test_a_stack_that_gives_tensorboard_nothing_to_read_is_refused_naming_the_field(tensorboard, volume, field, says):
    with pytest.raises(pulumi.RunError) as error:
        run_program(*_values(tensorboard, volume=volume))
    message = str(error.value).lower()
    assert field.lower() in message and says.lower() in message, message


def test_in_the_chiefs_pool_it_tolerates_what_the_chief_tolerates():
    name, values = _values({"image": IMAGE})
    toleration = {"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"}
    values["tfk8s:cluster"]["chief"]["tolerations"] = [toleration]
    spec = _pod_spec(run_program(name, values))
    assert spec["tolerations"] == [toleration]
    expressions = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert expressions["nodeSelectorTerms"][0]["matchExpressions"][0]["key"] == "pool.tfk8s.io/scene1-case1"


def test_the_evaluator_writes_its_eval_loss_into_tensorboards_folder_and_reads_the_rest_only():
    from tests.pods import pods_of

    name, values = _values({"image": IMAGE})
    values["tfk8s:cluster"]["evaluator"] = {"replicas": 1}
    pods = {pod.task: pod for pod in pods_of(run_program(name, values))}
    mounts = [m for m in pods["evaluator-0"].container["volumeMounts"] if m["name"] == "checkpoints"]
    assert mounts == [
        {"name": "checkpoints", "mountPath": "/checkpoints", "readOnly": True},
        {"name": "checkpoints", "mountPath": "/checkpoints/tensorboard", "subPath": "tensorboard"},
    ]
    chief = [m for m in pods["chief-0"].container["volumeMounts"] if m["name"] == "checkpoints"]
    assert chief == [{"name": "checkpoints", "mountPath": "/checkpoints"}]

    name, values = _values({"image": IMAGE, "logDir": "gs://team-bucket/tb"})
    values["tfk8s:cluster"]["evaluator"] = {"replicas": 1}
    pods = {pod.task: pod for pod in pods_of(run_program(name, values))}
    mounts = [m for m in pods["evaluator-0"].container["volumeMounts"] if m["name"] == "checkpoints"]
    assert mounts == [{"name": "checkpoints", "mountPath": "/checkpoints", "readOnly": True}]


def test_a_log_dir_written_with_doubled_or_trailing_slashes_is_one_folder_for_tensorboard_and_the_evaluator():
    from tests.pods import pods_of

    name, values = _values({"image": IMAGE, "logDir": "/checkpoints//team-tb/"})
    values["tfk8s:cluster"]["evaluator"] = {"replicas": 1}
    run = run_program(name, values)
    assert _pod_spec(run)["containers"][0]["args"][:2] == ["--logdir", "/checkpoints/team-tb"]
    (evaluator,) = [pod for pod in pods_of(run) if pod.task == "evaluator-0"]
    (scalars,) = [m for m in evaluator.container["volumeMounts"] if m.get("subPath")]
    assert scalars["subPath"] == "team-tb", "a relative path, as the API server requires"


def test_the_whole_checkpoint_volume_as_log_dir_is_refused_with_an_evaluator_and_read_without_one():
    """The evaluator mounts the volume read-only and writes eval_loss only into TensorBoard's folder:
    the volume's root as that folder would leave it nowhere to write, so the stack is refused naming
    logDir; without an evaluator TensorBoard reads the whole volume as before."""
    name, values = _values({"image": IMAGE, "logDir": "/checkpoints"})
    run = run_program(name, values)
    assert _pod_spec(run)["containers"][0]["args"][:2] == ["--logdir", "/checkpoints"]

    reset_pulumi()
    values["tfk8s:cluster"]["evaluator"] = {"replicas": 1}
    with pytest.raises(pulumi.RunError) as error:
        run_program(name, values)
    message = str(error.value)
    assert "tfk8s:tensorboard.logDir: '/checkpoints' is the whole checkpoint volume" in message, message
    assert "/checkpoints/tensorboard" in message
