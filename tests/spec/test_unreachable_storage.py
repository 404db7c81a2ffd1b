"""A stack whose egress never lets its tasks reach the remote storage it names is warned about, naming
the stack, the storage's key and cluster.egress; one whose egress reaches it, or leaves egress open,
is not."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from components.spec.loading import load_stack_config
from components.spec.reach_rules import stack_warnings
from components.spec.stack_files import read_stack_values
from tests.runs import SHIPPED_STACKS
from tests.spec.test_cross_key_rules import IMAGE, Edit, chain, cluster, key, program, trainer

STACK = "scene1-case2"
HTTPS_OUT = {"cidr": "0.0.0.0/0", "ports": [443]}
HDFS = {"cidr": "10.20.0.0/16", "ports": [8020, 9866]}


def warnings_of(edit: Edit) -> list[str]:
    _, values = read_stack_values(STACK)
    values = copy.deepcopy(values)
    edit(values)
    return stack_warnings(load_stack_config(STACK, values))


def egress(*rules: dict[str, Any]) -> Edit:
    return cluster(egress=list(rules))


CLOSED = "tfk8s:cluster.egress is [] (the tasks reach only each other and DNS)"

WARNED = [
    pytest.param(
        chain(egress(), trainer(checkpointDir="gs://team/ckpt")),
        f"stack '{STACK}': tfk8s:trainer.checkpointDir names 'gs://team/ckpt', remote storage, and {CLOSED}, so the "
        "chief can never save a checkpoint there; list its addresses in cluster.egress (docs/network.md), or leave "
        "egress out",
        id="checkpoints in a bucket behind egress: []",
    ),
    pytest.param(
        chain(egress(), trainer(data="hdfs://namenode.corp/train/*.tfrecord")),
        f"tfk8s:trainer.data names 'hdfs://namenode.corp/train/*.tfrecord', remote storage, and {CLOSED}, so the "
        "workers can never read their data",
        id="data on HDFS behind egress: []",
    ),
    pytest.param(
        chain(egress(), key("tensorboard", {"image": IMAGE, "logDir": "s3://team/runs"})),
        f"tfk8s:tensorboard.logDir names 's3://team/runs', remote storage, and {CLOSED}, so the tasks can never "
        "write TensorBoard's event files there",
        id="TensorBoard's folder in a bucket behind egress: []",
    ),
    pytest.param(
        chain(egress(HDFS), trainer(checkpointDir="gs://team/ckpt")),
        "tfk8s:trainer.checkpointDir names 'gs://team/ckpt', remote storage, and tfk8s:cluster.egress lists no rule "
        "for TCP port 443",
        id="a bucket with egress to HDFS only",
    ),
    pytest.param(
        chain(egress(HTTPS_OUT), trainer(data="hdfs://10.30.0.4:9000/train")),
        "tfk8s:trainer.data names 'hdfs://10.30.0.4:9000/train', remote storage, and tfk8s:cluster.egress lists no "
        "rule for TCP port 9000 to 10.30.0.4",
        id="a NameNode's port the list lacks",
    ),
    pytest.param(
        chain(egress({"cidr": "10.20.0.0/16"}), trainer(data="hdfs://10.30.0.4/train")),
        "lists no rule for TCP port 8020 to 10.30.0.4",
        id="a NameNode's address the list lacks",
    ),
    pytest.param(
        chain(egress({"cidr": "0.0.0.0/0", "protocol": "UDP"}), trainer(checkpointDir="gs://team/ckpt")),
        "lists no rule for TCP port 443",
        id="UDP only",
    ),
    pytest.param(
        chain(egress(), program(args=["--train=gs://team/train-*", "--model_dir", "s3://team/model"])),
        f"tfk8s:program.args[0] names 'gs://team/train-*', remote storage, and {CLOSED}, so the program's tasks can "
        "never reach it",
        id="a program's argument",
    ),
    pytest.param(
        chain(egress(), program(env={"MODEL_DIR": "hdfs://namenode:8020/model"})),
        "tfk8s:program.env.MODEL_DIR names 'hdfs://namenode:8020/model'",
        id="a program's env value",
    ),
]


@pytest.mark.parametrize("edit, warning", WARNED)
def test_remote_storage_behind_egress_that_never_reaches_it_is_warned_about(edit, warning):
    found = warnings_of(edit)
    assert [line for line in found if warning in line], found
    assert all(line.startswith(f"stack '{STACK}': tfk8s:") for line in found), found


def test_each_unreachable_place_is_one_warning():
    edit = chain(egress(), program(args=["--train=gs://team/train-*", "--model_dir", "s3://team/model"]))
    assert [line.split(" names ")[0] for line in warnings_of(edit)] == [
        f"stack '{STACK}': tfk8s:program.args[0]",
        f"stack '{STACK}': tfk8s:program.args[2]",
    ]


QUIET = [
    pytest.param(trainer(checkpointDir="gs://team/ckpt"), id="egress left out: open"),
    pytest.param(chain(egress(HTTPS_OUT), trainer(checkpointDir="gs://team/ckpt")), id="HTTPS listed"),
    pytest.param(chain(egress({"cidr": "10.30.4.0/24"}), trainer(checkpointDir="s3://team/ckpt")), id="every port"),
    pytest.param(chain(egress(HDFS), trainer(data="hdfs://10.20.1.5/train")), id="the NameNode listed"),
    pytest.param(chain(egress(HDFS), trainer(data="hdfs://namenode.corp/train")), id="a NameNode by name"),
    pytest.param(chain(egress(), trainer(data="synthetic")), id="nothing remote"),
    pytest.param(
        chain(egress(), cluster(chief={"checkpointVolume": {"size": "20Gi"}}), key("tensorboard", {"image": IMAGE})),
        id="TensorBoard on the checkpoint volume",
    ),
    pytest.param(chain(egress(HTTPS_OUT), program(args=["--data=gs://team/train"])), id="a program's bucket listed"),
]


@pytest.mark.parametrize("edit", QUIET)
def test_a_stack_whose_egress_reaches_its_storage_is_not_warned_about(edit):
    assert warnings_of(edit) == []


@pytest.mark.parametrize("stack", SHIPPED_STACKS)
def test_the_shipped_stacks_have_no_warning(stack):
    assert stack_warnings(load_stack_config(stack, read_stack_values(stack)[1])) == []


def test_plan_and_render_print_the_warning_and_still_succeed(tmp_path, capsys):
    """The warning reaches the user where they look before `pulumi up`: plan and render say it on
    stderr, and do what they were asked (exit 0)."""
    from components.cli.main import main

    _, values = read_stack_values(STACK)
    values = copy.deepcopy(values)
    chain(egress(), trainer(checkpointDir="gs://team/ckpt"))(values)
    stack_file = tmp_path / f"Pulumi.{STACK}.yaml"
    stack_file.write_text(yaml.safe_dump({"config": values}))
    for command in (["plan", str(stack_file)], ["render", str(stack_file), "--out", str(tmp_path / "out")]):
        assert main(command) == 0
        said = capsys.readouterr()
        assert f"warning: stack '{STACK}': tfk8s:trainer.checkpointDir names 'gs://team/ckpt'" in said.err, command
    assert main(["plan", STACK]) == 0
    assert "warning" not in capsys.readouterr().err
