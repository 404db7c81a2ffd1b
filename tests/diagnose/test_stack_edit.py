"""The next experiment's stack file (components/spec/stack_edit.py): the old one with exactly the changed
values changed, every other byte as the user wrote it, and a file that `plan` loads."""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest
import yaml

from components.objects.loading import load_experiment
from components.spec.stack_edit import StackEditError, apply_changes, key_path, stack_diff, yaml_value
from components.spec.stack_files import STACKS_DIR
from tests.runs import SHIPPED_STACKS
from components.insight.bottleneck import Change

# A stack as `pulumi config set --secret` leaves it: the passphrase's salt and an encrypted env value.
SECRET_STACK = """\
# A team's program with a token.
secretsprovider: passphrase
encryptionsalt: v1:Pq2AbBuAf0k=:v1:4JmWb7L4AH3Y2UcS:hRqfZ1nRfr7mx2pVFJxQ2t0aZ3M2xA==
config:
  tfk8s:nodePools:
    - name: servers
      nodes: [srv-00, srv-01]
  tfk8s:cluster:
    placement: colocated
    image: registry.example/team/ctr:1.4
    ps: {replicas: 1, pool: servers, memory: 2Gi}
    workers: {replicas: 4, pool: servers}  # four to start
  tfk8s:program:
    command: [python, train.py]
    env:
      TOKEN:
        secure: v1:yVnqJ1z1G2Kx9TdA:YlGNbVYbz7u1xmqnyK0lAfDF5Xc=
"""


def text_of(stack: str) -> str:
    return (STACKS_DIR / f"Pulumi.{stack}.yaml").read_text(encoding="utf-8")


def changed_lines(old: str, new: str) -> tuple[list[str], list[str]]:
    """(lines taken out, lines put in)."""
    diff = list(difflib.ndiff(old.splitlines(), new.splitlines()))
    return [line[2:] for line in diff if line.startswith("- ")], [line[2:] for line in diff if line.startswith("+ ")]


def config(text: str) -> dict:
    return yaml.safe_load(text)["config"]


def written(tmp_path: Path, stack: str, text: str) -> Path:
    path = tmp_path / f"Pulumi.{stack}.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("stack", SHIPPED_STACKS)
def test_a_changed_value_changes_its_line_alone_and_the_stack_loads(stack, tmp_path):
    old = text_of(stack)
    workers = config(old)["tfk8s:cluster"]["workers"]["replicas"]
    new = apply_changes(old, [Change("tfk8s:cluster.workers.replicas", workers, workers * 2)])
    taken, put = changed_lines(old, new)
    assert len(taken) == len(put) == 1
    assert taken[0].replace(f"replicas: {workers}", f"replicas: {workers * 2}") == put[0]
    # Comments, order, flow mappings: everything else as it was.
    assert [line for line in old.splitlines() if line not in taken] == [
        line for line in new.splitlines() if line not in put
    ]
    experiment = load_experiment(str(written(tmp_path, f"{stack}-next", new)))
    assert experiment.config.cluster.workers.replicas == workers * 2
    assert experiment.stack == f"{stack}-next"


@pytest.mark.parametrize("stack", [s for s in SHIPPED_STACKS if "partition" not in text_of(s)])
def test_a_key_the_stack_leaves_out_is_added_to_its_section_alone(stack, tmp_path):
    old = text_of(stack)
    new = apply_changes(old, [Change("tfk8s:trainer.partition", None, "auto")])
    taken, put = changed_lines(old, new)
    flow = next((line for line in old.splitlines() if line.startswith("  tfk8s:trainer: {")), None)
    if flow == "  tfk8s:trainer: {}":  # an empty flow mapping takes the key between its braces
        assert (taken, put) == ([flow], ["  tfk8s:trainer: {partition: auto}"])
    elif flow is not None:  # a flow mapping with keys: the key after its last
        assert (taken, put) == ([flow], [flow.removesuffix("}") + ", partition: auto}"])
    else:  # a block mapping: one line more, at its keys' indentation, after its last key
        assert taken == [] and put == ["    partition: auto"]
        lines = new.splitlines()
        assert lines.index("    partition: auto") > lines.index("  tfk8s:trainer:")
    assert load_experiment(str(written(tmp_path, "next", new))).config.trainer.partition == "auto"


def test_flow_mappings_stay_flow_mappings_with_their_other_keys():
    old = text_of("scene1-case1-hot-none")
    new = apply_changes(
        old, [Change("tfk8s:cluster.ps.replicas", 3, 6), Change("tfk8s:cluster.ps.cpu", "200m", "400m")]
    )
    assert changed_lines(old, new) == (
        ["    ps: {replicas: 3, pool: servers, cpu: 200m}"],
        ["    ps: {replicas: 6, pool: servers, cpu: 400m}"],
    )


def test_a_key_left_out_of_a_flow_mapping_goes_inside_its_braces(tmp_path):
    old = text_of("gpu-p40")  # ps: {pool: cpu-servers}, counted by ratio 1:4
    new = apply_changes(old, [Change("tfk8s:cluster.ps.cpu", None, "4")])
    assert changed_lines(old, new) == (["    ps: {pool: cpu-servers}"], ['    ps: {pool: cpu-servers, cpu: "4"}'])
    assert load_experiment(str(written(tmp_path, "next", new))).config.cluster.ps.cpu == "4"


def test_a_section_the_stack_leaves_out_is_added_as_one_line(tmp_path):
    old = text_of("scene1-case1")  # no chief: section
    new = apply_changes(old, [Change("tfk8s:cluster.chief.cpu", None, "500m")])
    taken, put = changed_lines(old, new)
    assert taken == [] and put == ["    chief: {cpu: 500m}"]
    assert load_experiment(str(written(tmp_path, "next", new))).config.cluster.chief.cpu == "500m"


def test_comments_and_blank_lines_stay_where_they_were():
    old = "# why this stack\nconfig:\n  # the pool\n  tfk8s:nodePools:\n    - name: s  # one\n      nodes: [a]\n\n"
    old += "  tfk8s:cluster:\n    placement: colocated  # keep\n    ps: {replicas: 1, pool: s}\n"
    old += "    workers:\n      replicas: 2  # two\n      pool: s\n    # the end of the cluster\n"
    new = apply_changes(old, [Change("tfk8s:cluster.workers.replicas", 2, 4), Change("tfk8s:cluster.workers.cpu", None, "2")])
    assert changed_lines(old, new) == (["      replicas: 2  # two"], ["      replicas: 4  # two", '      cpu: "2"'])
    assert new.endswith('      cpu: "2"\n    # the end of the cluster\n')


def test_secure_values_and_the_salt_are_kept_byte_for_byte(tmp_path):
    new = apply_changes(SECRET_STACK, [Change("tfk8s:cluster.workers.replicas", 4, 8)])
    assert changed_lines(SECRET_STACK, new) == (
        ["    workers: {replicas: 4, pool: servers}  # four to start"],
        ["    workers: {replicas: 8, pool: servers}  # four to start"],
    )
    experiment = load_experiment(str(written(tmp_path, "team-next", new)))
    assert experiment.secret_env == frozenset({"TOKEN"})


def test_a_secret_is_never_changed():
    with pytest.raises(StackEditError, match=r"tfk8s:program.env.TOKEN: is a secret; change it with `pulumi config set"):
        apply_changes(SECRET_STACK, [Change("tfk8s:program.env.TOKEN", None, "plain")])


def test_quoted_values_keep_their_quotes_and_text_that_reads_as_a_number_is_quoted():
    old = text_of("gpu-p40")  # ratio: "1:4", workers' cpu: "4"
    new = apply_changes(old, [Change("tfk8s:cluster.ratio", "1:4", "1:2"), Change("tfk8s:cluster.workers.cpu", "4", "8")])
    assert changed_lines(old, new)[1] == [
        '    ratio: "1:2"',
        '    workers: {replicas: 8, pool: p40-servers, gpus: 1, cpu: "8", memory: 8Gi}',
    ]
    # Plain where the old value was: text YAML 1.1 would read otherwise (1:4 is base 60) gets quotes.
    assert yaml_value("1:4") == '"1:4"' and yaml_value("4") == '"4"' and yaml_value("500m") == "500m"
    assert yaml_value("yes") == '"yes"' and yaml_value(4) == "4" and yaml_value("1e3") == '"1e3"'


def test_the_last_key_of_a_block_mapping_taken_out_leaves_an_empty_mapping_not_null():
    old = "config:\n  tfk8s:cluster:\n    chief:  # small\n      cpu: 300m\n    placement: colocated\n"
    new = apply_changes(old, [Change("tfk8s:cluster.chief.cpu", "300m", None)])
    assert new == "config:\n  tfk8s:cluster:\n    chief: {}  # small\n    placement: colocated\n"


def test_a_key_set_to_none_is_taken_out():
    old = text_of("gpu-p40")
    new = apply_changes(old, [Change("tfk8s:cluster.ratio", "1:4", None)])
    assert changed_lines(old, new) == (['    ratio: "1:4"'], [])
    flow = apply_changes(old, [Change("tfk8s:cluster.workers.gpus", 1, None)])
    assert "    workers: {replicas: 8, pool: p40-servers, cpu: \"4\", memory: 8Gi}" in flow.splitlines()


def test_a_pool_split_changes_only_the_pools_that_change(tmp_path):
    old = text_of("gpu-p40")
    pools = config(old)["tfk8s:nodePools"]
    split = [
        {"name": "cpu-servers", "nodes": ["cpu-srv-00"]},
        {"name": "cpu-servers-ps", "nodes": ["cpu-srv-01"]},
        pools[1],
    ]
    new = apply_changes(old, [Change("tfk8s:nodePools", pools, split)])
    taken, put = changed_lines(old, new)
    assert taken == [] and put == ["    - name: cpu-servers-ps", "      nodes:"]
    assert "      gpu: {product: Tesla-P40, perNode: 4}" in new.splitlines()  # the other pool, as written
    assert config(new)["tfk8s:nodePools"] == split
    assert [p.name for p in load_experiment(str(written(tmp_path, "next", new))).config.node_pools] == [
        "cpu-servers",
        "cpu-servers-ps",
        "p40-servers",
    ]


def test_the_diff_names_the_two_stack_files():
    old = text_of("scene1-case1")
    new = apply_changes(old, [Change("tfk8s:cluster.ps.replicas", 1, 2)])
    diff = stack_diff(old, new, "scene1-case1", "scene1-case1-more-ps")
    assert diff.startswith("--- Pulumi.scene1-case1.yaml\n+++ Pulumi.scene1-case1-more-ps.yaml\n")
    assert "-    ps: {replicas: 1, pool: servers}\n+    ps: {replicas: 2, pool: servers}\n" in diff
    assert stack_diff(old, old, "a", "b") == ""


@pytest.mark.parametrize(
    "key, message",
    [
        pytest.param("cluster.ps.replicas", "not a tfk8s stack key", id="no namespace"),
        pytest.param("tfk8s:cluster..replicas", "not a tfk8s stack key", id="an empty name"),
        pytest.param("tfk8s:cluster.placement.x", "tfk8s:cluster.placement is not a mapping", id="under a value"),
    ],
)
def test_a_key_that_cannot_be_changed_is_named(key, message):
    with pytest.raises(StackEditError, match=f"^{key.replace('.', '[.]')}: {message}"):
        apply_changes(text_of("scene1-case1"), [Change(key, None, 1)])


def test_key_paths_read_as_pulumi_config_path_reads_them():
    assert key_path("tfk8s:cluster.ps.replicas") == ["tfk8s:cluster", "ps", "replicas"]
    assert key_path("tfk8s:nodePools") == ["tfk8s:nodePools"]


def measured_on_one_server(experiment, ps_cores, worker_cores, saturated: bool):
    """Every PS and worker of the stack on its workers' first server, each at the cores given (a list for
    the PS: one figure each), allowed 1 core; the server's cores just over what they use when `saturated`."""
    from components.insight.bottleneck import Measurements, ServerSample

    from tests.diagnose.builders import task

    pool = experiment.config.pools[experiment.config.cluster.workers.pool]
    node = (pool.nodes or ("srv-00",))[0]
    ps_count, workers = experiment.config.cluster.ps_count, experiment.config.cluster.workers.replicas
    per_ps = ps_cores if isinstance(ps_cores, list) else [ps_cores] * ps_count
    tasks = [task(f"ps-{i}", cores, 1.0, node=node) for i, cores in enumerate(per_ps)]
    tasks += [task(f"worker-{i}", worker_cores, 1.0, node=node) for i in range(workers)]
    used = sum(per_ps) + worker_cores * workers
    server = ServerSample(node, round(used / 0.9, 3) if saturated else None)
    return Measurements(tuple(tasks), (server,), 60.0, 4, "metrics.k8s.io")


SCENARIOS = {
    "hot-ps": lambda n: ([0.9] + [0.01] * (n - 1), 0.5, False),
    "ps-bound": lambda n: (0.95, 0.3, False),
    "ps-bound on a full server": lambda n: (0.95, 0.3, True),
    "worker-bound": lambda n: (0.3, 0.95, False),
    "worker-bound on a full colocated server": lambda n: (0.5, 0.95, True),
    "none": lambda n: (0.5, 0.5, False),
}


@pytest.mark.parametrize("stack, scenario", [(stack, scenario) for stack in SHIPPED_STACKS for scenario in SCENARIOS])
def test_every_change_the_rules_propose_is_written_and_plan_loads_it(stack, scenario, tmp_path):
    """The real rules on each stack (its shape as diagnose reads it), their changes made to the stack
    file's text: the file loads as plan loads it, with each changed key holding its new value."""
    from components.live.diagnose_figures import experiment_shape
    from components.spec.stack_files import read_stack_values
    from components.insight.bottleneck import diagnose

    experiment = load_experiment(stack)
    _, written_values = read_stack_values(stack)
    ps_cores, worker_cores, saturated = SCENARIOS[scenario](experiment.config.cluster.ps_count)
    finding = diagnose(
        measured_on_one_server(experiment, ps_cores, worker_cores, saturated), experiment_shape(experiment, written_values)
    )
    old = text_of(stack)
    new = apply_changes(old, finding.changes)
    assert (new != old) == bool(finding.changes)
    loaded = load_experiment(str(written(tmp_path, f"{stack}-next", new)))
    values = config(new)
    for change in finding.changes:
        held = values
        for name in key_path(change.key):
            held = held[name]
        assert held == change.new, change.key
    assert loaded.stack == f"{stack}-next"


ANCHORED = """config:
  tfk8s:nodePools:
    - {name: servers, nodes: [srv-00]}
  tfk8s:cluster:
    placement: colocated
    ps: &same {replicas: 2, pool: servers}
    workers: *same
"""


@pytest.mark.parametrize(
    "change",
    [
        Change("tfk8s:cluster.ps.replicas", 2, 4),  # would change the workers' too
        Change("tfk8s:trainer.partition", None, "auto"),  # a new section, where *same is read
    ],
)
def test_a_stack_that_shares_values_through_anchors_is_not_edited(change):
    with pytest.raises(StackEditError) as refused:
        apply_changes(ANCHORED, [change])
    assert str(refused.value) == (
        f"{change.key}: the stack file shares values through YAML anchors (*same), so one key cannot be changed "
        "alone; make the change by hand"
    )
