"""The library's public constructors as a platform team's program calls them: an argument of the wrong
type is a TypeError naming the constructor, the argument, what it takes and what was given, before
anything registers; `project_root` takes any path-like; and what a pulumi Output resolves to is
checked as the same value given plain is, failing the resources that hold it with the same message."""

from __future__ import annotations

import gc
import re
from pathlib import Path

import pytest

from components.resources.inputs import ResolvedInputError
from components.spec.models import StackConfigError
from tests.harness import RecordingMonitor, reset_pulumi, run_program

POOLS = "[{'name': 'servers', 'nodes': ['srv-00', 'srv-01']}]"
CLUSTER = (
    "{'placement': 'colocated', 'ps': {'replicas': 2, 'pool': 'servers', 'memory': '4Gi'}, "
    "'workers': {'replicas': 4, 'pool': 'servers'}}"
)
ARGS = f"TFExperimentArgs(node_pools={POOLS}, cluster={CLUSTER})"
PROGRAM = "{'command': ['python', 'train.py'], 'env': ENV}"


def _write(tmp_path: Path, body: str) -> Path:
    program = tmp_path / "__main__.py"
    program.write_text(
        "import pathlib\n"
        "import pulumi\n"
        "from components.tf_experiment import TFExperiment, TFExperimentArgs\n"
        "from components.resources.node_pool import NodePool, NodePoolArgs\n"
        "from components.resources.tf_cluster import TFCluster, TFClusterArgs\n"
        f"{body}\n"
    )
    return program


def _refused(tmp_path: Path, body: str, error: type[Exception]) -> str:
    monitor = RecordingMonitor()
    with pytest.raises(error) as raised:
        run_program("dev", {}, monitor=monitor, program=_write(tmp_path, body))
    assert monitor.registrations == [], "a refused argument registers nothing"
    return str(raised.value)


@pytest.mark.parametrize(
    "body, message",
    [
        pytest.param(
            f"TFExperiment(5, {ARGS})",
            "TFExperiment: name takes a str (the resource's name, e.g. 'ranking'), not int 5",
            id="name a number",
        ),
        pytest.param(
            f"TFExperiment(None, {ARGS})",
            "TFExperiment: name takes a str (the resource's name, e.g. 'ranking'), not NoneType None",
            id="name None",
        ),
        pytest.param(
            f"TFExperiment('ranking', {{'node_pools': {POOLS}, 'cluster': {CLUSTER}}})",
            "TFExperiment: args takes a TFExperimentArgs, not dict {'node_pools': ",
            id="args a dict",
        ),
        pytest.param(
            f"TFExperiment('ranking', {ARGS}, {{'protect': True}})",
            "TFExperiment: opts takes a pulumi.ResourceOptions or None, not dict {'protect': True}",
            id="opts a dict",
        ),
        pytest.param(
            f"TFExperimentArgs(node_pools={POOLS}[0], cluster={CLUSTER})",
            "TFExperimentArgs: node_pools takes a list of NodePoolSpec or mappings (tfk8s:nodePools), not dict",
            id="node_pools one pool, not a list",
        ),
        pytest.param(
            f"TFExperimentArgs(node_pools='servers', cluster={CLUSTER})",
            "TFExperimentArgs: node_pools takes a list of NodePoolSpec or mappings (tfk8s:nodePools), not str "
            "'servers'",
            id="node_pools a str",
        ),
        pytest.param(
            f"TFExperimentArgs(node_pools=['servers'], cluster={CLUSTER})",
            "TFExperimentArgs: node_pools[0] takes a NodePoolSpec or a mapping of a pool's keys, not str 'servers'",
            id="a pool a str",
        ),
        pytest.param(
            f"TFExperimentArgs(node_pools={POOLS}, cluster='colocated')",
            "TFExperimentArgs: cluster takes a ClusterSpec or a mapping of tfk8s:cluster's keys, not str 'colocated'",
            id="cluster a str",
        ),
        pytest.param(
            f"TFExperimentArgs(node_pools={POOLS}, cluster=pulumi.Output.from_input({CLUSTER}))",
            "TFExperimentArgs: cluster takes a ClusterSpec or a mapping of tfk8s:cluster's keys, not a pulumi "
            "Output: the plan is decided and checked before anything is registered",
            id="cluster an Output",
        ),
        pytest.param(
            f"TFExperimentArgs(node_pools={POOLS}, cluster={CLUSTER}, trainer=None)",
            "TFExperimentArgs: trainer takes a TrainerSettings or a mapping of tfk8s:trainer's keys, not NoneType",
            id="trainer None",
        ),
        pytest.param(
            f"TFExperimentArgs(node_pools={POOLS}, cluster={CLUSTER}, program='train.py')",
            "TFExperimentArgs: program takes a ProgramSpec or a mapping of tfk8s:program's keys (or None), not str "
            "'train.py'",
            id="program a str",
        ),
        pytest.param(
            f"TFExperimentArgs(node_pools={POOLS}, cluster={CLUSTER}, logs=True)",
            "TFExperimentArgs: logs takes a LogsSpec or a mapping of tfk8s:logs's keys (or None), not bool True",
            id="logs True",
        ),
        pytest.param(
            f"TFExperimentArgs(node_pools={POOLS}, cluster={CLUSTER}, tensorboard=['gs://b/logs'])",
            "TFExperimentArgs: tensorboard takes a TensorBoardSpec or a mapping of tfk8s:tensorboard's keys (or "
            "None), not list ['gs://b/logs']",
            id="tensorboard a list",
        ),
        pytest.param(
            f"TFExperimentArgs(node_pools={POOLS}, cluster={CLUSTER}, project_root=5)",
            "TFExperimentArgs: project_root takes a path (a str or an os.PathLike, such as pathlib.Path) or None, "
            "not int 5",
            id="project_root a number",
        ),
        pytest.param(
            f"TFExperimentArgs(node_pools={POOLS}, cluster={CLUSTER}, project_root=b'/srv/team')",
            "TFExperimentArgs: project_root takes a path (a str or an os.PathLike, such as pathlib.Path) or None, "
            "not bytes b'/srv/team'",
            id="project_root bytes",
        ),
        pytest.param(
            "NodePool('ranking-pool', {'experiment': None})",
            "NodePool: args takes a NodePoolArgs, not dict {'experiment': None}",
            id="NodePool args a dict",
        ),
        pytest.param(
            "NodePoolArgs(experiment='ranking', pool=None)",
            "NodePoolArgs: experiment takes an Experiment (a TFExperiment's experiment), not str 'ranking'",
            id="NodePoolArgs experiment a str",
        ),
        pytest.param(
            "TFCluster(7, None)",
            "TFCluster: name takes a str (the resource's name, e.g. 'ranking'), not int 7",
            id="TFCluster name a number",
        ),
        pytest.param(
            f"TFClusterArgs(TFExperiment('ranking', {ARGS}).experiment, server_labels=['srv-00'])",
            "TFClusterArgs: server_labels takes a mapping of names to pulumi Resources, not list ['srv-00']",
            id="TFClusterArgs server_labels a list",
        ),
        pytest.param(
            "from components.program import build\nbuild('dev', 'tfk8s:cluster')",
            "build: values takes a mapping of the stack's tfk8s:* values, not str 'tfk8s:cluster'",
            id="the stack program's build with values a str",
        ),
    ],
)
def test_an_argument_of_the_wrong_type_is_a_type_error_naming_it(tmp_path, body, message):
    if body.startswith("TFExperimentArgs("):
        body = f"TFExperiment('ranking', {body})"
    monitor = RecordingMonitor()
    with pytest.raises(TypeError) as raised:
        run_program("dev", {}, monitor=monitor, program=_write(tmp_path, body))
    assert str(raised.value).startswith(message), str(raised.value)
    if "TFClusterArgs" not in body:
        assert monitor.registrations == [], "a refused argument registers nothing"


# A path-like of a team's own, neither str nor pathlib.Path.
TEAM_FOLDER = """
class TeamFolder:
    def __init__(self, path):
        self.path = path
    def __fspath__(self):
        return self.path
"""


@pytest.mark.parametrize(
    "as_given",
    ["{!r}", "TeamFolder({!r})", "pathlib.Path({!r})"],
    ids=["str", "os.PathLike", "pathlib.Path"],
)
def test_project_root_takes_any_path_like(tmp_path, as_given):
    project = tmp_path / "team"
    (project / "ranking").mkdir(parents=True)
    (project / "ranking" / "train.py").write_text("print('training')\n")
    program = _write(
        tmp_path,
        f"{TEAM_FOLDER}\n"
        f"TFExperiment('ranking', TFExperimentArgs(node_pools={POOLS}, cluster={CLUSTER},\n"
        "    program={'source': 'ranking', 'command': ['python', 'train.py']}, "
        f"project_root={as_given.format(str(project))}))",
    )
    run = run_program("dev", {}, program=program)
    shipped = [r for r in run.of_kind("ConfigMap") if "training" in r.wire_text]
    assert shipped, "the program's source, read from project_root, reaches a ConfigMap"


def test_an_empty_project_root_is_refused_not_read_as_the_working_directory(tmp_path):
    message = _refused(
        tmp_path,
        f"TFExperiment('ranking', TFExperimentArgs(node_pools={POOLS}, cluster={CLUSTER}, project_root=''))",
        ValueError,
    )
    assert message.startswith("TFExperimentArgs: project_root is empty; give the folder program.source is read from")


@pytest.fixture(autouse=True)
def _collect_failed_registrations():
    yield
    # A failed run's futures (each resource that held the refused value) are collected here, once the
    # runtime lets go of them: collected in the middle of a later compile, the logging of their unread
    # errors makes CPython 3.11 raise SystemError (AST constructor recursion depth mismatch).
    reset_pulumi()
    gc.collect()


def _resolved_error(body: str, tmp_path: Path) -> str:
    """The message the program fails with once its Outputs resolve."""
    with pytest.raises(ResolvedInputError) as resolved:
        run_program("dev", {}, program=_write(tmp_path, body))
    return str(resolved.value)


def _plain_and_resolved(tmp_path: Path, template: str, value: str) -> tuple[str, str]:
    """The message `value` gets given plain, and given as an Output that resolves to it."""
    plain = _refused(tmp_path, template.replace("VALUE", value), StackConfigError)
    return plain, _resolved_error(template.replace("VALUE", f"pulumi.Output.from_input({value})"), tmp_path)


@pytest.mark.parametrize(
    "template, value, field",
    [
        pytest.param(
            "TFExperiment('ranking', TFExperimentArgs(node_pools=[{'name': 'servers', 'nodes': [VALUE, 'srv-01']}], "
            f"cluster={CLUSTER}))",
            "'Bad Node!'",
            "tfk8s:nodePools[0].nodes[0]",
            id="a node name that is no node name",
        ),
        pytest.param(
            f"ENV = {{'LEVEL': VALUE}}\n"
            f"TFExperiment('ranking', TFExperimentArgs(node_pools={POOLS}, cluster={CLUSTER}, program={PROGRAM}))",
            "5",
            "tfk8s:program.env.LEVEL",
            id="an env value that is a number",
        ),
        pytest.param(
            f"TFExperiment('ranking', TFExperimentArgs(node_pools={POOLS}, cluster={{**{CLUSTER}, 'image': VALUE}}))",
            "'registry.example/ranking:latest'",
            "tfk8s:cluster.image",
            id="an image that is not pinned",
        ),
        pytest.param(
            "ENV = {'DB': {'secret': VALUE, 'key': 'password'}}\n"
            f"TFExperiment('ranking', TFExperimentArgs(node_pools={POOLS}, cluster={CLUSTER}, program={PROGRAM}))",
            "'Warehouse_Creds'",
            "tfk8s:program.env.DB.secret",
            id="a Secret's name that is no Secret's name",
        ),
    ],
)
def test_what_an_output_resolves_to_is_refused_with_the_message_the_plain_value_gets(tmp_path, template, value, field):
    plain, resolved = _plain_and_resolved(tmp_path, template, value)
    assert f"  - {field}: " in plain
    assert resolved == plain


def test_a_secret_outputs_refused_value_is_never_shown(tmp_path):
    body = (
        "ENV = {'TOKEN': pulumi.Output.secret(48213579)}\n"
        f"TFExperiment('ranking', TFExperimentArgs(node_pools={POOLS}, cluster={CLUSTER}, program={PROGRAM}))"
    )
    message = _resolved_error(body, tmp_path)
    assert "tfk8s:program.env.TOKEN: " in message and "[secret]" in message
    assert "48213579" not in message


def test_a_secret_output_where_no_secret_may_be_is_refused_as_a_secret_value_set_there_is(tmp_path):
    body = (
        f"TFExperiment('ranking', TFExperimentArgs(node_pools=[{{'name': 'servers', "
        f"'nodes': [pulumi.Output.secret('srv-00'), 'srv-01']}}], cluster={CLUSTER}))"
    )
    message = _resolved_error(body, tmp_path)
    assert re.search(r"tfk8s:nodePools\[0\]\.nodes\[0\]: is a secret; only tfk8s:program\.env values may be", message)
    assert "srv-00" not in message


def test_an_env_output_that_resolves_to_a_mapping_is_refused_naming_the_field(tmp_path):
    body = (
        "ENV = {'DB': pulumi.Output.from_input({'secret': 'creds', 'key': 'password'})}\n"
        f"TFExperiment('ranking', TFExperimentArgs(node_pools={POOLS}, cluster={CLUSTER}, program={PROGRAM}))"
    )
    message = _resolved_error(body, tmp_path)
    assert "tfk8s:program.env.DB: a pulumi Output here must resolve to text (got a mapping)" in message


def test_an_output_that_resolves_to_a_valid_value_is_what_the_objects_hold(tmp_path):
    body = (
        f"TFExperiment('ranking', TFExperimentArgs(node_pools=[{{'name': 'servers', "
        f"'nodes': [pulumi.Output.from_input('gpu-node-7'), 'srv-01']}}], cluster={CLUSTER}))"
    )
    run = run_program("dev", {}, program=_write(tmp_path, body))
    assert {r.manifest["metadata"]["name"] for r in run.of_kind("NodePatch")} == {"gpu-node-7", "srv-01"}
