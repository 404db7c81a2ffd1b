"""`tfk8s:program`: the team's own program, as its pods and objects are registered (under mocks)."""

from __future__ import annotations

import copy
import json

import pytest

from components.objects.loading import load_experiment_values
from components.plan.trainer_bundle import load_trainer_bundle
from components.spec.models import StackConfigError
from components.spec.stack_files import PROJECT_ROOT, read_stack_values
from tests.harness import run_program
from tests.pods import config_maps_of, expanded, pods_of, replicated_jobs
from trainer.peers import GRPC_OPTIONS

TF2_SOURCE = "tests/team_programs/tf2-ps"
SEED_RUN_SH = ["$(PS_HOSTS)", "$(WORKER_HOSTS)", "$(JOB_NAME)", "$(TASK_INDEX)", "$(PS_REPLICAS)", "$(WORKER_REPLICAS)"]


def program_values(program: dict, stack: str = "scene1-case2", workload: str = "jobset", **cluster) -> tuple[str, dict]:
    name, values = read_stack_values(stack)
    values = copy.deepcopy(values)
    values.pop("tfk8s:trainer", None)
    values["tfk8s:program"] = program
    values["tfk8s:cluster"]["workload"] = workload
    values["tfk8s:cluster"].setdefault("ps", {})["memory"] = "4Gi"
    values["tfk8s:cluster"].update(cluster)
    return name, values


def program_stack_run(program: dict, **options):
    return run_program(*program_values(program, **options))


def refusal(program: dict, **options) -> str:
    name, values = program_values(program, **options)
    with pytest.raises(StackConfigError) as error:
        load_experiment_values(name, values, load_trainer_bundle(PROJECT_ROOT))
    return str(error.value)


@pytest.mark.parametrize("workload", ["jobset", "statefulset"])
def test_every_task_gets_tf_config_and_the_seeds_variables(workload):
    run = program_stack_run({"source": TF2_SOURCE, "command": ["python", "train.py"]}, workload=workload)
    config_maps = config_maps_of(run)
    pods = pods_of(run)
    assert len(pods) == 1 + 5 + 50
    for pod in pods:
        env = pod.env(config_maps)
        tf_config = json.loads(env["TF_CONFIG"])
        task_type, index = pod.task.rsplit("-", 1)
        assert tf_config["task"] == {"type": task_type, "index": int(index)}
        assert tf_config["environment"] == "cloud"
        assert len(tf_config["cluster"]["ps"]) == 5 and len(tf_config["cluster"]["worker"]) == 50
        assert env["JOB_NAME"] == task_type and env["TASK_INDEX"] == index
        assert env["PS_HOSTS"] == ",".join(tf_config["cluster"]["ps"])
        assert env["WORKER_HOSTS"] == ",".join(tf_config["cluster"]["worker"])
        assert (env["PS_REPLICAS"], env["WORKER_REPLICAS"]) == ("5", "50")
        # The task's own address is its pod's DNS name, on the port it serves.
        if task_type != "chief":
            assert tf_config["cluster"][task_type][int(index)].startswith(f"{pod.hostname}.{pod.subdomain}.")
        assert pod.program_argv == ["python", "train.py"]
        assert pod.container["workingDir"] == "/program"
        # Started by the shell that passes SIGTERM on, in a process namespace of its own.
        assert pod.container["command"][:2] == ["/bin/sh", "-c"] and "shareProcessNamespace" not in pod.spec


def test_the_seeds_run_sh_call_gets_its_six_arguments():
    run = program_stack_run({"source": TF2_SOURCE, "command": ["sh", "run.sh"], "args": SEED_RUN_SH, "done": "workers"})
    pods = pods_of(run)
    assert {pod.task.split("-")[0] for pod in pods} == {"ps", "worker"}, "no chief task with done: workers"
    worker = next(pod for pod in pods if pod.task == "worker-7")
    env = worker.env(config_maps_of(run))
    assert worker.program_argv[:2] == ["sh", "run.sh"]
    args = [expanded(arg, env) for arg in worker.program_argv[2:]]
    assert args[2:] == ["worker", "7", "5", "50"]
    assert args[0].count(",") == 4 and args[1].count(",") == 49


def test_the_program_source_is_shipped_and_mounted_read_only_at_program():
    run = program_stack_run({"source": TF2_SOURCE, "command": ["python", "train.py"]})
    (config_map,) = [c for c in run.of_kind("ConfigMap") if c.manifest["metadata"]["name"] == "tfk8s-program"]
    assert config_map.manifest["data"]["train.py"] == (PROJECT_ROOT / TF2_SOURCE / "train.py").read_text()
    assert not [c for c in run.of_kind("ConfigMap") if c.manifest["metadata"]["name"] == "tfk8s-trainer"]
    pod = pods_of(run)[0]
    volumes = {volume["name"]: volume for volume in pod.spec["volumes"]}
    mounts = {mount["mountPath"]: mount for mount in pod.container["volumeMounts"]}
    assert volumes[mounts["/program"]["name"]]["configMap"]["items"] == [
        {"key": "train.py", "path": "train.py", "mode": 0o444}
    ]
    assert mounts["/program"]["readOnly"] is True
    assert "/tmp" in mounts, "the root filesystem is read-only: /tmp is the task's own"


def test_without_command_the_image_entrypoint_runs_and_nothing_is_shipped():
    run = program_stack_run({"args": ["--epochs", "1"]})
    pod = pods_of(run)[0]
    assert "command" not in pod.container and pod.container["args"] == ["--epochs", "1"]
    assert "workingDir" not in pod.container
    assert not [
        c for c in run.of_kind("ConfigMap") if c.manifest["metadata"]["name"] in ("tfk8s-program", "tfk8s-trainer")
    ]


def test_roles_get_their_own_command_and_env_and_volumes_reach_every_task():
    run = program_stack_run(
        {
            "command": ["python", "main.py"],
            "env": {"TF_USE_LEGACY_KERAS": "1", "TOKEN": {"secret": "data-creds", "key": "token"}},
            "volumes": [{"claim": "training-data", "mountPath": "/data", "readOnly": True}],
            "roles": {"ps": {"command": ["python", "ps.py"], "args": ["--ps"]}},
        }
    )
    config_maps = config_maps_of(run)
    for pod in pods_of(run):
        role = pod.task.split("-")[0]
        assert pod.program_argv == (["python", "ps.py", "--ps"] if role == "ps" else ["python", "main.py"])
        env = pod.env(config_maps)
        assert env["TF_USE_LEGACY_KERAS"] == "1" and env["TOKEN"] == "<secret data-creds key token>"
        claim = next(v for v in pod.spec["volumes"] if "persistentVolumeClaim" in v)
        assert claim["persistentVolumeClaim"] == {"claimName": "training-data", "readOnly": True}
        assert {"name": claim["name"], "mountPath": "/data", "readOnly": True} in pod.container["volumeMounts"]


def test_a_writable_claim_is_given_the_tasks_group_and_a_read_only_one_is_left_as_it_is():
    """An imported TFJob's claim, written as root under TFJob, is written by tfk8s's unprivileged tasks:
    Kubernetes gives a volume's files the pod's fsGroup (found on real nodes: Kubeflow's
    mnist_with_summaries example could not create its TensorBoard folder, tests/realpods)."""
    written = program_stack_run(
        {"command": ["python", "main.py"], "volumes": [{"claim": "out", "mountPath": "/train"}]}
    )
    for pod in pods_of(written):
        assert pod.spec["securityContext"]["fsGroup"] == 1000
        assert pod.spec["securityContext"]["fsGroupChangePolicy"] == "OnRootMismatch"
    read = program_stack_run(
        {"command": ["python", "main.py"], "volumes": [{"claim": "data", "mountPath": "/data", "readOnly": True}]}
    )
    for pod in pods_of(read):
        assert "fsGroup" not in pod.spec["securityContext"]


def test_every_task_gets_the_trainers_grpc_options_unless_the_program_sets_its_own():
    """TensorFlow's gRPC defaults left a team's TF2 chief reaching a lost worker's replacement 11 to
    17 s after it served: a program's tasks get the channel options tfk8s's trainer uses; the team's
    own value wins."""
    given = program_stack_run({"command": ["python", "main.py"]})
    config_maps = config_maps_of(given)
    for pod in pods_of(given):
        options = dict(pair.split("=") for pair in pod.env(config_maps)["TF_GRPC_DEFAULT_OPTIONS"].split(","))
        assert options == {name: str(value) for name, value in GRPC_OPTIONS.items()}
        assert options["grpc.min_reconnect_backoff_ms"] == "500"  # also the connect deadline: 20 s by default

    own = {"TF_GRPC_DEFAULT_OPTIONS": "grpc.max_reconnect_backoff_ms=5000"}
    run = program_stack_run({"command": ["python", "main.py"], "env": own})
    config_maps = config_maps_of(run)
    assert {pod.env(config_maps)["TF_GRPC_DEFAULT_OPTIONS"] for pod in pods_of(run)} == set(own.values())


def test_done_chief_succeeds_with_the_chief_and_done_workers_with_every_worker():
    chief_run = program_stack_run({"command": ["python", "train.py"]})
    (jobset,) = chief_run.of_kind("JobSet")
    assert jobset.manifest["spec"]["successPolicy"] == {"operator": "Any", "targetReplicatedJobs": ["chief"]}

    workers_run = program_stack_run({"command": ["sh", "run.sh"], "done": "workers"})
    (jobset,) = workers_run.of_kind("JobSet")
    spec = jobset.manifest["spec"]
    assert spec["successPolicy"] == {"operator": "All", "targetReplicatedJobs": ["worker"]}
    assert [job["name"] for job in spec["replicatedJobs"]] == ["ps", "worker"]
    assert spec["failurePolicy"]["rules"][0] == {
        "name": "WorkerFailed",
        "action": "FailJobSet",
        "targetReplicatedJobs": ["worker"],
    }
    (worker,) = [job for job in replicated_jobs(workers_run) if job.manifest["metadata"]["name"] == "worker"]
    assert worker.manifest["spec"]["maxFailedIndexes"] == 0, "a worker that keeps failing fails the experiment"
    assert worker.manifest["spec"]["backoffLimitPerIndex"] == 6


@pytest.mark.parametrize(
    "done, rule",
    [
        ({"workers": 2}, {"succeededCount": 2}),  # any 2 of the 3
        ("worker-0", {"succeededIndexes": "0"}),  # worker 0, as a TFJob without a chief
    ],
)
def test_a_done_rule_without_a_chief_completes_the_workers_job_by_its_success_policy(done, rule):
    run = program_stack_run({"command": ["sh", "run.sh"], "done": done}, workers={"replicas": 3, "pool": "servers"})
    (jobset,) = run.of_kind("JobSet")
    spec = jobset.manifest["spec"]
    assert [job["name"] for job in spec["replicatedJobs"]] == ["ps", "worker"], "no chief task"
    assert spec["successPolicy"] == {"operator": "All", "targetReplicatedJobs": ["worker"]}
    (worker,) = [job for job in replicated_jobs(run) if job.manifest["metadata"]["name"] == "worker"]
    assert worker.manifest["spec"]["completions"] == 3
    assert worker.manifest["spec"]["successPolicy"] == {"rules": [rule]}
    assert worker.manifest["spec"]["maxFailedIndexes"] == 0, "a worker that keeps failing still fails it"


def test_done_every_worker_written_as_a_count_is_done_workers():
    # The Job completes with every index, as with done: workers.
    every = program_stack_run(
        {"command": ["sh", "run.sh"], "done": {"workers": 3}}, workers={"replicas": 3, "pool": "servers"}
    )
    (worker,) = [job for job in replicated_jobs(every) if job.manifest["metadata"]["name"] == "worker"]
    assert "successPolicy" not in worker.manifest["spec"]


def test_done_n_of_the_workers_needs_a_jobset():
    message = refusal({"command": ["x"], "done": {"workers": 2}}, workload="statefulset")
    assert "tfk8s:program.done: {workers: 2} needs tfk8s:cluster.workload: jobset" in message


@pytest.mark.parametrize("done", ["chief", "workers", "worker-0"])
def test_workers_only_have_no_ps_in_tf_config_and_are_placed_as_any_workers(done):
    name, values = program_values({"command": ["python", "train.py"], "done": done})
    values["tfk8s:cluster"]["ps"] = {"replicas": 0}
    run = run_program(name, values)
    (jobset,) = run.of_kind("JobSet")
    spec = jobset.manifest["spec"]
    assert [job["name"] for job in spec["replicatedJobs"]] == (["chief", "worker"] if done == "chief" else ["worker"])
    assert "PSDisrupted" not in {rule["name"] for rule in spec["failurePolicy"]["rules"]}
    (data,) = [data for data in config_maps_of(run).values() if "TFK8S_CLUSTER" in data]
    assert json.loads(data["TFK8S_CLUSTER"]).keys() == ({"chief", "worker"} if done == "chief" else {"worker"})
    assert (data["PS_HOSTS"], data["PS_REPLICAS"], data["WORKER_REPLICAS"]) == ("", "0", "50")
    # The workers' placement is the stack's: 10 per server of the pool, as with PS.
    with_ps = program_stack_run({"command": ["python", "train.py"], "done": done})
    assert [p.spec.get("topologySpreadConstraints") for p in pods_of(run) if p.task.startswith("worker")] == [
        p.spec.get("topologySpreadConstraints") for p in pods_of(with_ps) if p.task.startswith("worker")
    ]


def test_a_changed_program_rolls_every_task():
    def templates(program):
        return {
            pod.task: json.dumps(pod.spec, sort_keys=True) + json.dumps(dict(pod.labels))
            for pod in pods_of(program_stack_run(program))
        }

    base = {"source": TF2_SOURCE, "command": ["python", "train.py"], "args": ["--steps", "100"]}
    before = templates(base)
    after = templates({**base, "args": ["--steps", "200"]})
    assert all(before[task] != after[task] for task in before)
    annotations = {
        str(p.workload.manifest["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["metadata"]["annotations"])
        for p in pods_of(program_stack_run(base))
    }
    assert len(annotations) == 1


def test_a_program_stack_needs_ps_memory():
    name, values = program_values({"command": ["python", "train.py"]})
    del values["tfk8s:cluster"]["ps"]["memory"]
    with pytest.raises(StackConfigError) as error:
        load_experiment_values(name, values, load_trainer_bundle(PROJECT_ROOT))
    assert "tfk8s:cluster.ps.memory: required with tfk8s:program" in str(error.value)
    assert "cannot from a program it does not know" in str(error.value)


@pytest.mark.parametrize(
    "program, expected",
    [
        (
            {"command": ["python", "x.py"], "args": ["$(TASK_ID)"]},
            "tfk8s:program: args: $(TASK_ID) names no variable a task has",
        ),
        (
            {"command": ["sh", "-c", "echo $(TOKEN) $$(LITERAL)"], "env": {"OTHER": "1"}},
            "tfk8s:program: command: $(TOKEN) names no variable",
        ),
        ({"command": ["x"], "env": {"TF_CONFIG": "{}"}}, "env name 'TF_CONFIG' is set by tfk8s on every task"),
        ({"command": ["x"], "env": {"TFK8S_CLUSTER": "{}"}}, "env name 'TFK8S_CLUSTER' is set by tfk8s"),
        (
            {"command": ["x"], "done": "workers", "roles": {"chief": {"args": ["a"]}}},
            "roles.chief: with done: workers there is no chief task",
        ),
        (
            {"command": ["x"], "volumes": [{"claim": "a", "mountPath": "/program"}]},
            "mountPath: '/program' is /program, which tfk8s mounts itself",
        ),
        (
            {"command": ["x"], "done": "sometimes"},
            "tfk8s:program.done: must be chief, workers, worker-0 or {workers: N} (N workers exit 0) (got 'sometimes')",
        ),
        (
            {"command": ["x"], "done": {"workers": 0}},
            "tfk8s:program.done: workers: how many workers must exit 0, a whole number ≥ 1 (got 0)",
        ),
        (
            {"command": ["x"], "done": {"worker": 2}},
            "tfk8s:program.done: a mapping takes the one key workers ({workers: N}); got worker",
        ),
        (
            {"command": ["x"], "done": {"workers": 51}},
            "tfk8s:program.done.workers: 51 workers must exit 0, but tfk8s:cluster.workers.replicas runs 50",
        ),
        (
            {"command": ["x"], "done": {"workers": 2}, "roles": {"chief": {"args": ["a"]}}},
            "roles.chief: with done: {workers: 2} there is no chief task",
        ),
        ({"command": ["x"], "entrypoint": ["y"]}, "tfk8s:program.entrypoint: unknown key"),
    ],
)
def test_bad_programs_are_refused_naming_the_field(program, expected):
    message = refusal(program)
    assert "stack 'scene1-case2'" in message
    assert expected in message


def test_a_program_and_trainer_settings_together_are_refused():
    name, values = program_values({"command": ["python", "train.py"]})
    values["tfk8s:trainer"] = {"steps": 10}
    with pytest.raises(StackConfigError, match="tfk8s:program and tfk8s:trainer are both set"):
        load_experiment_values(name, values, load_trainer_bundle(PROJECT_ROOT))


@pytest.mark.parametrize(
    "source, expected",
    [
        ("../elsewhere", "is outside the project"),
        ("/etc", "must be a folder of the project"),
        ("no/such/folder", "is not a folder of the project"),
    ],
)
def test_a_source_that_cannot_be_shipped_is_refused(source, expected):
    message = refusal({"source": source, "command": ["python", "x.py"]})
    assert f"tfk8s:program.source: '{source}'" in message and expected in message


def test_a_source_naming_a_file_says_it_is_a_file_and_which_folder_to_give():
    """A script given as source, as one gives a script to run: not "does not exist", which it does."""
    message = refusal({"source": f"{TF2_SOURCE}/train.py", "command": ["python", "train.py"]})
    assert f"tfk8s:program.source: '{TF2_SOURCE}/train.py' is a file, and source takes a folder" in message
    assert f"(source: '{TF2_SOURCE}')" in message and "(command: [python, train.py])" in message
    assert "does not exist" not in message


def test_a_source_too_large_or_linking_out_is_refused_with_the_way_out(tmp_path):
    from components.plan.program_source import ProgramSourceError, load_program_source

    big = tmp_path / "big"
    big.mkdir()
    (big / "weights.bin").write_bytes(b"\0" * 1_100_000)
    with pytest.raises(ProgramSourceError) as error:
        load_program_source(tmp_path, "big")
    assert "holds 1,100,000 bytes in 1 files" in str(error.value) and "bake the program into the image" in str(
        error.value
    )

    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "secrets").symlink_to("/etc/hostname")
    with pytest.raises(ProgramSourceError, match="is a link to /etc/hostname, outside the folder"):
        load_program_source(tmp_path, "linked")

    fine = tmp_path / "fine"
    (fine / "pkg" / "__pycache__").mkdir(parents=True)
    (fine / "pkg" / "__init__.py").write_text("")
    (fine / "pkg" / "__pycache__" / "x.pyc").write_bytes(b"\x00")
    (fine / "run.sh").write_text("#!/bin/sh\n")
    (fine / "run.sh").chmod(0o755)
    (fine / "pkg" / "inner.sh").symlink_to("../run.sh")
    source = load_program_source(tmp_path, "fine")
    assert [(f.path, f.key, f.executable) for f in source.files] == [
        ("pkg/__init__.py", "pkg____init__.py", False),
        ("pkg/inner.sh", "pkg__inner.sh", True),
        ("run.sh", "run.sh", True),
    ]


def test_a_program_stack_whose_tf_config_outgrows_one_variable_is_refused_with_the_way_out():
    from tests.stack_variants import scaled_values

    name, values = program_values({"command": ["python", "train.py"]}, stack="scene1-case4")
    with pytest.raises(StackConfigError) as error:
        load_experiment_values(f"{name}-x50", scaled_values(values, 50), load_trainer_bundle(PROJECT_ROOT))
    message = str(error.value)
    assert "tfk8s:cluster.workers.replicas: 11,001 tasks make a TF_CONFIG of" in message
    assert "Linux passes at most 131,072 bytes in one variable" in message
    assert "use fewer PS and workers" in message
    # The trainer, which reads a larger cluster from a file, takes the same experiment.
    _, trainer_values = read_stack_values("scene1-case4")
    load_experiment_values(f"{name}-x50", scaled_values(trainer_values, 50), load_trainer_bundle(PROJECT_ROOT))


def test_the_plan_says_what_every_task_runs():
    from components.cli.plan_view import plan_table

    name, values = program_values(
        {"source": TF2_SOURCE, "command": ["sh", "run.sh"], "args": SEED_RUN_SH, "done": "workers"}
    )
    experiment = load_experiment_values(name, values, load_trainer_bundle(PROJECT_ROOT))
    text = plan_table(experiment.config, experiment.plan, experiment.program_source)
    assert "0 chief · 5 PS (4Gi each) · 50 workers" in text
    assert (
        f"program: sh run.sh '$(PS_HOSTS)' '$(WORKER_HOSTS)' '$(JOB_NAME)' '$(TASK_INDEX)' '$(PS_REPLICAS)' "
        f"'$(WORKER_REPLICAS)' · source {TF2_SOURCE} (1 files, sha256 {experiment.program_source.sha256[:12]})"
        " · done: workers"
    ) in text
    entrypoint = load_experiment_values(*program_values({"args": ["--epochs", "1"]}), load_trainer_bundle(PROJECT_ROOT))
    assert "program: (the image's entrypoint) --epochs 1 · done: chief" in plan_table(
        entrypoint.config, entrypoint.plan
    )
    some = load_experiment_values(
        *program_values({"command": ["x"], "done": {"workers": 40}}), load_trainer_bundle(PROJECT_ROOT)
    )
    assert "0 chief" in plan_table(some.config, some.plan) and "· done: {workers: 40}" in plan_table(
        some.config, some.plan
    )


def test_gpus_kueue_priority_and_the_chiefs_deadline_follow_the_program():
    gpu = program_stack_run({"command": ["python", "train.py"]}, stack="gpu-p40")
    for pod in pods_of(gpu):
        role = pod.task.split("-")[0]
        if role == "worker":
            assert pod.container["resources"]["limits"]["nvidia.com/gpu"] == "1"
            assert pod.container["image"].endswith("-gpu")
            assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod.spec["tolerations"]
        else:
            assert "nvidia.com/gpu" not in pod.container["resources"]["limits"]

    queued = program_stack_run(
        {"command": ["python", "train.py"]},
        queue="team-a",
        priorityClass="research-low",
        chief={"activeDeadlineSeconds": 3600},
    )
    (jobset,) = queued.of_kind("JobSet")
    assert jobset.manifest["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "tfk8s"
    assert {pod.spec["priorityClassName"] for pod in pods_of(queued)} == {"research-low"}
    (chief,) = [job for job in replicated_jobs(queued) if job.manifest["metadata"]["name"] == "chief"]
    assert chief.manifest["spec"]["activeDeadlineSeconds"] == 3600
