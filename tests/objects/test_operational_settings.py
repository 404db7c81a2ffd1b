"""Settings a shared cluster needs: priority, a deadline for the chief, volume ownership, image digests."""

from __future__ import annotations

import copy

import pytest

from components.spec.loading import load_stack_config
from components.spec.models import StackConfigError
from components.spec.stack_files import read_stack_values
from tests.harness import run_program
from tests.pods import pods_of
from tests.runs import program_run


def _run(stack: str, edit, workload: str = "jobset"):
    name, values = read_stack_values(stack)
    values = copy.deepcopy(values)
    values["tfk8s:cluster"]["workload"] = workload
    edit(values["tfk8s:cluster"])
    return run_program(name, values)


def _chief_job_spec(run, workload: str) -> dict:
    if workload == "jobset":
        (jobset,) = run.of_kind("JobSet")
        (chief,) = [job for job in jobset.manifest["spec"]["replicatedJobs"] if job["name"] == "chief"]
        return chief["template"]["spec"]
    (job,) = run.of_kind("Job")
    return job.manifest["spec"]


@pytest.mark.parametrize("workload", ["jobset", "statefulset"])
def test_every_pod_of_the_experiment_gets_its_priority_class(workload):
    run = _run("scene1-case2", lambda c: c.update(priorityClass="research-low"), workload)
    pods = pods_of(run)
    assert pods and {pod.spec.get("priorityClassName") for pod in pods} == {"research-low"}


def test_without_a_priority_class_the_clusters_default_applies():
    assert all("priorityClassName" not in pod.spec for pod in pods_of(program_run("scene1-case2")))


@pytest.mark.parametrize("workload", ["jobset", "statefulset"])
def test_the_chief_gets_a_deadline_only_when_asked(workload):
    run = _run("scene1-case2", lambda c: c.setdefault("chief", {}).update(activeDeadlineSeconds=86400), workload)
    assert _chief_job_spec(run, workload)["activeDeadlineSeconds"] == 86400
    if workload == "jobset":
        (jobset,) = run.of_kind("JobSet")
        others = [job for job in jobset.manifest["spec"]["replicatedJobs"] if job["name"] != "chief"]
        assert all("activeDeadlineSeconds" not in job["template"]["spec"] for job in others)
    unset = _run("scene1-case2", lambda c: None, workload)
    assert "activeDeadlineSeconds" not in _chief_job_spec(unset, workload)


@pytest.mark.parametrize("bad, message", [
    ({"priorityClass": "Research_Low"}, "tfk8s:cluster.priorityClass"),
    ({"chief": {"activeDeadlineSeconds": 0}}, "tfk8s:cluster.chief.activeDeadlineSeconds"),
    ({"chief": {"activeDeadlineSeconds": "1d"}}, "tfk8s:cluster.chief.activeDeadlineSeconds"),
], ids=["priority class not a DNS subdomain", "deadline of 0 seconds", "deadline not a number"])
def test_bad_operational_settings_name_the_field(bad, message):
    name, values = read_stack_values("scene1-case2")
    values = copy.deepcopy(values)
    values["tfk8s:cluster"].update(bad)
    with pytest.raises(StackConfigError) as error:
        load_stack_config(name, values)
    assert message in str(error.value) and "stack 'scene1-case2'" in str(error.value)


def test_the_checkpoint_volume_is_re_owned_only_when_its_root_is_not_the_chiefs():
    (chief,) = [pod for pod in pods_of(program_run("scene1-case2-durable")) if pod.task == "chief-0"]
    assert chief.spec["securityContext"]["fsGroup"] == 1000
    assert chief.spec["securityContext"]["fsGroupChangePolicy"] == "OnRootMismatch"


def test_images_may_be_named_by_digest_everywhere():
    digest = "registry.example.com/tensorflow@sha256:" + "0f" * 32
    gpu_digest = "registry.example.com/tensorflow-gpu@sha256:" + "1e" * 32
    name, values = read_stack_values("gpu-p40")
    values = copy.deepcopy(values)
    values["tfk8s:cluster"].update(image=digest, gpuImage=gpu_digest)
    images = {pod.task.split("-")[0]: pod.container["image"] for pod in pods_of(run_program(name, values))}
    assert images == {"chief": digest, "ps": digest, "worker": gpu_digest}
