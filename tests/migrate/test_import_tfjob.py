"""`python -m components import-tfjob`: a Kubeflow TFJob becomes a stack file that runs the same
program, or nothing is written and the error says why (under mocks)."""

from __future__ import annotations

import copy
import io
from collections import Counter
from pathlib import Path
from typing import Any, Optional

import pytest
import yaml

from components.cli import import_tfjob as importer
from components.cli.main import main as components_main
from components.migrate.carry import ImportOptions, carry
from components.migrate.stack_yaml import stack_yaml
from components.migrate.tfjob import read_tfjob
from components.objects.jobset import jobset
from components.objects.loading import load_experiment
from components.spec.stack_files import read_stack_values
from tests.harness import run_program
from tests.pods import config_maps_of, pods_of

IMAGE = "registry.example.com/ml/ctr:2.21.0"


def container(image: str = IMAGE, **fields: Any) -> dict[str, Any]:
    return {"name": "tensorflow", "image": image, "command": ["python", "train.py"], "args": ["--steps", "1000"],
            "resources": {"requests": {"cpu": "2", "memory": "4Gi"}}, **fields}


def replica(count: int, *, restart: Optional[str] = "OnFailure", pod: Optional[dict] = None, **fields: Any) -> dict:
    spec = {"replicas": count, "template": {"spec": {"containers": [container(**fields)], **(pod or {})}}}
    return {**spec, **({"restartPolicy": restart} if restart else {})}


def tfjob(run_policy: Optional[dict] = None, **replicas: dict) -> dict[str, Any]:
    return {
        "apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "ctr-model"},
        "spec": {**({"runPolicy": run_policy} if run_policy else {}), "tfReplicaSpecs": replicas},
    }


CHIEF_PS_WORKERS = tfjob(Chief=replica(1), PS=replica(2), Worker=replica(4))


@pytest.fixture
def stacks_dir(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "stacks"
    monkeypatch.setattr(importer, "STACKS_DIR", folder)
    return folder


def run_import(tmp_path: Path, capsys, manifest: Any, *flags: str, stack: str = "imported") -> tuple[int, str, str]:
    """The command's exit code, stdout and stderr; `manifest` a TFJob (or any object) or the file's text."""
    text = manifest if isinstance(manifest, str) else yaml.safe_dump(manifest, sort_keys=False)
    source = tmp_path / "tfjob.yaml"
    source.write_text(text)
    code = components_main(["import-tfjob", str(source), "--stack", stack, *flags])
    said = capsys.readouterr()
    return code, said.out, said.err


def written(stacks_dir: Path, stack: str = "imported") -> dict[str, Any]:
    return yaml.safe_load((stacks_dir / f"Pulumi.{stack}.yaml").read_text())["config"]


def test_chief_ps_and_workers_carry_over_as_a_program_stack(tmp_path, capsys, stacks_dir):
    job = copy.deepcopy(CHIEF_PS_WORKERS)
    job["spec"]["runPolicy"] = {"backoffLimit": 4, "activeDeadlineSeconds": 7200}
    job["spec"]["tfReplicaSpecs"]["PS"]["template"]["spec"]["containers"][0]["resources"] = {
        "requests": {"cpu": 4}, "limits": {"memory": "16Gi"}}
    code, out, err = run_import(tmp_path, capsys, job, "--nodes", "srv-00,srv-01")
    assert code == 0, err
    assert err == "", "nothing left behind"
    assert "wrote" in out and "chief, 2 PS, 4 workers, done: chief" in out
    config = written(stacks_dir)
    assert config["tfk8s:nodePools"] == [{"name": "servers", "nodes": ["srv-00", "srv-01"]}]
    cluster = config["tfk8s:cluster"]
    assert cluster["image"] == IMAGE and cluster["placement"] == "spread"
    assert cluster["ps"] == {"replicas": 2, "pool": "servers", "cpu": "4", "memory": "16Gi"}
    assert cluster["workers"] == {"replicas": 4, "pool": "servers", "cpu": "2", "memory": "4Gi"}
    assert cluster["chief"] == {"cpu": "2", "memory": "4Gi", "restarts": 4, "activeDeadlineSeconds": 7200}
    assert cluster["restarts"] == 4
    assert config["tfk8s:program"] == {"command": ["python", "train.py"], "args": ["--steps", "1000"], "done": "chief"}
    text = (stacks_dir / "Pulumi.imported.yaml").read_text()
    assert text.startswith("# Imported from TFJob 'ctr-model'"), text[:200]
    assert "    ps: {replicas: 2, pool: servers, cpu: \"4\", memory: 16Gi}\n" in text, "small mappings on one line"


def test_a_tfjob_without_chief_keeps_tfjobs_rule_worker_0_decides(tmp_path, capsys, stacks_dir):
    run_sh = ["sh", "run.sh"]
    job = tfjob(PS=replica(2, command=run_sh, args=["ps"]), Worker=replica(3, command=run_sh, args=["worker"]))
    code, out, err = run_import(tmp_path, capsys, job, "--nodes", "srv-00")
    assert code == 0, err
    config = written(stacks_dir)
    assert "chief" not in config["tfk8s:cluster"]
    program = config["tfk8s:program"]
    assert program["done"] == "worker-0"
    assert (program["command"], program["args"]) == (run_sh, ["worker"])
    assert program["roles"] == {"ps": {"args": ["ps"]}}
    assert "2 PS, 3 workers, done: worker-0" in out
    assert "succeeds when worker 0 exits 0, as the TFJob did" in (stacks_dir / "Pulumi.imported.yaml").read_text()
    # The workers' Job completes with worker 0, as the TFJob did.
    experiment = load_experiment(str(stacks_dir / "Pulumi.imported.yaml"))
    workers = jobset(experiment)["spec"]["replicatedJobs"][-1]["template"]["spec"]
    assert workers["successPolicy"] == {"rules": [{"succeededIndexes": "0"}]}


@pytest.mark.parametrize("policy, done", [("AllWorkers", "workers"), ("", "worker-0"), (None, "worker-0")])
def test_successpolicy_all_workers_is_done_workers_and_tfjobs_default_is_worker_0(
    tmp_path, capsys, stacks_dir, policy, done
):
    job = tfjob(PS=replica(1), Worker=replica(3))
    if policy is not None:
        job["spec"]["successPolicy"] = policy
    code, _, err = run_import(tmp_path, capsys, job, "--nodes", "srv-00")
    assert code == 0, err
    assert written(stacks_dir)["tfk8s:program"]["done"] == done
    assert "spec.successPolicy" not in err, "carried, not listed"


def test_restart_policy_exit_code_fails_on_1_to_127_and_retries_signals(tmp_path, capsys, stacks_dir):
    job = tfjob(Chief=replica(1, restart="ExitCode"), PS=replica(1, restart="ExitCode"),
                Worker=replica(2, restart="ExitCode"))
    code, _, err = run_import(tmp_path, capsys, job, "--nodes", "n1")
    assert code == 0, err
    assert "restartPolicy" not in err, "ExitCode is carried for every role"
    cluster = written(stacks_dir)["tfk8s:cluster"]
    assert cluster["chief"]["failOn"] == cluster["ps"]["failOn"] == cluster["workers"]["failOn"] == ["1-127"]
    text = (stacks_dir / "Pulumi.imported.yaml").read_text()
    assert "restartPolicy ExitCode: exits 1-127 end the" in text and "failOn: [1-127]" in text
    # The stack is one tfk8s runs: a worker's exit 1 fails its Job at once, a signal's 137 is retried.
    experiment = load_experiment(str(stacks_dir / "Pulumi.imported.yaml"))
    worker_rules = jobset(experiment)["spec"]["replicatedJobs"][-1]["template"]["spec"]["podFailurePolicy"]["rules"]
    assert worker_rules[1]["onExitCodes"]["values"] == list(range(1, 128))


@pytest.mark.parametrize("chief", [False, True])
def test_a_tfjob_of_workers_only_becomes_an_experiment_without_ps(tmp_path, capsys, stacks_dir, chief):
    """Kubeflow's own examples/tensorflow/simple.yaml: Worker replicas only (MultiWorkerMirroredStrategy)."""
    job = tfjob(Worker=replica(2, command=["python", "mnist.py"]), **({"Chief": replica(1)} if chief else {}))
    code, out, err = run_import(tmp_path, capsys, job, "--nodes", "srv-00")
    assert code == 0, err
    config = written(stacks_dir)
    assert config["tfk8s:cluster"]["ps"] == {"replicas": 0}
    assert config["tfk8s:program"]["done"] == ("chief" if chief else "worker-0")
    assert "memory" not in err, "no PS memory to fill in"
    experiment = load_experiment(str(stacks_dir / "Pulumi.imported.yaml"))
    assert experiment.plan.count("ps") == 0 and experiment.plan.count("worker") == 2
    assert "ps" not in experiment.tf_config.cluster
    assert f"{'chief, ' if chief else ''}0 PS, 2 workers, done: {'chief' if chief else 'worker-0'}" in out, out


def test_master_is_the_chief(tmp_path, capsys, stacks_dir):
    code, _, err = run_import(tmp_path, capsys, tfjob(Master=replica(1), PS=replica(1), Worker=replica(2)), "--nodes", "n1")
    assert code == 0, err
    assert written(stacks_dir)["tfk8s:program"]["done"] == "chief"
    assert "chief" in written(stacks_dir)["tfk8s:cluster"]


def test_gpu_workers_with_a_claim_get_a_gpu_pool_their_image_and_the_claim(tmp_path, capsys, stacks_dir):
    claim = {"volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "training-data"}}]}
    mounts = [{"name": "data", "mountPath": "/data", "readOnly": True}]
    gpu_worker = replica(
        4, image=f"{IMAGE}-gpu", volumeMounts=mounts,
        resources={"requests": {"cpu": "4"}, "limits": {"memory": "8Gi", "nvidia.com/gpu": 2}},
        pod={**claim, "nodeSelector": {"nvidia.com/gpu.product": "Tesla-P40"}},
    )
    job = tfjob(Chief=replica(1, volumeMounts=mounts, pod=claim), PS=replica(1), Worker=gpu_worker)
    code, _, err = run_import(tmp_path, capsys, job, "--nodes", "gpu-00,gpu-01", "--pool", "p40")
    assert code == 0, err
    config = written(stacks_dir)
    (pool,) = config["tfk8s:nodePools"]
    assert pool == {"name": "p40", "nodes": ["gpu-00", "gpu-01"],
                    "gpu": {"product": "Tesla-P40", "perNode": 2, "labelledBy": "gfd"}}
    cluster = config["tfk8s:cluster"]
    assert (cluster["image"], cluster["gpuImage"]) == (IMAGE, f"{IMAGE}-gpu")
    assert cluster["workers"]["gpus"] == 2 and cluster["workers"]["pool"] == "p40"
    assert config["tfk8s:program"]["volumes"] == [{"claim": "training-data", "mountPath": "/data", "readOnly": True}]
    assert "metadata.namespace: tfk8s creates the experiment's own namespace" in err
    assert "claim 'training-data'" in err
    assert "set tfk8s:cluster.namespace: {name: " in err and ", existing: true}" in err


def test_per_role_images_that_tfk8s_cannot_say_are_listed(tmp_path, capsys, stacks_dir):
    job = tfjob(Chief=replica(1), PS=replica(1, image="registry.example.com/ml/ps:1.0"), Worker=replica(2))
    code, _, err = run_import(tmp_path, capsys, job, "--nodes", "n1")
    assert code == 0, err
    assert written(stacks_dir)["tfk8s:cluster"]["image"] == IMAGE
    assert (
        "not carried: spec.tfReplicaSpecs.PS.template.spec.containers[0].image: tfk8s runs this role in "
        f"tfk8s:cluster.image, {IMAGE}"
    ) in err


def test_what_cannot_be_carried_is_listed_one_line_each_and_the_rest_is_written(tmp_path, capsys, stacks_dir):
    worker_pod = {
        "initContainers": [{"name": "fetch", "image": "busybox:1.36"}],
        "affinity": {"nodeAffinity": {}},
        "nodeSelector": {"pool": "cpu"},
    }
    worker = replica(4, pod=worker_pod)
    worker["template"]["spec"]["containers"].append({"name": "logger", "image": "fluent-bit:3.0"})
    job = tfjob(
        {"cleanPodPolicy": "Running", "ttlSecondsAfterFinished": 600, "schedulingPolicy": {"minAvailable": 3}},
        Chief=replica(1, restart="ExitCode"), PS=replica(1), Worker=worker, Evaluator=replica(1),
    )
    job["spec"]["successPolicy"] = "AllWorkers"
    job["spec"]["someFutureField"] = True
    code, _, err = run_import(tmp_path, capsys, job, "--nodes", "n1")
    assert code == 0, err
    lines = err.splitlines()
    expected = [
        "spec.tfReplicaSpecs.Worker.template.spec.containers[1]: a sidecar",
        "spec.tfReplicaSpecs.Worker.template.spec.initContainers:",
        "spec.tfReplicaSpecs.Worker.template.spec.affinity: tfk8s places pods itself",
        "spec.tfReplicaSpecs.Worker.template.spec.nodeSelector: tfk8s places pods itself",
        "spec.runPolicy.cleanPodPolicy:",
        "spec.runPolicy.schedulingPolicy.minAvailable:",
        "spec.someFutureField: tfk8s does not know this field",
    ]
    for start in expected:
        assert sum(line.startswith(f"not carried: {start}") for line in lines) == 1, (start, err)
    assert len(lines) == len(expected), err
    assert written(stacks_dir)["tfk8s:cluster"]["workers"]["replicas"] == 4
    assert written(stacks_dir)["tfk8s:cluster"]["ttlSecondsAfterFinished"] == 600, "carried"


def test_an_evaluator_carries_over_with_its_own_command_and_runs_as_its_own_job(tmp_path, capsys, stacks_dir):
    evaluator = replica(1, restart="Never", args=["--evaluate"], resources={"requests": {"cpu": "3", "memory": "5Gi"}})
    job = tfjob(Chief=replica(1), PS=replica(2), Worker=replica(4), Evaluator=evaluator)
    code, out, err = run_import(tmp_path, capsys, job, "--nodes", "srv-00,srv-01")
    assert code == 0, err
    assert "chief, 2 PS, 4 workers, an evaluator, done: chief" in out
    assert err.splitlines() == [
        "not carried: spec.tfReplicaSpecs.Evaluator.restartPolicy: Never: tfk8s restarts a failed evaluator alone, "
        "whatever its exit code; it never fails the experiment"
    ]
    config = written(stacks_dir)
    assert config["tfk8s:cluster"]["evaluator"] == {"replicas": 1, "cpu": "3", "memory": "5Gi"}
    assert config["tfk8s:program"]["roles"] == {"evaluator": {"args": ["--evaluate"]}}
    run = run_program("imported", config)
    (evaluator_pod,) = [pod for pod in pods_of(run) if pod.task == "evaluator-0"]
    assert evaluator_pod.container["args"][-1] == "--evaluate"
    twice = tfjob(Chief=replica(1), PS=replica(2), Worker=replica(4), Evaluator=replica(2))
    code, _, err = run_import(tmp_path, capsys, twice, "--nodes", "srv-00", stack="twice")
    assert code != 0 and "spec.tfReplicaSpecs.Evaluator.replicas is 2; a TFJob's Evaluator has 1 replica" in err
    assert not (stacks_dir / "Pulumi.twice.yaml").exists()


def test_without_nodes_the_pool_has_a_placeholder_the_stack_refuses_until_filled(tmp_path, capsys, stacks_dir):
    code, out, err = run_import(tmp_path, capsys, CHIEF_PS_WORKERS)
    assert code == 0, err
    assert "fill in: tfk8s:nodePools[0].nodes" in err and "fill in 1 value" in out
    (pool,) = written(stacks_dir)["tfk8s:nodePools"]
    (placeholder,) = pool["nodes"]
    assert "fill in" in placeholder
    assert components_main(["plan", str(stacks_dir / "Pulumi.imported.yaml")]) == 2
    assert "tfk8s:nodePools[0].nodes[0]: must be a node name" in capsys.readouterr().err


def test_a_ps_without_memory_is_a_value_to_fill_in(tmp_path, capsys, stacks_dir):
    job = tfjob(Chief=replica(1), PS=replica(1, resources={}), Worker=replica(2))
    code, _, err = run_import(tmp_path, capsys, job, "--nodes", "n1")
    assert code == 0
    assert "fill in: tfk8s:cluster.ps.memory: spec.tfReplicaSpecs.PS requests no memory" in err
    assert "fill in" in written(stacks_dir)["tfk8s:cluster"]["ps"]["memory"]


@pytest.mark.parametrize("manifest, flags, message", [
    pytest.param("spec: [unclosed", (), "not YAML", id="not YAML"),
    pytest.param({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "x"}}, (),
                 "it holds a Kubeflow PyTorchJob", id="a PyTorchJob"),
    pytest.param({"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob"}, (),
                 "it holds a Kubeflow Trainer v2 TrainJob", id="a Trainer v2 TrainJob"),
    pytest.param(tfjob(), (), "no replicas: spec.tfReplicaSpecs is empty", id="no replicas"),
    pytest.param(tfjob(Chief=replica(1), PS=replica(1)), (), "no Worker replicas", id="no workers"),
    pytest.param(tfjob(Chief=replica(1), PS=replica(1), Worker=replica(2, image="tensorflow/tensorflow:latest")), (),
                 "spec.tfReplicaSpecs.Worker.template.spec.containers[0].image 'tensorflow/tensorflow:latest' is not "
                 "pinned", id="latest image"),
    pytest.param(tfjob(Chief=replica(1), PS=replica(1), Worker=replica(2, resources={"limits": {"nvidia.com/gpu": "0.5"}})),
                 (), "resources.limits.nvidia.com/gpu is '0.5'; GPUs are whole numbers", id="half a GPU"),
    pytest.param(CHIEF_PS_WORKERS, ("--image", "tensorflow/tensorflow"), "--image tensorflow/tensorflow: tfk8s runs "
                 "images pinned", id="unpinned --image"),
    pytest.param(CHIEF_PS_WORKERS, ("--stack", "a/b"), "--stack 'a/b' is not a valid Pulumi stack name",
                 id="bad stack name"),
    pytest.param(CHIEF_PS_WORKERS, ("--nodes", "Srv_0"), "--nodes: must be a node name",
                 id="bad node name"),
])
def test_bad_input_is_refused_naming_the_field_and_writes_nothing(tmp_path, capsys, stacks_dir, manifest, flags, message):
    stack = flags[1] if flags[:1] == ("--stack",) else "imported"
    extra = flags if flags[:1] != ("--stack",) else ()
    code, out, err = run_import(tmp_path, capsys, manifest, *extra, stack=stack)
    assert code == 1
    assert message in err and "nothing written" in err, err
    assert out == ""
    assert not stacks_dir.exists() or list(stacks_dir.iterdir()) == []


def test_an_existing_stack_is_kept_unless_forced(tmp_path, capsys, stacks_dir):
    stacks_dir.mkdir()
    existing = stacks_dir / "Pulumi.imported.yaml"
    existing.write_text("config: {}\n")
    code, _, err = run_import(tmp_path, capsys, CHIEF_PS_WORKERS, "--nodes", "n1")
    assert code == 1 and "exists; give --force" in err
    assert existing.read_text() == "config: {}\n"
    code, _, _ = run_import(tmp_path, capsys, CHIEF_PS_WORKERS, "--nodes", "n1", "--force")
    assert code == 0 and "tfk8s:program" in existing.read_text()


def test_the_first_tfjob_of_a_multi_document_file_is_read_from_stdin(tmp_path, capsys, stacks_dir, monkeypatch):
    other = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}}
    second = tfjob(Chief=replica(1), PS=replica(5), Worker=replica(7))
    text = yaml.safe_dump_all([other, CHIEF_PS_WORKERS, second], sort_keys=False)
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    assert components_main(["import-tfjob", "-", "--stack", "imported", "--nodes", "n1"]) == 0
    assert written(stacks_dir)["tfk8s:cluster"]["ps"]["replicas"] == 2


def test_import_then_render_gives_pods_with_the_tfjobs_replicas_image_command_args_env_and_mounts(
    tmp_path, capsys, stacks_dir
):
    claim = {"volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "training-data"}}]}
    fields = {
        "env": [{"name": "MODEL", "value": "ctr"},
                {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "data-creds", "key": "token"}}}],
        "volumeMounts": [{"name": "data", "mountPath": "/data", "readOnly": True}],
        "workingDir": "/opt/ctr",
    }
    job = tfjob(
        Chief=replica(1, args=["--role", "chief"], pod=claim, **fields),
        PS=replica(2, pod=claim, **fields),
        Worker=replica(6, pod=claim, **fields),
    )
    code, _, err = run_import(tmp_path, capsys, job, "--nodes", "srv-00,srv-01,srv-02")
    assert code == 0, err
    stack, values = read_stack_values(str(stacks_dir / "Pulumi.imported.yaml"))
    run = run_program(stack, values)
    pods = pods_of(run)
    assert Counter(pod.labels["app.kubernetes.io/component"] for pod in pods) == {"chief": 1, "ps": 2, "worker": 6}
    config_maps = config_maps_of(run)
    for pod in pods:
        role = pod.labels["app.kubernetes.io/component"]
        tf_container = pod.container
        assert tf_container["image"] == IMAGE
        assert pod.program_argv == ["python", "train.py", *(["--role", "chief"] if role == "chief" else ["--steps", "1000"])]
        assert tf_container["workingDir"] == "/opt/ctr"
        env = pod.env(config_maps)
        assert env["MODEL"] == "ctr" and env["TOKEN"] == "<secret data-creds key token>"
        assert {"mountPath": "/data", "readOnly": True} == {
            key: mount[key] for mount in tf_container["volumeMounts"] if mount["mountPath"] == "/data"
            for key in ("mountPath", "readOnly")
        }
        claims = [v["persistentVolumeClaim"]["claimName"] for v in pod.spec["volumes"] if "persistentVolumeClaim" in v]
        assert "training-data" in claims


@pytest.mark.parametrize("job", [CHIEF_PS_WORKERS, tfjob(PS=replica(1, args=["a: b", "#x", "'q'"]), Worker=replica(2))])
def test_the_stack_file_reads_back_as_the_values_it_was_written_from(job):
    imported = carry(read_tfjob(yaml.safe_dump(job), "tfjob.yaml"), ImportOptions("imported", nodes=("n1",)))
    text = stack_yaml(imported.values, "a header\nof two lines", imported.comments)
    assert yaml.safe_load(text) == {"config": imported.values}


def test_an_imported_stack_is_a_stack_like_any_other_for_the_policy_pack_and_diff(tmp_path, capsys, stacks_dir):
    from tests.policy_harness import POLICIES, objects_of, tripped

    job = tfjob(Chief=replica(1), PS=replica(2, resources={"requests": {"cpu": "2", "memory": "8Gi"}}),
                Worker=replica(4))
    assert run_import(tmp_path, capsys, job, "--nodes", "srv-00,srv-01", stack="imported-a")[0] == 0
    job["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = 6
    assert run_import(tmp_path, capsys, job, "--nodes", "srv-00,srv-01", stack="imported-b")[0] == 0
    first, second = (str(stacks_dir / f"Pulumi.imported-{name}.yaml") for name in "ab")
    assert tripped(objects_of(run_program(*read_stack_values(first))), POLICIES) == {}
    assert components_main(["diff", first, second]) == 1
    shown = capsys.readouterr().out
    assert "workers.replicas" in shown and "4" in shown and "6" in shown, shown


def test_restart_policies_carry_and_an_omitted_one_is_tfjobs_default_never(tmp_path, capsys, stacks_dir):
    job = tfjob(Chief=replica(1, restart=None), PS=replica(1, restart="OnFailure"), Worker=replica(2, restart=None))
    job["spec"]["backoffLimit"] = 2  # an early v1 TFJob: in spec, not in spec.runPolicy
    code, _, err = run_import(tmp_path, capsys, job, "--nodes", "n1")
    assert code == 0, err
    cluster = written(stacks_dir)["tfk8s:cluster"]
    assert cluster["chief"]["restarts"] == 0 and cluster["restarts"] == 2
    assert "not carried: spec.tfReplicaSpecs.Worker.restartPolicy: Never: tfk8s restarts a failed worker alone" in err
    text = (stacks_dir / "Pulumi.imported.yaml").read_text()
    assert "# From the TFJob's Chief restartPolicy Never (TFJob's default)." in text
    assert "# From the TFJob's PS restartPolicy OnFailure and backoffLimit 2." in text


def test_a_reference_to_no_variable_a_task_has_stays_literal_as_kubernetes_passed_it(tmp_path, capsys, stacks_dir):
    args = ["--job=$(JOB)", "--hosts=$(PS_HOSTS)", "--cost=$$(5)", "--model=$(MODEL)"]
    job = tfjob(Chief=replica(1), PS=replica(1), Worker=replica(2, args=args, env=[{"name": "MODEL", "value": "ctr"}]))
    job["spec"]["tfReplicaSpecs"]["Chief"]["template"]["spec"]["containers"][0]["env"] = [{"name": "MODEL", "value": "ctr"}]
    job["spec"]["tfReplicaSpecs"]["PS"]["template"]["spec"]["containers"][0]["env"] = [{"name": "MODEL", "value": "ctr"}]
    code, _, err = run_import(tmp_path, capsys, job, "--nodes", "n1")
    assert code == 0, err
    assert written(stacks_dir)["tfk8s:program"]["args"] == ["--job=$$(JOB)", "--hosts=$(PS_HOSTS)", "--cost=$$(5)",
                                                            "--model=$(MODEL)"]
    assert err.count("names no variable a task has") == 1 and "args[0]: $(JOB)" in err, err


def test_a_role_with_another_working_directory_is_listed(tmp_path, capsys, stacks_dir):
    job = tfjob(Chief=replica(1, workingDir="/opt/chief"), PS=replica(1, workingDir="/opt/ctr"),
                Worker=replica(2, workingDir="/opt/ctr"))
    code, _, err = run_import(tmp_path, capsys, job, "--nodes", "n1")
    assert code == 0
    assert written(stacks_dir)["tfk8s:program"]["workingDir"] == "/opt/ctr"
    assert err.strip() == ("not carried: spec.tfReplicaSpecs.Chief.template.spec.containers[0].workingDir: tfk8s gives "
                           "every task the workers' working directory (/opt/ctr)")


def test_values_kubernetes_reads_as_text_are_imported_as_text(tmp_path, capsys, stacks_dir):
    """Kubernetes' YAML reader (go-yaml v2) keeps `2024-01-01` and `1:30` text, where YAML 1.1 makes a
    date and the base-60 number 90: the import reads the manifest as the TFJob's API server did."""
    job = copy.deepcopy(CHIEF_PS_WORKERS)
    job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["args"] = ["--until", "SEP"]
    text = yaml.safe_dump(job, sort_keys=False).replace("name: ctr-model", "name: 2024-01-01").replace("SEP", "1:30")
    code, out, err = run_import(tmp_path, capsys, text)
    assert code == 0, err
    assert "from TFJob '2024-01-01'" in out
    assert written(stacks_dir)["tfk8s:program"]["args"] == ["--until", "1:30"]
