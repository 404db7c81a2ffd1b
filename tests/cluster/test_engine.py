"""The real Pulumi engine on the local cluster: `make preview|up|destroy` with the policy pack.

The CLI and the Kubernetes provider are the toolchain's; the program is the
project's, run inline (tools/engine). What each test checks is read back from
the API server, as a user would with kubectl.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

import pulumi
import pytest
from kubernetes import client
from kubernetes.dynamic import DynamicClient
from pulumi import automation as auto

from components.cli import import_tfjob
from components.cli.main import main as components_main
from components.objects.loading import load_experiment
from components.objects.render import render
from components.plan.object_names import PROGRAM_SECRET
from components.resources.entry_point import build, engine_config
from components.spec.stack_files import PROJECT_ROOT
from tests.cluster.test_cluster import _own_labels, core, node_labels, pods_by_node
from tests.runs import SHIPPED_STACKS
from tests.stack_variants import write_variant
from tools.engine import EngineDirs, engine_stack, run_engine
from tools.localcluster.addons import cluster_queue_objects
from tools.localcluster.experiments import apply_manifest, rendered_objects
from tools.localcluster.experiment_pods import task_pods, wait_for_pods

ENGINE_TIMEOUT_S = 300.0
POD_WAIT_S = 120.0
SCENE1 = [f"srv-0{i}" for i in range(5)]


def test_the_engine_is_told_the_version_the_toolchains_cli_reports():
    """tools/engine tells the Automation API the CLI's version instead of asking the CLI each run."""
    from tools.engine.workspace import ToolchainPulumi

    told = ToolchainPulumi()
    reported = subprocess.run([told.command, "version"], capture_output=True, text=True, check=True).stdout
    assert reported.strip().removeprefix("v") == str(told.version)


@dataclass
class EngineRun:
    """One engine command: what it printed, and what it did or would do to each resource."""

    output: list[str] = field(default_factory=list)
    ops: dict[str, str] = field(default_factory=dict)  # resource name -> create, same, update, replace, delete
    inputs: dict[str, dict] = field(default_factory=dict)  # Kubernetes resource name -> its inputs
    urns: list[str] = field(default_factory=list)  # every resource's, as the engine stepped on it
    failed: bool = False

    @property
    def text(self) -> str:
        return "\n".join(self.output)

    @property
    def tail(self) -> str:
        """The end of what the engine printed, where it says why it failed."""
        return self.text[-4000:]

    def changed(self) -> dict[str, str]:
        return {name: op for name, op in self.ops.items() if op != "same"}

    def record(self, event: auto.EngineEvent) -> None:
        if event.resource_pre_event is None:
            return
        step = event.resource_pre_event.metadata
        if step.type.startswith("pulumi:providers:"):
            return  # the default provider, not one of the experiment's resources
        name = step.urn.split("::")[-1]
        self.ops[name] = step.op.value
        self.urns.append(step.urn)
        if step.new is not None and step.type.startswith("kubernetes:"):
            self.inputs[name] = step.new.inputs


def engine(
    command: str, stack: str, kubeconfig: Path, state: Path, program: Optional[Callable[[], None]] = None
) -> EngineRun:
    """Run `command` in this process, as `python -m tools.engine` runs it."""
    run = EngineRun()
    target = engine_stack(stack, kubeconfig, EngineDirs(state), **({"program": program} if program else {}))
    try:
        run_engine(target, command, on_output=run.output.append, on_error=run.output.append, on_event=run.record)
    except auto.CommandError:
        run.failed = True
    return run


def engine_cli(command: str, stack: str, kubeconfig: Path, state: Path) -> subprocess.Popen:
    """`python -m tools.engine COMMAND STACK`, as `make COMMAND STACK=` starts it."""
    return subprocess.Popen(
        [sys.executable, "-m", "tools.engine", command, stack, "--kubeconfig", str(kubeconfig), "--state", str(state)],
        cwd=PROJECT_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )


def namespace_exists(cluster, name: str) -> bool:
    try:
        core(cluster).read_namespace(name)
    except client.ApiException as error:
        if error.status == 404:
            return False
        raise
    return True


def planned(stack: str) -> dict[str, Counter]:
    """Server -> count of PS and workers, as the plan places them."""
    return {
        server: Counter({role: count for role, count in counts.items() if count})
        for server, counts in load_experiment(stack).plan.per_server().items()
    }


def test_scene1_case2_previews_passes_policy_goes_up_as_planned_and_is_destroyed(local_cluster, tmp_path):
    kubeconfig, state = local_cluster.kubeconfig, tmp_path / "engine"
    before = node_labels(local_cluster, SCENE1)

    preview = engine("preview", "scene1-case2", kubeconfig, state)
    assert not preview.failed, preview.tail
    assert "✅ tfk8s@v0.0.1" in preview.text  # the policy pack ran and passed
    assert Counter(preview.ops.values()) == Counter({"create": 13}), preview.ops
    assert not namespace_exists(local_cluster, "tf-scene1-case2")  # a preview creates nothing

    try:
        up = engine("up", "scene1-case2", kubeconfig, state)
        assert not up.failed, up.tail
        assert "13 created" in up.text
        wait_for_pods(local_cluster.api, load_experiment("scene1-case2"), POD_WAIT_S)
        # Every PS and worker on the server the plan gives it, read back from the API server.
        assert pods_by_node(local_cluster, "scene1-case2") == planned("scene1-case2")
        for name, labels in node_labels(local_cluster, SCENE1).items():
            assert _own_labels(labels, "scene1-case2") == {
                "pool.tfk8s.io/scene1-case2": "servers", "role.tfk8s.io/scene1-case2": "mixed",
                "server.tfk8s.io/scene1-case2": name}

        again = engine("preview", "scene1-case2", kubeconfig, state)
        assert not again.failed, again.tail
        assert set(again.ops.values()) == {"same"} and len(again.ops) == 13, again.changed()
    finally:
        destroy = engine("destroy", "scene1-case2", kubeconfig, state)
    assert not destroy.failed, destroy.tail
    assert "13 deleted" in destroy.text
    assert not namespace_exists(local_cluster, "tf-scene1-case2")
    assert node_labels(local_cluster, SCENE1) == before  # exactly the labels tfk8s added are gone


def _platform_experiment() -> None:
    """A platform's own program: one TFExperiment of tfk8s's trainer on two of the servers."""
    from components.tf_experiment import TFExperiment, TFExperimentArgs

    TFExperiment("engine-tokens", TFExperimentArgs(
        node_pools=[{"name": "servers", "nodes": SCENE1[:2]}],
        cluster={"placement": "colocated", "ps": {"replicas": 2, "pool": "servers"},
                 "workers": {"replicas": 4, "pool": "servers"}},
    ))


def test_an_experiment_brought_up_under_the_earlier_type_token_keeps_every_resource(local_cluster, tmp_path, monkeypatch):
    """TFExperiment's token changed to the one scheme (components/resources/tokens.py): an experiment
    that went up under the earlier one previews as no change at all, its namespace and objects kept,
    because the component answers to its earlier token and the engine carries that to its children."""
    from components.resources import tf_experiment
    from components.resources.tokens import EARLIER_TOKENS, TF_EXPERIMENT

    kubeconfig, state = local_cluster.kubeconfig, tmp_path / "engine"
    stack = write_variant(local_cluster.stacks_dir, "scene1-case2", "engine-tokens", lambda values: None)
    run = lambda command: engine(command, stack, kubeconfig, state, program=_platform_experiment)  # noqa: E731
    try:
        with monkeypatch.context() as earlier:
            # As tfk8s's first releases registered it: the earlier token, no alias.
            earlier.setattr(tf_experiment, "TF_EXPERIMENT", EARLIER_TOKENS[TF_EXPERIMENT])
            earlier.setattr(tf_experiment, "answering_to_earlier_token", lambda token, opts: opts)
            first = run("up")
            assert not first.failed, first.tail
        assert any("::tfk8s:experiment:TFExperiment" in urn for urn in first.urns), first.urns[:5]
        namespace_uid = core(local_cluster).read_namespace("tf-engine-tokens").metadata.uid

        preview = run("preview")
        assert not preview.failed, preview.tail
        assert preview.ops and preview.changed() == {}, preview.changed()
        assert any("::tfk8s:tf_experiment:TFExperiment" in urn for urn in preview.urns), preview.urns[:5]
        up = run("up")
        assert not up.failed and up.changed() == {}, (up.changed(), up.tail)
        assert core(local_cluster).read_namespace("tf-engine-tokens").metadata.uid == namespace_uid
        assert run("preview").changed() == {}, "the state now holds the new URNs"
    finally:
        assert not run("destroy").failed
    assert not namespace_exists(local_cluster, "tf-engine-tokens")


def _twelve_per_server(values: dict) -> None:
    values["tfk8s:cluster"]["workers"]["replicas"] = 60


def test_a_changed_stack_previews_exactly_the_objects_that_change_and_up_rolls_them(local_cluster, tmp_path):
    kubeconfig, state = local_cluster.kubeconfig, tmp_path / "engine"
    stack = write_variant(local_cluster.stacks_dir, "scene1-case2", "engine-roll", lambda values: None)
    try:
        first = engine("up", stack, kubeconfig, state)
        assert not first.failed, first.tail
        wait_for_pods(local_cluster.api, load_experiment(stack), POD_WAIT_S)
        old = {name: manifest for name, manifest in engine("preview", stack, kubeconfig, state).inputs.items()}

        assert write_variant(local_cluster.stacks_dir, "scene1-case2", "engine-roll", _twelve_per_server) == stack
        preview = engine("preview", stack, kubeconfig, state)
        assert not preview.failed, preview.tail
        # Exactly the objects whose manifests differ: the workers' JobSet, and the chief's copy of the
        # cluster spec; the nodes, the namespace and its policy are left alone.
        differ = {name for name, manifest in preview.inputs.items() if manifest != old.get(name)}
        assert set(preview.changed()) == differ, (preview.changed(), differ)
        assert "engine-roll-tf" in differ and not any("pool" in name or "namespace" in name for name in differ)

        up = engine("up", stack, kubeconfig, state)
        assert not up.failed, up.tail
        wait_for_pods(local_cluster.api, load_experiment(stack), POD_WAIT_S)
        assert pods_by_node(local_cluster, stack) == {server: Counter({"worker": 12, "ps": 1}) for server in SCENE1}
    finally:
        assert not engine("destroy", stack, kubeconfig, state).failed
    assert not namespace_exists(local_cluster, "tf-engine-roll")


def _host_network(args: pulumi.ResourceTransformArgs) -> Optional[pulumi.ResourceTransformResult]:
    """A team's own transform that puts every TF pod on the host's network."""
    if args.type_ != "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet":
        return None
    props = dict(args.props)
    for replicated in props["spec"]["replicatedJobs"]:
        replicated["template"]["spec"]["template"]["spec"]["hostNetwork"] = True
    return pulumi.ResourceTransformResult(props, args.opts)


def _unsafe_program() -> None:
    """A program of a team's own around tfk8s (components.program.build takes resource options)."""
    build(pulumi.get_stack(), engine_config(), pulumi.ResourceOptions(transforms=[_host_network]))


def test_an_unsafe_program_fails_preview_naming_the_mandatory_policy_and_creates_nothing(local_cluster, tmp_path):
    stack = write_variant(local_cluster.stacks_dir, "scene1-case2", "engine-unsafe", lambda values: None)
    preview = engine("preview", stack, local_cluster.kubeconfig, tmp_path / "engine", program=_unsafe_program)
    assert preview.failed
    broken = {re.search(r"\[mandatory\].*?(tfk8s-[a-z-]+)", line).group(1) for line in preview.text.splitlines()
              if "[mandatory]" in line}
    assert broken == {"tfk8s-container-hygiene"}, preview.tail
    assert "tf/worker: hostNetwork is on" in preview.text
    assert not namespace_exists(local_cluster, "tf-engine-unsafe")
    assert all(not _own_labels(labels, "engine-unsafe") for labels in node_labels(local_cluster, SCENE1).values())


def _team_program_through_the_component() -> None:
    """A platform's own program: TFExperiment running a team's program (its source from the project)."""
    from components.tf_experiment import TFExperiment, TFExperimentArgs

    experiment = TFExperiment("engine-component", TFExperimentArgs(
        node_pools=[{"name": "servers", "nodes": SCENE1[:2]}],
        cluster={"placement": "colocated", "ps": {"replicas": 2, "pool": "servers", "memory": "1Gi"},
                 "workers": {"replicas": 4, "pool": "servers"}},
        program={"source": "tests/team_programs/tf2-ps", "command": ["python", "train.py"]},
        project_root=PROJECT_ROOT,
    ))
    pulumi.export("addresses", experiment.addresses)


def test_a_component_running_a_teams_program_previews_under_the_real_engine(local_cluster, tmp_path):
    stack = write_variant(local_cluster.stacks_dir, "scene1-case2", "engine-component", lambda values: None)
    preview = engine("preview", stack, local_cluster.kubeconfig, tmp_path / "engine",
                     program=_team_program_through_the_component)
    assert not preview.failed, preview.tail
    assert preview.ops and set(preview.ops.values()) == {"create"}, preview.ops
    assert {"engine-component", "engine-component-tf", "engine-component-program"} <= set(preview.ops), preview.ops
    (jobset,) = [inputs for name, inputs in preview.inputs.items() if name == "engine-component-tf"]
    commands = {job["name"]: job["template"]["spec"]["template"]["spec"]["containers"][0]["args"]
                for job in jobset["spec"]["replicatedJobs"]}
    assert all(args[-2:] == ["python", "train.py"] for args in commands.values()), commands
    assert not namespace_exists(local_cluster, "tf-engine-component"), "a preview creates nothing"


def _experiment_taking_another_resources_output() -> None:
    """A platform's own program: a ConfigMap the provider names (known only once it exists), its
    name passed to TFExperiment as a task's env value."""
    import pulumi_kubernetes as k8s

    from components.tf_experiment import TFExperiment, TFExperimentArgs

    from components.spec.models import DEFAULT_IMAGE

    team = k8s.core.v1.Namespace("team-config")
    settings = k8s.core.v1.ConfigMap("settings", metadata={"namespace": team.metadata.name}, data={"lr": "0.01"})
    # As an image build's reference: unknown at the first preview, where the pack must not trip on it.
    image = settings.metadata.name.apply(lambda _: DEFAULT_IMAGE)
    TFExperiment("engine-inputs", TFExperimentArgs(
        node_pools=[{"name": "servers", "nodes": SCENE1[:2]}],
        cluster={"placement": "colocated", "image": image,
                 "ps": {"replicas": 2, "pool": "servers", "memory": "1Gi"}, "workers": {"replicas": 4, "pool": "servers"}},
        program={"source": "tests/team_programs/tf2-ps", "command": ["python", "train.py"],
                 "env": {"SETTINGS": settings.metadata.name, "LEVEL": "debug"}},
        project_root=PROJECT_ROOT,
    ))


def test_an_output_of_another_resource_reaches_the_tasks_env_under_the_real_engine(local_cluster, tmp_path):
    """Unknown at preview, the ConfigMap's name is in the experiment's Secret once `up` created it,
    and every task reads it from there; the image given as an Output is what every task runs."""
    import base64

    from components.spec.models import DEFAULT_IMAGE

    stack = write_variant(local_cluster.stacks_dir, "scene1-case2", "engine-inputs", lambda values: None)
    run = lambda command: engine(  # noqa: E731
        command, stack, local_cluster.kubeconfig, tmp_path / "engine", program=_experiment_taking_another_resources_output
    )
    preview = run("preview")
    assert not preview.failed, preview.tail
    try:
        up = run("up")
        assert not up.failed, up.tail
        (team,) = [n.metadata.name for n in core(local_cluster).list_namespace().items
                   if n.metadata.name.startswith("team-config-")]
        (settings,) = [m for m in core(local_cluster).list_namespaced_config_map(team).items
                       if m.metadata.name.startswith("settings-")]
        secret = core(local_cluster).read_namespaced_secret(PROGRAM_SECRET, "tf-engine-inputs")
        assert base64.b64decode(secret.data["SETTINGS"]).decode() == settings.metadata.name
        jobset = DynamicClient(local_cluster.api).resources.get(api_version="jobset.x-k8s.io/v1alpha2", kind="JobSet")
        for job in jobset.get(name="tf", namespace="tf-engine-inputs").to_dict()["spec"]["replicatedJobs"]:
            (container,) = job["template"]["spec"]["template"]["spec"]["containers"]
            env = {entry["name"]: entry for entry in container["env"]}
            assert env["SETTINGS"]["valueFrom"]["secretKeyRef"] == {"name": PROGRAM_SECRET, "key": "SETTINGS"}
            assert env["LEVEL"]["value"] == "debug"
            assert container["image"] == DEFAULT_IMAGE
    finally:
        assert not run("destroy").failed
    assert not namespace_exists(local_cluster, "tf-engine-inputs")


def test_two_stacks_up_at_once_on_shared_servers_and_one_destroyed_leaves_the_other_intact(local_cluster, tmp_path):
    kubeconfig, state = local_cluster.kubeconfig, tmp_path / "engine"
    servers = [f"srv-0{i}" for i in range(10)]
    before = node_labels(local_cluster, servers)
    ups = [engine_cli("up", stack, kubeconfig, state) for stack in ("scene1-case2", "scene1-case3")]
    try:
        for up in ups:
            output, _ = up.communicate(timeout=ENGINE_TIMEOUT_S)
            assert up.returncode == 0, output[-3000:]
        for stack in ("scene1-case2", "scene1-case3"):
            wait_for_pods(local_cluster.api, load_experiment(stack), POD_WAIT_S)
            assert pods_by_node(local_cluster, stack) == planned(stack)
        case3_labels = {name: _own_labels(labels, "scene1-case3") for name, labels in node_labels(local_cluster, servers).items()}
        case3_pods = {p.metadata.uid for p in task_pods(core(local_cluster), load_experiment("scene1-case3"))}

        destroy = engine_cli("destroy", "scene1-case2", kubeconfig, state)
        output, _ = destroy.communicate(timeout=ENGINE_TIMEOUT_S)
        assert destroy.returncode == 0, output[-3000:]
        after = node_labels(local_cluster, servers)
        assert all(not _own_labels(labels, "scene1-case2") for labels in after.values())
        assert {name: _own_labels(labels, "scene1-case3") for name, labels in after.items()} == case3_labels
        assert {p.metadata.uid for p in task_pods(core(local_cluster), load_experiment("scene1-case3"))} == case3_pods
        assert not namespace_exists(local_cluster, "tf-scene1-case2") and namespace_exists(local_cluster, "tf-scene1-case3")
    finally:
        for stack in ("scene1-case2", "scene1-case3"):
            engine_cli("destroy", stack, kubeconfig, state).communicate(timeout=ENGINE_TIMEOUT_S)
    assert node_labels(local_cluster, servers) == before


def _statefulset(values: dict) -> None:
    values["tfk8s:cluster"]["workload"] = "statefulset"


def _side_pods(values: dict) -> None:
    """An evaluator, TensorBoard and the log archive beside the tasks: their objects too."""
    values["tfk8s:cluster"]["chief"] = {"checkpointVolume": {"size": "1Gi"}}
    values["tfk8s:cluster"]["evaluator"] = {"replicas": 1}
    values["tfk8s:tensorboard"] = {"image": "localhost/tfk8s/tensorboard:2.21.0"}
    values["tfk8s:logs"] = {"size": "256Mi"}


VARIANTS = {"-statefulset": _statefulset, "-side-pods": _side_pods}


@pytest.mark.parametrize(
    "stack", [*SHIPPED_STACKS, "scene1-case2-statefulset", "scene2-case2-statefulset", "scene1-case2-side-pods"]
)
def test_the_engine_would_apply_exactly_what_render_writes_and_make_apply_applies(local_cluster, tmp_path, stack):
    for suffix, edit in VARIANTS.items():
        if stack.endswith(suffix):
            stack = write_variant(tmp_path, stack.removesuffix(suffix), stack, edit)
    preview = engine("preview", stack, local_cluster.kubeconfig, tmp_path / "engine")
    assert not preview.failed, preview.tail
    render(load_experiment(stack), tmp_path / "rendered")
    rendered = {(m["kind"], m["metadata"].get("namespace"), m["metadata"]["name"]): m
                for m in rendered_objects(load_experiment(stack), tmp_path / "rendered")}
    registered = {(m["kind"], m["metadata"].get("namespace"), m["metadata"]["name"]): m for m in preview.inputs.values()}
    assert sorted(registered) == sorted(rendered)
    for key, manifest in rendered.items():
        assert registered[key] == manifest, key


def test_a_bad_stack_is_refused_before_the_engine_starts_and_nothing_is_written(local_cluster, tmp_path):
    state = tmp_path / "engine"
    missing = engine_cli("up", "no-such-stack", local_cluster.kubeconfig, state)
    output, _ = missing.communicate(timeout=60)
    assert missing.returncode == 2 and "stack 'no-such-stack': no file" in output, output

    def no_ps(values: dict) -> None:
        values["tfk8s:cluster"]["ps"]["replicas"] = 0

    bad = engine_cli("preview", write_variant(tmp_path, "scene1-case2", "engine-bad", no_ps), local_cluster.kubeconfig, state)
    output, _ = bad.communicate(timeout=60)
    assert bad.returncode == 2 and "stack 'engine-bad'" in output and "ps" in output, output
    assert not state.exists()


def test_an_imported_tfjob_previews_under_the_engine_and_passes_the_policy_pack(local_cluster, tmp_path, monkeypatch):
    """`import-tfjob` writes a stack like any other: `pulumi preview` with the pack takes it as it is."""
    monkeypatch.setattr(import_tfjob, "STACKS_DIR", local_cluster.stacks_dir)
    team_tfjob = PROJECT_ROOT / "tests" / "team_programs" / "ctr-tfjob" / "tfjob.yaml"
    assert components_main(["import-tfjob", str(team_tfjob), "--stack", "engine-tfjob", "--nodes", "srv-00,srv-01"]) == 0
    stack = str(local_cluster.stacks_dir / "Pulumi.engine-tfjob.yaml")
    preview = engine("preview", stack, local_cluster.kubeconfig, tmp_path / "engine")
    assert not preview.failed, preview.tail
    assert "✅ tfk8s@v0.0.1" in preview.text  # the policy pack ran and passed
    assert set(preview.ops.values()) == {"create"} and "engine-tfjob-tf" in preview.ops, preview.ops
    assert not namespace_exists(local_cluster, "tf-engine-tfjob")


ENGINE_QUEUE = "engine-five-servers"


@pytest.fixture
def five_server_queue(local_cluster) -> str:
    """A ClusterQueue whose quota is what scene1-case2's five servers hold."""
    nodes = client.CoreV1Api(local_cluster.api).list_node().items
    allocatable = [node.status.allocatable for node in nodes if node.metadata.name in SCENE1]
    for manifest in cluster_queue_objects(allocatable):
        if manifest["kind"] == "ClusterQueue":
            manifest["metadata"]["name"] = ENGINE_QUEUE
        apply_manifest(DynamicClient(local_cluster.api), manifest, "tfk8s-test")
    return ENGINE_QUEUE


@pytest.mark.parametrize("queue, workers_cpu, refused_for", [
    pytest.param(ENGINE_QUEUE, "1", None, id="within the queue's quota: previews"),
    pytest.param(ENGINE_QUEUE, "100000", "Kueue could never admit this experiment, which asks for cpu", id="too big"),
    pytest.param("no-such-queue", "1", "the cluster has no such ClusterQueue", id="no such queue"),
])
def test_a_queued_stack_kueue_could_never_admit_is_refused_at_preview_creating_nothing(
    local_cluster, five_server_queue, tmp_path, queue, workers_cpu, refused_for
):
    def queued(values: dict) -> None:
        values["tfk8s:cluster"]["queue"] = queue
        values["tfk8s:cluster"]["workers"]["cpu"] = workers_cpu

    stack = write_variant(local_cluster.stacks_dir, "scene1-case2", "engine-queued", queued)
    preview = engine("preview", stack, local_cluster.kubeconfig, tmp_path / "engine")
    if refused_for is None:
        assert not preview.failed, preview.tail
        assert "✅ tfk8s@v0.0.1" in preview.text
        return
    assert preview.failed
    assert f"stack 'engine-queued': tfk8s:cluster.queue '{queue}'" in preview.text and refused_for in preview.text, (
        preview.tail
    )
    assert set(preview.ops) == {"tfk8s-engine-queued"}, f"refused before any resource: {preview.ops}"
    assert not namespace_exists(local_cluster, "tf-engine-queued")


def test_a_jobset_removed_after_its_ttl_is_no_drift_for_preview_up_or_destroy(local_cluster, tmp_path, capsys):
    """ttlSecondsAfterFinished: the JobSet controller deletes an ended experiment's JobSet; the
    stack's state still holds it. Deleted here as that controller does (this control plane's pods
    never end), then the engine runs as a user would run it next."""
    kubeconfig, state = local_cluster.kubeconfig, tmp_path / "engine"

    def with_ttl(values: dict) -> None:
        values["tfk8s:cluster"]["ttlSecondsAfterFinished"] = 600

    stack = write_variant(local_cluster.stacks_dir, "scene1-case1", "engine-ttl", with_ttl)
    experiment = load_experiment(stack)
    try:
        up = engine("up", stack, kubeconfig, state)
        assert not up.failed, up.tail
        jobsets = DynamicClient(local_cluster.api).resources.get(api_version="jobset.x-k8s.io/v1alpha2", kind="JobSet")
        assert jobsets.get(name=experiment.names.jobset, namespace=experiment.namespace).spec.ttlSecondsAfterFinished == 600
        jobsets.delete(name=experiment.names.jobset, namespace=experiment.namespace,
                       body={"propagationPolicy": "Foreground"})
        deadline = time.monotonic() + POD_WAIT_S
        while any(j.metadata.name == experiment.names.jobset
                  for j in jobsets.get(namespace=experiment.namespace).items):
            assert time.monotonic() < deadline, "the JobSet was not deleted"
            time.sleep(0.5)

        components_main(["status", stack, "--kubeconfig", str(kubeconfig), "--json"])
        said = json.loads(capsys.readouterr().out)
        assert (said["phase"], said["phaseDetail"]) == (
            "Pending", "no JobSet: not created yet, or removed 600 s after it ended (ttlSecondsAfterFinished)")
        for command in ("preview", "up"):
            run = engine(command, stack, kubeconfig, state)
            assert not run.failed, run.tail
            assert run.changed() == {}, f"{command} after the JobSet's removal: {run.changed()}"
        assert not jobsets.get(namespace=experiment.namespace).items, "an unchanged stack does not train again"
    finally:
        assert not engine("destroy", stack, kubeconfig, state).failed
    assert not namespace_exists(local_cluster, experiment.namespace)
