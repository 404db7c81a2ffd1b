"""GPU workers run TensorFlow's GPU build, tolerate the GPU taint and never fight GPU Feature Discovery."""

from __future__ import annotations

import copy

import pytest

from components.plan import labels as L
from components.spec.loading import load_stack_config
from components.spec.models import StackConfigError
from components.spec.stack_files import read_stack_values
from tests.harness import run_program
from tests.pods import pods_of
from tests.runs import SHIPPED_STACKS, program_run

GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def _gpu_values(edit=None) -> tuple[str, dict]:
    name, values = read_stack_values("gpu-p40")
    values = copy.deepcopy(values)
    if edit:
        edit(values)
    return name, values


def _required_keys(pod) -> set[str]:
    terms = pod.spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    return {e["key"] for term in terms for e in term["matchExpressions"]}


def test_gpu_workers_run_the_gpu_build_of_the_same_tensorflow_and_the_rest_the_cpu_build():
    images = {pod.task: pod.container["image"] for pod in pods_of(program_run("gpu-p40"))}
    assert {image for task, image in images.items() if task.startswith("worker-")} == {"tensorflow/tensorflow:2.21.0-gpu"}
    assert {image for task, image in images.items() if not task.startswith("worker-")} == {"tensorflow/tensorflow:2.21.0"}


def test_cpu_workers_keep_the_cpu_build():
    images = {pod.container["image"] for pod in pods_of(program_run("scene1-case2"))}
    assert images == {"tensorflow/tensorflow:2.21.0"}


def test_gpu_image_may_be_given_by_tag_or_digest():
    digest = "registry.example.com/tf@sha256:" + "ab" * 32

    def edit(values):
        values["tfk8s:cluster"]["image"] = "registry.example.com/tf@sha256:" + "cd" * 32
        values["tfk8s:cluster"]["gpuImage"] = digest

    run = run_program(*_gpu_values(edit))
    workers = [pod for pod in pods_of(run) if pod.task.startswith("worker-")]
    assert {pod.container["image"] for pod in workers} == {digest}


def test_a_digest_image_with_gpu_workers_needs_a_gpu_image():
    def edit(values):
        values["tfk8s:cluster"]["image"] = "tensorflow/tensorflow@sha256:" + "ab" * 32

    with pytest.raises(StackConfigError) as error:
        load_stack_config(*_gpu_values(edit))
    assert "tfk8s:cluster.gpuImage: GPU workers need TensorFlow's GPU build" in str(error.value)
    assert "stack 'gpu-p40'" in str(error.value)


def test_an_unpinned_gpu_image_is_refused():
    def edit(values):
        values["tfk8s:cluster"]["gpuImage"] = "tensorflow/tensorflow:latest"

    with pytest.raises(StackConfigError, match="tfk8s:cluster.gpuImage: .*must be pinned"):
        load_stack_config(*_gpu_values(edit))


def test_gpu_workers_tolerate_the_gpu_taint_and_nothing_else_does():
    for pod in pods_of(program_run("gpu-p40")):
        tolerations = pod.spec.get("tolerations", [])
        if pod.task.startswith("worker-"):
            assert tolerations == [GPU_TOLERATION]
        else:
            assert tolerations == []
    assert all("tolerations" not in pod.spec for pod in pods_of(program_run("scene1-case3")))


def test_each_role_adds_the_stacks_tolerations():
    dedicated = {"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"}
    spot = {"key": "cloud.example.com/spot", "operator": "Exists"}

    def edit(values):
        cluster = values["tfk8s:cluster"]
        cluster["ps"]["tolerations"] = [dedicated]
        cluster["workers"]["tolerations"] = [dedicated, spot, GPU_TOLERATION]  # the GPU one only once
        cluster["chief"] = {"tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoExecute",
                                             "tolerationSeconds": 300}]}

    for pod in pods_of(run_program(*_gpu_values(edit))):
        role = pod.task.split("-")[0]
        expected = {
            "ps": [dedicated],
            "worker": [GPU_TOLERATION, dedicated, spot],
            "chief": [{"key": "dedicated", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
        }[role]
        assert pod.spec["tolerations"] == expected, pod.task


@pytest.mark.parametrize(
    "toleration, message",
    [
        ({"key": "a", "operator": "Exists", "value": "x"}, "operator Exists takes no value"),
        ({"value": "x"}, "operator Equal needs a key"),
        ({"key": "a", "value": "x", "effect": "NoSchedule", "tolerationSeconds": 5}, "tolerationSeconds applies to effect NoExecute only"),
        ({"key": "a", "effect": "Sometimes"}, "effect"),
        ({"key": "a", "seconds": 5}, "seconds"),
    ],
    ids=["Exists with a value", "Equal without a key", "tolerationSeconds without NoExecute", "unknown effect",
         "unknown field"],
)
def test_a_bad_toleration_names_the_role_and_the_rule(toleration, message):
    def edit(values):
        values["tfk8s:cluster"]["workers"]["tolerations"] = [toleration]

    with pytest.raises(StackConfigError) as error:
        load_stack_config(*_gpu_values(edit))
    text = str(error.value)
    assert "tfk8s:cluster.workers.tolerations[0]" in text and message in text


@pytest.mark.parametrize("stack", SHIPPED_STACKS)
def test_tfk8s_never_writes_a_label_under_nvidia_com(stack):
    for patch in program_run(stack).of_kind("NodePatch"):
        written = patch.manifest["metadata"]["labels"]
        assert not [key for key in written if key.startswith("nvidia.com/")], written


def test_nodes_tfk8s_labels_get_its_own_gpu_product_label_and_gpu_workers_select_it():
    run = program_run("gpu-p40")
    labels = {p.manifest["metadata"]["name"]: p.manifest["metadata"]["labels"] for p in run.of_kind("NodePatch")}
    assert labels["gpu-srv-00"][L.TFK8S_GPU_PRODUCT] == "Tesla-P40"
    assert L.TFK8S_GPU_PRODUCT not in labels["cpu-srv-00"]
    for pod in pods_of(run):
        keys = _required_keys(pod)
        assert (L.TFK8S_GPU_PRODUCT in keys) == pod.task.startswith("worker-"), pod.task
        assert L.GPU_PRODUCT not in keys


def test_with_gpu_feature_discovery_the_workers_select_its_label_and_tfk8s_writes_none():
    def edit(values):
        values["tfk8s:nodePools"][1]["gpu"]["labelledBy"] = "gfd"

    run = run_program(*_gpu_values(edit))
    for patch in run.of_kind("NodePatch"):
        written = patch.manifest["metadata"]["labels"]
        assert L.TFK8S_GPU_PRODUCT not in written and not [k for k in written if k.startswith("nvidia.com/")]
    for pod in pods_of(run):
        keys = _required_keys(pod)
        assert (L.GPU_PRODUCT in keys) == pod.task.startswith("worker-"), pod.task
        assert L.TFK8S_GPU_PRODUCT not in keys


def test_a_selector_pool_selects_gfds_label_and_cannot_ask_tfk8s_to_label():
    values = {
        "tfk8s:nodePools": [{"name": "gpus", "selector": {"cloud.example.com/pool": "a100"},
                             "gpu": {"product": "NVIDIA-A100-SXM4-80GB", "perNode": 8}}],
        "tfk8s:cluster": {"placement": "spread", "ps": {"replicas": 1, "pool": "gpus"},
                          "workers": {"replicas": 2, "pool": "gpus", "gpus": 1}},
    }
    config = load_stack_config("a100", values)
    assert config.pools["gpus"].gpu_labeller == "gfd"
    values["tfk8s:nodePools"][0]["gpu"]["labelledBy"] = "tfk8s"
    with pytest.raises(StackConfigError) as error:
        load_stack_config("a100", values)
    assert "tfk8s:nodePools[0]" in str(error.value) and "use labelledBy: gfd" in str(error.value)
