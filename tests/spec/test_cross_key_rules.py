"""Keys that each take their value alone but cannot work together are refused by `plan`, in one line
that names the stack and both keys; the stack next to each (the rule's neighbour) still plans."""

from __future__ import annotations

from typing import Any, Callable

import pytest

from components.cli.main import main
from tests.stack_variants import write_variant

Edit = Callable[[dict[str, Any]], None]
STACK = "combo"
IMAGE = "tensorflow/tensorflow:2.21.0"


def chain(*edits: Edit) -> Edit:
    def edit(values: dict[str, Any]) -> None:
        for one in edits:
            one(values)

    return edit


def program(**keys: Any) -> Edit:
    """The team's program instead of tfk8s's trainer (a program sizes its own PS)."""

    def edit(values: dict[str, Any]) -> None:
        values.pop("tfk8s:trainer", None)
        values["tfk8s:program"] = {"command": ["python3", "train.py"], **keys}
        ps = values["tfk8s:cluster"]["ps"]
        if ps.get("replicas") != 0:
            ps.setdefault("memory", "4Gi")

    return edit


def cluster(**keys: Any) -> Edit:
    return lambda values: values["tfk8s:cluster"].update(keys)


def role(name: str, **keys: Any) -> Edit:
    return lambda values: values["tfk8s:cluster"].setdefault(name, {}).update(keys)


def key(name: str, value: Any) -> Edit:
    return lambda values: values.update({f"tfk8s:{name}": value})


def trainer(**keys: Any) -> Edit:
    return lambda values: values["tfk8s:trainer"].update(keys)


NO_PS = chain(lambda values: values["tfk8s:cluster"].update(ps={"replicas": 0}), program())
DURABLE = role("chief", checkpointVolume={"size": "20Gi"})


def volumes(*paths: str) -> Edit:
    return program(volumes=[{"claim": f"claim-{index}", "mountPath": path} for index, path in enumerate(paths)])


def plan(tmp_path, capsys, edit: Edit, base: str = "scene1-case2") -> tuple[int, str]:
    code = main(["plan", write_variant(tmp_path, base, STACK, edit)])
    return code, capsys.readouterr().err


REFUSED = [
    # Settings of tasks the stack does not run.
    pytest.param(
        chain(NO_PS, role("ps", replicas=0, cpu="2")),
        "tfk8s:cluster.ps.cpu is set, but tfk8s:cluster.ps runs no PS (ps.replicas: 0, or ps and ratio left out); drop ps.cpu, or give PS",
        id="ps.cpu with ps.replicas: 0",
    ),
    pytest.param(
        chain(NO_PS, role("ps", replicas=0, pool="servers")),
        "tfk8s:cluster.ps.pool is set, but tfk8s:cluster.ps runs no PS (ps.replicas: 0, or ps and ratio left out)",
        id="ps.pool with ps.replicas: 0",
    ),
    pytest.param(
        chain(NO_PS, role("ps", replicas=0, failOn=[2])),
        "tfk8s:cluster.ps.failOn is set, but tfk8s:cluster.ps runs no PS (ps.replicas: 0, or ps and ratio left out)",
        id="ps.failOn with ps.replicas: 0",
    ),
    pytest.param(
        chain(NO_PS, role("ps", replicas=0, tolerations=[{"key": "dedicated", "operator": "Exists"}])),
        "tfk8s:cluster.ps.tolerations is set, but tfk8s:cluster.ps runs no PS (ps.replicas: 0, or ps and ratio left out)",
        id="ps.tolerations with ps.replicas: 0",
    ),
    pytest.param(
        chain(role("ps", replicas=0), program(roles={"ps": {"args": ["--ps"]}})),
        "tfk8s:program.roles.ps is set, but tfk8s:cluster.ps runs no PS (ps.replicas: 0, or ps and ratio left out); drop roles.ps",
        id="program.roles.ps without PS",
    ),
    pytest.param(
        program(roles={"evaluator": {"args": ["--eval"]}}),
        "tfk8s:program.roles.evaluator is set, but tfk8s:cluster.evaluator is not set, so no evaluator runs; "
        "drop roles.evaluator, or add cluster.evaluator: {} to run one",
        id="program.roles.evaluator without an evaluator",
    ),
    pytest.param(
        chain(program(roles={"evaluator": {"args": ["--eval"]}}), role("evaluator", replicas=0)),
        "tfk8s:program.roles.evaluator is set, but tfk8s:cluster.evaluator is replicas: 0, so no evaluator runs",
        id="program.roles.evaluator with evaluator replicas: 0",
    ),
    pytest.param(
        chain(DURABLE, role("evaluator", replicas=0, cpu="2")),
        "tfk8s:cluster.evaluator.cpu is set, but tfk8s:cluster.evaluator.replicas is 0 (no evaluator runs)",
        id="evaluator.cpu with evaluator replicas: 0",
    ),
    pytest.param(
        cluster(gpuImage=f"{IMAGE}-gpu"),
        "tfk8s:cluster.gpuImage is the image of GPU workers, and tfk8s:cluster.workers.gpus is 0, so no task runs "
        f"'{IMAGE}-gpu'",
        id="gpuImage without GPU workers",
    ),
    # A done rule the workload cannot honour.
    pytest.param(
        chain(program(done="workers"), cluster(workload="statefulset")),
        "tfk8s:program.done: workers needs tfk8s:cluster.workload: jobset (a StatefulSet's workers serve until "
        "the experiment is destroyed, they never finish)",
        id="done: workers with a StatefulSet",
    ),
    # A program volume where tfk8s mounts something itself.
    pytest.param(
        chain(volumes("/checkpoints"), DURABLE),
        "tfk8s:program.volumes[0].mountPath: '/checkpoints' is /checkpoints, which tfk8s mounts itself "
        "(tfk8s:cluster.chief.checkpointVolume)",
        id="volume on the checkpoint folder",
    ),
    pytest.param(
        chain(volumes("/checkpoints/data"), DURABLE),
        "tfk8s:program.volumes[0].mountPath: '/checkpoints/data' is under /checkpoints, which tfk8s mounts itself",
        id="volume under the checkpoint folder",
    ),
    pytest.param(
        chain(volumes("/opt"), key("logs", {})),
        "tfk8s:program.volumes[0].mountPath: '/opt' holds /opt/tfk8s-logs, which tfk8s mounts itself (the log "
        "shipper's, with tfk8s:logs)",
        id="volume above the log shell's folder",
    ),
    pytest.param(
        chain(volumes("/opt/tfk8s-logs"), key("logs", {})),
        "tfk8s:program.volumes[0].mountPath: '/opt/tfk8s-logs' is /opt/tfk8s-logs, which tfk8s mounts itself",
        id="volume on the log shell's folder",
    ),
    pytest.param(
        volumes("//tmp"),
        "tfk8s:program.volumes[0].mountPath: '//tmp' (that is /tmp) is /tmp, which tfk8s mounts itself",
        id="volume on /tmp written with two slashes",
    ),
    pytest.param(
        volumes("/data/../scratch"),
        "tfk8s:program.volumes[0].mountPath: '/data/../scratch' (that is /scratch) is /scratch",
        id="volume on the scratch folder through '..'",
    ),
    pytest.param(
        volumes("//"),
        "tfk8s:program.volumes[0].mountPath: '//' (that is /) is the container's root",
        id="volume on the root",
    ),
    pytest.param(
        volumes("/data", "/data/"),
        "tfk8s:program.volumes[1].mountPath: '/data/' (that is /data) is where program.volumes[0] is mounted too",
        id="two volumes at one path",
    ),
    # TensorBoard's folder: one it can read.
    pytest.param(
        chain(DURABLE, key("tensorboard", {"image": IMAGE, "logDir": "https://storage.example.com/runs"})),
        "tfk8s:tensorboard.logDir: 'https://storage.example.com/runs' names https://, which TensorBoard cannot "
        "read; it reads gs://, s3://, hdfs:// URLs and folders under /checkpoints",
        id="logDir of an unsupported scheme",
    ),
    pytest.param(
        key("tensorboard", {"image": IMAGE, "logDir": "gs:///runs"}),
        "tfk8s:tensorboard.logDir: 'gs:///runs' names no bucket (gs://<bucket>/<folder>)",
        id="logDir without a bucket",
    ),
    pytest.param(
        key("tensorboard", {"image": IMAGE, "logDir": "gs://team-runs/exp\n"}),
        "tfk8s:tensorboard.logDir: 'gs://team-runs/exp\\n' has a control character ('\\n')",
        id="logDir with a newline",
    ),
    pytest.param(
        key("tensorboard", {"image": IMAGE, "logDir": "s3://team-runs/exp "}),
        "tfk8s:tensorboard.logDir: 's3://team-runs/exp ' starts or ends with a space",
        id="logDir with a trailing space",
    ),
    pytest.param(
        chain(key("tensorboard", {"image": IMAGE}), trainer(checkpointDir="ftp://files.example.com/ckpt")),
        "tfk8s:tensorboard.logDir (left out: the tensorboard folder of tfk8s:trainer.checkpointDir): "
        "'ftp://files.example.com/ckpt/tensorboard' names ftp://, which TensorBoard cannot read",
        id="logDir left to a checkpointDir TensorBoard cannot read",
    ),
    pytest.param(
        chain(program(done="workers"), key("tensorboard", {"image": IMAGE})),
        "tfk8s:tensorboard with tfk8s:program.done: workers: there is no chief task, so no "
        "tfk8s:cluster.chief.checkpointVolume for TensorBoard to read; give a remote tfk8s:tensorboard.logDir",
        id="TensorBoard with done: workers and no remote logDir",
    ),
    # Storage URLs that name no place.
    pytest.param(
        trainer(checkpointDir="gs://"),
        "tfk8s:trainer.checkpointDir: 'gs://' names no bucket (gs://<bucket>/<folder>)",
        id="checkpointDir without a bucket",
    ),
    pytest.param(
        trainer(data="gs://team-data/train-*\n"),
        "tfk8s:trainer.data: 'gs://team-data/train-*\\n' has a control character ('\\n')",
        id="data with a newline",
    ),
]


@pytest.mark.parametrize("edit, message", REFUSED)
def test_keys_that_cannot_work_together_are_refused_naming_both(edit, message, tmp_path, capsys):
    code, err = plan(tmp_path, capsys, edit)
    assert code == 2, err
    assert err.startswith(f"stack '{STACK}' has an invalid configuration:\n"), err
    assert [line for line in err.splitlines() if message in line], err
    assert "Traceback" not in err


NEIGHBOURS = [
    pytest.param(NO_PS, id="workers only, no PS settings"),
    pytest.param(chain(program(roles={"ps": {"args": ["--ps"]}})), id="program.roles.ps with PS"),
    pytest.param(
        chain(program(roles={"evaluator": {"args": ["--eval"]}}), role("evaluator")), id="roles.evaluator with one"
    ),
    pytest.param(chain(DURABLE, role("evaluator", replicas=0)), id="evaluator replicas: 0 alone"),
    pytest.param(chain(program(done="workers")), id="done: workers with a JobSet"),
    pytest.param(chain(volumes("/data", "/models"), DURABLE, key("logs", {})), id="volumes apart from tfk8s's"),
    pytest.param(chain(volumes("/opt")), id="volume at /opt without logs"),
    pytest.param(key("tensorboard", {"image": IMAGE, "logDir": "gs://team-runs/exp"}), id="logDir in a bucket"),
    pytest.param(key("tensorboard", {"image": IMAGE, "logDir": "hdfs:///runs/exp"}), id="logDir on HDFS"),
    pytest.param(chain(key("tensorboard", {"image": IMAGE}), trainer(checkpointDir="s3://team/ckpt")), id="s3"),
]


@pytest.mark.parametrize("edit", NEIGHBOURS)
def test_the_stack_next_to_each_rule_plans(edit, tmp_path, capsys):
    code, err = plan(tmp_path, capsys, edit)
    assert code == 0, err
