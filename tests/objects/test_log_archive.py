"""`tfk8s:logs` under mocks: what a user checks in a preview or `render`: one collector beside the
tasks, reachable from the experiment's tasks only, keeping a bounded archive; every task's program
started with its output through the shipper, named as `status` names the task; nothing of it
without the key; and a stack whose logs it cannot keep refused naming the field."""

from __future__ import annotations

import copy
import json

import pulumi
import pytest

from components.objects.task_shell import LOG_FORWARDER, SIGNAL_FORWARDER
from components.spec.logs import INGEST_PORT, KEPT_RUNS
from components.spec.stack_files import PROJECT_ROOT, read_stack_values
from components.spec.trainer_contract import PROGRAM, SETTINGS_ENV, TRAINER_COMMAND, TRAINER_PROGRAM
from tests.harness import reset_pulumi, run_program
from tests.objects.test_program import TF2_SOURCE, program_values
from tests.pods import config_maps_of, pods_of
from tests.policy_harness import objects_of, tripped
from trainer import log_protocol


@pytest.fixture(autouse=True)
def _reset():
    yield
    reset_pulumi()


def _values(logs, stack="scene1-case1", **cluster):
    name, values = read_stack_values(stack)
    values = copy.deepcopy(values)
    values["tfk8s:cluster"].update(cluster)
    if logs is not None:
        values["tfk8s:logs"] = logs
    return name, values


def _named(run, kind: str, name: str) -> dict:
    (found,) = [r.manifest for r in run.of_kind(kind) if r.manifest["metadata"]["name"] == name]
    return found


def _collector_pod(run) -> dict:
    return _named(run, "Deployment", "tfk8s-logs")["spec"]["template"]["spec"]


def test_every_task_sends_its_log_as_status_names_it_to_the_one_collector():
    run = run_program(*_values({}))
    config_maps = config_maps_of(run)
    pods = pods_of(run)
    assert {pod.task for pod in pods} == {"chief-0", "ps-0", *(f"worker-{i}" for i in range(10))}
    for pod in pods:
        env = pod.env(config_maps)
        assert f"{env['TFK8S_LOG_TASK_TYPE']}-{env['TFK8S_LOG_TASK_INDEX']}" == pod.task
        assert env["TFK8S_POD_NAME"] == pod.name
        assert env["TFK8S_LOG_COLLECTOR"] == f"tfk8s-logs.tf-scene1-case1.svc:{INGEST_PORT}"
        command = pod.container["command"]
        assert command[:3] == ["/bin/sh", "-c", LOG_FORWARDER], "the program's output goes through the shipper"
        assert pod.program_argv == list(TRAINER_COMMAND)
        assert pod.labels[PROGRAM] == TRAINER_PROGRAM, "the mark the policy pack knows the trainer by"
        assert pod.mounted_file("/opt/tfk8s-logs/log_shipper.py", config_maps).startswith('"""')
    service = _named(run, "Service", "tfk8s-logs")["spec"]
    assert service["clusterIP"] == "None" and service["ports"][0]["port"] == INGEST_PORT
    code = _named(run, "ConfigMap", "tfk8s-logs")["data"]
    assert code == {name: (PROJECT_ROOT / "trainer" / name).read_text() for name in log_protocol.ARCHIVE_FILES}
    objects = objects_of(run)
    assert not tripped(objects), "the pack's mandatory policies pass"
    # And they judge this experiment: behind the log shell the pack still knows tfk8s's trainer (by its
    # pods' mark), so a worker given other trainer settings than the chief is refused.
    settings = json.loads(config_maps["tfk8s-trainer-env"][SETTINGS_ENV])
    (jobset,) = [o for o in objects if o.kind == "JobSet"]
    (worker,) = [job for job in jobset.props["spec"]["replicatedJobs"] if job["name"] == "worker"]
    (container,) = worker["template"]["spec"]["template"]["spec"]["containers"]
    container["env"].append({"name": SETTINGS_ENV, "value": json.dumps(settings | {"partition": "range"})})
    assert list(tripped(objects)) == ["tfk8s-embedding-shards-match-ps"]


def test_the_archive_is_bounded_by_size_and_kept_in_the_collectors_own_volume():
    run = run_program(*_values({"size": "2Gi"}))
    spec = _collector_pod(run)
    (container,) = spec["containers"]
    argv = container["command"]
    run_bytes, keep = int(argv[argv.index("--run-bytes") + 1]), int(argv[argv.index("--keep-runs") + 1])
    assert keep == KEPT_RUNS, "the collector keeps the runs `logs --previous` and the size's description count on"
    tasks = len(pods_of(run))
    assert run_bytes * tasks * keep <= 2 * 2**30, "every task's kept runs fit the size"
    assert run_bytes * tasks * keep >= 0.8 * 2 * 2**30
    (archive,) = [v for v in spec["volumes"] if v["name"] == "archive"]
    assert archive["emptyDir"] == {"sizeLimit": "2Gi"}

    run = run_program(*_values({"size": "2Gi", "storageClass": "fast-ssd"}))
    claim = _named(run, "PersistentVolumeClaim", "tfk8s-logs")["spec"]
    assert claim["storageClassName"] == "fast-ssd" and claim["resources"]["requests"]["storage"] == "2Gi"
    spec = _collector_pod(run)
    (archive,) = [v for v in spec["volumes"] if v["name"] == "archive"]
    assert archive == {"name": "archive", "persistentVolumeClaim": {"claimName": "tfk8s-logs"}}
    assert spec["securityContext"]["fsGroup"] == 1000, "the unprivileged collector writes its claim"


def test_only_the_experiments_tasks_reach_the_collector_which_connects_nowhere_and_is_no_task():
    run = run_program(*_values({}))
    labels = _named(run, "Deployment", "tfk8s-logs")["spec"]["template"]["metadata"]["labels"]
    policies = {r.manifest["metadata"]["name"]: r.manifest["spec"] for r in run.of_kind("NetworkPolicy")}
    grpc = policies["tf-grpc-from-experiment-only"]["podSelector"]["matchLabels"]
    assert not grpc.items() <= labels.items(), "the gRPC port's policy neither admits nor governs the collector"
    own = policies["tfk8s-logs"]
    assert own["podSelector"]["matchLabels"] == labels
    assert own["ingress"] == [
        {"from": [{"podSelector": {"matchLabels": grpc}}], "ports": [{"protocol": "TCP", "port": INGEST_PORT}]}
    ]
    assert own["policyTypes"] == ["Ingress", "Egress"] and "egress" not in own, "a type without rules admits nothing"


def test_a_stack_with_egress_lets_its_tasks_reach_the_collector():
    run = run_program(*_values({}, egress=[{"cidr": "10.20.0.0/16", "ports": [9000]}]))
    labels = _named(run, "Deployment", "tfk8s-logs")["spec"]["template"]["metadata"]["labels"]
    egress = _named(run, "NetworkPolicy", "tf-egress-to-listed-only")["spec"]["egress"]
    assert {"to": [{"podSelector": {"matchLabels": labels}}], "ports": [{"protocol": "TCP", "port": INGEST_PORT}]} in egress


def test_a_programs_command_is_started_through_the_shipper_with_its_own_arguments():
    program = {"source": TF2_SOURCE, "command": ["python", "train.py"], "args": ["--steps", "$(TASK_INDEX)"]}
    name, values = program_values(program)
    values["tfk8s:logs"] = {}
    run = run_program(name, values)
    for pod in pods_of(run):
        assert pod.container["command"][2] == LOG_FORWARDER
        assert pod.program_argv == ["python", "train.py", "--steps", "$(TASK_INDEX)"]
        assert PROGRAM not in pod.labels, "a team's program is not tfk8s's trainer to the policy pack"
    assert "$(" not in LOG_FORWARDER and "$$" not in LOG_FORWARDER, "the kubelet would expand them"


def test_without_logs_nothing_of_it_is_created_and_the_tasks_are_unchanged():
    run = run_program(*_values(None))
    assert not run.of_kind("Deployment")
    assert not [r for r in run.of_kind("ConfigMap") if r.manifest["metadata"]["name"] == "tfk8s-logs"]
    for pod in pods_of(run):
        assert pod.container["command"] == list(TRAINER_COMMAND)
        assert not [e for e in pod.container["env"] if e["name"].startswith("TFK8S_LOG")]
    name, values = program_values({"source": TF2_SOURCE, "command": ["python", "train.py"]})
    for pod in pods_of(run_program(name, values)):
        assert pod.container["command"][2] == SIGNAL_FORWARDER


def test_in_a_teams_namespace_its_objects_carry_the_stacks_name():
    name, values = _values({}, namespace={"name": "ranking", "existing": True})
    run = run_program(name, values)
    assert _named(run, "Deployment", f"{name}-tfk8s-logs")
    env = config_maps_of(run)[f"{name}-tfk8s-trainer-env"]
    assert env["TFK8S_LOG_COLLECTOR"] == f"{name}-tfk8s-logs.ranking.svc:{INGEST_PORT}"


@pytest.mark.parametrize(
    "logs, program, field, says",
    [
        ({"size": "1Mi"}, None, "tfk8s:logs.size", "give at least"),
        ({"size": "lots"}, None, "tfk8s:logs.size", "quantity"),
        ({"storageClass": "Fast SSD"}, None, "tfk8s:logs.storageClass", "a StorageClass's name"),
        ({"keep": "forever"}, None, "tfk8s:logs.keep", "unknown key"),
        ({}, {"source": TF2_SOURCE}, "tfk8s:logs", "program.command"),
        (True, None, "tfk8s:logs", "mapping"),
    ],
)
def test_a_stack_whose_logs_cannot_be_kept_is_refused_naming_the_field(logs, program, field, says):
    if program is None:
        name, values = _values(logs)
    else:
        name, values = program_values(program)
        values["tfk8s:logs"] = logs
    with pytest.raises(pulumi.RunError) as error:
        run_program(name, values)
    message = str(error.value).lower()
    assert field.lower() in message and says.lower() in message, message
