"""Experiments as stack files: a trainer change shows in preview; two cases differ by a readable diff."""

from __future__ import annotations

import dataclasses
import difflib
import re

import pytest

from components import manifests
from components.experiment import Experiment
from components.stack_files import STACKS_DIR, load_stack_file
from components.trainer_bundle import load_trainer_bundle
from tests.harness import PROJECT_ROOT

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
    config = load_stack_file("scene1-case1")
    bundle = load_trainer_bundle(PROJECT_ROOT)
    changed = dataclasses.replace(bundle, files={**bundle.files, "settings.py": bundle.files["settings.py"] + "\n# changed\n"})
    before, after = Experiment(config, bundle), Experiment(config, changed)
    group = before.groups[1]

    def pod_annotations(experiment):
        return manifests.group_workload(experiment, group)["spec"]["template"]["metadata"]["annotations"]

    assert pod_annotations(before) != pod_annotations(after)
    assert manifests.trainer_config_map(before)["data"] != manifests.trainer_config_map(after)["data"]


def test_a_settings_change_rolls_the_pods():
    config = load_stack_file("scene1-case1")
    bundle = load_trainer_bundle(PROJECT_ROOT)
    faster = config.model_copy(update={"trainer": dataclasses.replace(config.trainer, learning_rate=0.5)})
    before, after = Experiment(config, bundle), Experiment(faster, bundle)
    assert before.trainer_hash != after.trainer_hash
