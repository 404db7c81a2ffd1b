"""Experiments as stack files: a trainer change shows in preview; two cases differ by a readable diff."""

from __future__ import annotations

import copy
import dataclasses
import difflib
import re
import shutil

import pytest

from components.objects import manifests
from components.plan.experiment import Experiment
from components.plan.trainer_bundle import load_trainer_bundle
from components.spec.loading import load_stack_config
from components.spec.stack_files import STACKS_DIR, read_stack_values
from tests.harness import PROJECT_ROOT
from tests.runs import stack_config

# Between two cases of one scene only counts and node lists may differ.
ALLOWED_CHANGE = re.compile(r"^\s+- (srv|ps-srv|wk-srv)-\d+$|^\s+(ps|workers): \{replicas: \d+, pool: [\w-]+\}$")


@pytest.mark.parametrize("scene", [1, 2])
def test_cases_of_a_scene_differ_only_in_counts_and_nodes(scene):
    files = [STACKS_DIR / f"Pulumi.scene{scene}-case{case}.yaml" for case in (1, 2, 3, 4)]
    for before, after in zip(files, files[1:]):
        diff = difflib.unified_diff(before.read_text().splitlines(), after.read_text().splitlines(), lineterm="", n=0)
        changed = [line[1:] for line in diff if line[:1] in "+-" and not line.startswith(("+++", "---"))]
        assert changed, f"{before.name} and {after.name} are identical"
        unexpected = [line for line in changed if not ALLOWED_CHANGE.match(line)]
        assert unexpected == [], f"{before.name} -> {after.name}"


def test_a_trainer_change_rolls_the_pods():
    config = stack_config("scene1-case1")
    bundle = load_trainer_bundle(PROJECT_ROOT)
    changed = dataclasses.replace(
        bundle, files={**bundle.files, "settings.py": bundle.files["settings.py"] + "\n# changed\n"}
    )
    before, after = Experiment(config, bundle), Experiment(config, changed)
    group = before.groups[1]

    def pod_annotations(experiment):
        return manifests.group_workload(experiment, group)["spec"]["template"]["metadata"]["annotations"]

    assert pod_annotations(before) != pod_annotations(after)
    assert manifests.trainer_config_map(before)["data"] != manifests.trainer_config_map(after)["data"]


def test_a_settings_change_rolls_the_pods():
    config = stack_config("scene1-case1")
    bundle = load_trainer_bundle(PROJECT_ROOT)
    faster = config.model_copy(update={"trainer": dataclasses.replace(config.trainer, learning_rate=0.5)})
    before, after = Experiment(config, bundle), Experiment(faster, bundle)
    assert before.trainer_hash != after.trainer_hash


def test_a_topology_change_rolls_every_pod_the_chief_included():
    """5 PS / 50 workers -> 6 / 60: the TF cluster in the shared ConfigMap changes, and every
    pod, the chief's Job too, must restart to read it."""
    bundle = load_trainer_bundle(PROJECT_ROOT)
    values = read_stack_values("scene1-case2")[1]
    grown = copy.deepcopy(values)
    grown["tfk8s:nodePools"][0]["nodes"].append("srv-05")
    grown["tfk8s:cluster"]["workers"]["replicas"] = 60
    grown["tfk8s:cluster"]["ps"]["replicas"] = 6
    before = Experiment(load_stack_config("scene1-case2", values), bundle)
    after = Experiment(load_stack_config("scene1-case2", grown), bundle)
    assert after.config.cluster.ps_count == before.config.cluster.ps_count + 1
    chief_before, chief_after = (
        manifests.group_workload(e, next(g for g in e.groups if g.task_type == "chief")) for e in (before, after)
    )
    assert chief_before["spec"]["template"] != chief_after["spec"]["template"]


def test_the_pods_get_only_the_modules_they_import(tmp_path):
    bundle = load_trainer_bundle(PROJECT_ROOT)
    assert sorted(bundle.files) == [
        "__init__.py",
        "__main__.py",
        "checkpoints.py",
        "chief.py",
        "cluster.py",
        "data.py",
        "devices.py",
        "evaluator.py",
        "failures.py",
        "ids.py",
        "kubelet_expansion.py",
        "lifeline.py",
        "log_lines.py",
        "model.py",
        "optimizers.py",
        "peers.py",
        "scalars.py",
        "settings.py",
        "shared_names.py",
        "termination.py",
        "tf_private.py",
        "training_loop.py",
    ]
    # Editing the local launcher or the report changes no pod.
    copy_root = tmp_path / "project"
    shutil.copytree(PROJECT_ROOT / "trainer", copy_root / "trainer", ignore=shutil.ignore_patterns("__pycache__"))
    for local_only in ("local/cluster.py", "local/cli.py", "report/command.py"):
        path = copy_root / "trainer" / local_only
        path.write_text(path.read_text() + "\n# edited\n")
    assert load_trainer_bundle(copy_root).sha256 == bundle.sha256
