"""A queued experiment Kueue could never admit is refused, naming the stack, the field and what is short
(components/objects/admission.py; the engine test reads a real ClusterQueue)."""

from __future__ import annotations

import copy
from typing import Any, Optional

import pytest

from components.objects.admission import UNBOUNDED, lendable, never_admitted, requested
from components.objects.loading import load_experiment_values
from components.plan.trainer_bundle import load_trainer_bundle
from components.spec.stack_files import PROJECT_ROOT, read_stack_values


def queued(stack: str = "scene1-case2", queue: Optional[str] = "team-a", **workers: Any):
    name, values = read_stack_values(stack)
    values = copy.deepcopy(values)
    values["tfk8s:cluster"]["queue"] = queue
    values["tfk8s:cluster"]["workers"].update(workers)
    return load_experiment_values(name, values, load_trainer_bundle(PROJECT_ROOT))


def cluster_queue(cohort: Optional[str] = None, **quotas: Any) -> dict[str, Any]:
    resources = [{"name": name.replace("_", "-").replace("nvidia-com-gpu", "nvidia.com/gpu"), **quota}
                 for name, quota in quotas.items()]
    return {"spec": {**({"cohort": cohort} if cohort else {}),
                     "resourceGroups": [{"coveredResources": [r["name"] for r in resources],
                                         "flavors": [{"name": "default", "resources": resources}]}]}}


ROOMY = {"cpu": {"nominalQuota": "1000"}, "memory": {"nominalQuota": "10Ti"},
         "ephemeral_storage": {"nominalQuota": "10Ti"}}


def test_what_an_experiment_requests_is_every_pod_of_every_role():
    experiment = queued()  # scene1-case2: a chief of 1 CPU, 5 PS of 2, 50 workers of 1
    asked = requested(experiment)
    assert asked["cpu"] == pytest.approx(1 + 5 * 2 + 50 * 1)
    # 50 workers of 2Gi, 5 PS of 805Mi (sized from the model: the stack's psMemory output), a chief of 2Gi.
    mi, gi = 2**20, 2**30
    assert asked["memory"] == pytest.approx(50 * 2 * gi + 5 * 805 * mi + 2 * gi)
    assert "nvidia.com/gpu" not in asked


def test_a_queue_that_lends_enough_admits_it():
    assert never_admitted(queued(), cluster_queue(**ROOMY)) is None


def test_an_experiment_without_a_queue_is_never_refused():
    assert never_admitted(queued(queue=None), None) is None


def test_a_queue_the_cluster_does_not_have_is_refused():
    refusal = never_admitted(queued(), None)
    assert refusal.startswith("stack 'scene1-case2': tfk8s:cluster.queue 'team-a': the cluster has no such ClusterQueue")


def test_more_cpu_than_the_queue_could_ever_lend_is_refused_with_the_figures():
    quotas = {**ROOMY, "cpu": {"nominalQuota": "32"}}
    refusal = never_admitted(queued(), cluster_queue(**quotas))
    assert "Kueue could never admit this experiment, which asks for cpu 61 (the queue lends at most 32)" in refusal
    assert "tfk8s:cluster.queue 'team-a'" in refusal


def test_a_cohort_lends_up_to_its_borrowing_limit_or_without_bound():
    bounded = {**ROOMY, "cpu": {"nominalQuota": "32", "borrowingLimit": "40"}}
    assert never_admitted(queued(), cluster_queue(cohort="research", **bounded)) is None
    assert lendable(cluster_queue(cohort="research", cpu={"nominalQuota": "32"}))["cpu"] == UNBOUNDED
    assert never_admitted(queued(), cluster_queue(**bounded)) is not None, "outside a cohort nothing is borrowed"


def test_gpus_a_queue_does_not_cover_are_refused():
    refusal = never_admitted(queued("gpu-p40"), cluster_queue(**ROOMY))
    assert "nvidia.com/gpu 8 (the queue lends at most 0)" in refusal
