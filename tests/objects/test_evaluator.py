"""`tfk8s:cluster.evaluator`: TensorFlow's side-car evaluator as its Job and pod are registered
(under mocks), and the stacks that cannot have one."""

from __future__ import annotations

import copy
import json
from typing import Any, Callable

import pytest

from components.objects.loading import load_experiment_values
from components.plan.trainer_bundle import load_trainer_bundle
from components.spec.models import StackConfigError
from components.spec.stack_files import PROJECT_ROOT, read_stack_values
from tests.harness import run_program
from tests.pods import config_maps_of, pods_of, replicated_jobs
from trainer.settings import TrainerSettings
from trainer.shared_names import SETTINGS_ENV

DURABLE = "scene1-case2-durable"  # the chief checkpoints to its volume


def values_of(edit: Callable[[dict[str, Any]], None], stack: str = DURABLE) -> tuple[str, dict[str, Any]]:
    name, values = read_stack_values(stack)
    values = copy.deepcopy(values)
    edit(values)
    return name, values


def with_evaluator(**evaluator: Any) -> Callable[[dict[str, Any]], None]:
    return lambda values: values["tfk8s:cluster"].update(evaluator={"replicas": 1, **evaluator})


def refusal(edit: Callable[[dict[str, Any]], None], stack: str = DURABLE) -> str:
    with pytest.raises(StackConfigError) as error:
        load_experiment_values(*values_of(edit, stack), load_trainer_bundle(PROJECT_ROOT))
    return str(error.value)


def evaluator_job(run) -> dict[str, Any]:
    (job,) = [job for job in replicated_jobs(run) if job.manifest["metadata"]["name"] == "evaluator"]
    return job.manifest["spec"]


def test_the_evaluator_is_its_own_job_that_never_decides_the_outcome():
    run = run_program(*values_of(with_evaluator()))
    (jobset,) = run.of_kind("JobSet")
    spec = jobset.manifest["spec"]
    assert [job["name"] for job in spec["replicatedJobs"]] == ["chief", "ps", "worker", "evaluator"]
    assert spec["successPolicy"]["targetReplicatedJobs"] == ["chief"], "done is the chief's alone"
    named = {target for rule in spec["failurePolicy"]["rules"] for target in rule.get("targetReplicatedJobs", [])}
    assert "evaluator" not in named
    job = evaluator_job(run)
    # Never BackoffLimitExceeded: a failed Job no rule names would restart the experiment.
    assert job["backoffLimit"] == job["backoffLimitPerIndex"] == 2**31 - 1
    assert job["completions"] == job["parallelism"] == 1
    assert job["podFailurePolicy"]["rules"] == [
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}
    ]


def test_the_evaluator_reads_the_chiefs_volume_read_only_on_the_chiefs_server():
    run = run_program(*values_of(with_evaluator(cpu="2", memory="3Gi")))
    pod = evaluator_job(run)["template"]["spec"]
    (container,) = pod["containers"]
    assert {"name": "checkpoints", "mountPath": "/checkpoints", "readOnly": True} in container["volumeMounts"]
    (claim,) = [v["persistentVolumeClaim"] for v in pod["volumes"] if v["name"] == "checkpoints"]
    # Writable for the pod, read-only in the container: whichever of the chief and the evaluator
    # mounts a local volume first, it is re-owned to their group, so the chief can write it.
    assert "readOnly" not in claim
    assert pod["securityContext"]["fsGroup"] == 1000
    assert pod["securityContext"]["fsGroupChangePolicy"] == "OnRootMismatch"
    (term,) = pod["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term == {
        "labelSelector": {"matchLabels": {"task.tfk8s.io/scene1-case2-durable": "chief"}},
        "topologyKey": "kubernetes.io/hostname",
    }
    assert "readinessProbe" not in container and "ports" not in container, "it serves nothing"
    assert container["resources"] == {"requests": {"cpu": "2", "memory": "3Gi"}, "limits": {"memory": "3Gi"}}
    assert "topologySpreadConstraints" not in pod


def test_the_trainers_evaluator_gets_the_training_cluster_without_itself():
    run = run_program(*values_of(with_evaluator()))
    config_maps = config_maps_of(run)
    (evaluator,) = [pod for pod in pods_of(run) if pod.task.startswith("evaluator")]
    assert evaluator.task == "evaluator-0"
    env = evaluator.env(config_maps)
    cluster = json.loads(env["TFK8S_CLUSTER"])
    assert sorted(cluster) == ["chief", "ps", "worker"]
    assert env["TFK8S_TASK_TYPE"] == "evaluator"
    assert TrainerSettings.from_json(env[SETTINGS_ENV]).checkpoint_dir == "/checkpoints"


def test_a_programs_evaluator_runs_its_own_command_else_the_workers():
    def program(roles: dict[str, Any]) -> Callable[[dict[str, Any]], None]:
        def edit(values: dict[str, Any]) -> None:
            values.pop("tfk8s:trainer", None)
            values["tfk8s:program"] = {"command": ["python", "train.py"], "roles": roles}
            values["tfk8s:cluster"]["ps"] = {"memory": "4Gi", "pool": "servers"}
            values["tfk8s:cluster"]["evaluator"] = {"replicas": 1}

        return edit

    run = run_program(*values_of(program({"worker": {"args": ["--serve"]}})))
    config_maps = config_maps_of(run)
    (evaluator,) = [pod for pod in pods_of(run) if pod.task == "evaluator-0"]
    env = evaluator.env(config_maps)
    tf_config = json.loads(env["TF_CONFIG"])
    assert tf_config["task"] == {"type": "evaluator", "index": 0}
    assert sorted(tf_config["cluster"]) == ["chief", "ps", "worker"], "the evaluator is not in the cluster"
    assert env["JOB_NAME"] == "evaluator"
    assert evaluator.container["args"][-1] == "--serve", "the workers' command by default"
    run = run_program(*values_of(program({"worker": {"args": ["--serve"]}, "evaluator": {"args": ["--evaluate"]}})))
    (evaluator,) = [pod for pod in pods_of(run) if pod.task == "evaluator-0"]
    assert evaluator.container["args"][-1] == "--evaluate"
    # Its args alone: the workers' command still runs them.
    run = run_program(*values_of(program({"worker": {"command": ["python", "serve.py"]},
                                          "evaluator": {"args": ["--evaluate"]}})))
    (evaluator,) = [pod for pod in pods_of(run) if pod.task == "evaluator-0"]
    assert evaluator.container["args"][-3:] == ["python", "serve.py", "--evaluate"]


def test_with_a_start_deadline_the_evaluator_waits_for_no_one():
    run = run_program(*values_of(lambda v: with_evaluator()(v) or v["tfk8s:cluster"].update(startDeadline="5m")))
    pod = evaluator_job(run)["template"]["spec"]
    assert "initContainers" not in pod
    assert all(rule["action"] != "FailJob" for rule in evaluator_job(run)["podFailurePolicy"]["rules"])


def test_the_plan_places_the_evaluator_in_its_pool():
    run = run_program(*values_of(with_evaluator()))
    (jobset,) = run.of_kind("JobSet")
    (evaluator,) = [job for job in jobset.manifest["spec"]["replicatedJobs"] if job["name"] == "evaluator"]
    terms = evaluator["template"]["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
    (term,) = terms["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert term["matchExpressions"][0]["values"] == ["servers"]


def test_with_gpu_workers_and_no_volume_the_evaluator_runs_in_the_chiefs_pool():
    """It asks no GPU, and a GPU pool's taint would keep it out."""

    def edit(values):
        values.setdefault("tfk8s:trainer", {})["checkpointDir"] = "gs://team-bucket/ckpt"
        with_evaluator()(values)

    run = run_program(*values_of(edit, "gpu-p40"))
    pod = evaluator_job(run)["template"]["spec"]
    (term,) = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    ps_pool = read_stack_values("gpu-p40")[1]["tfk8s:cluster"]["ps"]["pool"]
    assert term["matchExpressions"][0]["values"] == [ps_pool]
    assert "nvidia.com/gpu" not in pod["containers"][0]["resources"]["limits"]


def trainer_scratch(values: dict[str, Any]) -> None:
    values["tfk8s:cluster"]["chief"] = {}
    with_evaluator()(values)


@pytest.mark.parametrize(
    "edit, stack, expected",
    [
        (lambda v: v["tfk8s:cluster"].update(evaluator={"replicas": 2}), DURABLE,
         "tfk8s:cluster.evaluator.replicas: Input should be less than or equal to 1"),
        (lambda v: with_evaluator()(v) or v["tfk8s:cluster"].update(workload="statefulset"), DURABLE,
         "evaluator needs workload: jobset"),
        (with_evaluator(pool="nowhere"), DURABLE, "tfk8s:cluster.evaluator.pool: unknown pool 'nowhere'"),
        (lambda v: with_evaluator(memory="256Mi")(v) or v.setdefault("tfk8s:trainer", {}).update(embeddingRows=4 * 10**6),
         DURABLE, "tfk8s:cluster.evaluator.memory: 256Mi is below the"),
        (trainer_scratch, DURABLE,
         "tfk8s:cluster.evaluator: the chief writes its checkpoints to 'default' in its own pod, which the "
         "evaluator cannot read"),
        (lambda v: with_evaluator()(v) or v.setdefault("tfk8s:trainer", {}).update(checkpointEvery=0), DURABLE,
         "tfk8s:trainer.checkpointEvery: 0 writes none"),
        (lambda v: with_evaluator(pool="worker-servers")(v) or v["tfk8s:cluster"].setdefault("chief", {}).update(
            checkpointVolume={"size": "1Gi"}), "scene2-case1",
         "tfk8s:cluster.evaluator.pool: 'worker-servers', but the evaluator reads chief.checkpointVolume"),
    ],
)
def test_an_evaluator_that_could_not_work_is_refused_naming_the_field(edit, stack, expected):
    message = refusal(edit, stack)
    assert f"stack '{stack}'" in message
    assert expected in message


def test_plan_shows_the_evaluator_with_the_tasks_the_scheduler_places(tmp_path, capsys):
    from components.cli.main import main as components_main
    from tests.stack_variants import write_variant

    path = write_variant(tmp_path, DURABLE, "with-evaluator", with_evaluator())
    assert components_main(["plan", path]) == 0
    shown = capsys.readouterr().out
    assert "1 chief · 5 PS (805Mi each) · 50 workers · an evaluator" in shown
    (scheduled,) = [line for line in shown.splitlines() if line.startswith("(scheduler)")]
    assert scheduled.split()[1:] == ["servers", "chief-0,", "ps-0..4,", "worker-0..49,", "evaluator-0"]
