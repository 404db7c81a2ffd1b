"""`python -m components render`: the objects the program registers, as files kubectl can apply."""

from __future__ import annotations

import hashlib

import pytest
import yaml

from components.cli.main import main
from components.objects.render import read_rendered
from tests.harness import by_identity
from tests.runs import ALL_STACKS, program_run
from tests.stack_variants import write_variant


@pytest.mark.parametrize("stack", ALL_STACKS)
def test_rendered_objects_equal_the_registered_ones(stack, tmp_path):
    assert main(["render", stack, "--out", str(tmp_path)]) == 0
    rendered = read_rendered(tmp_path)
    assert by_identity(rendered) == by_identity(program_run(stack).manifests())
    assert len(rendered) == len(program_run(stack).manifests())


def test_render_writes_one_numbered_file_per_object_in_apply_order(tmp_path, capsys):
    assert main(["render", "scene1-case2", "--out", str(tmp_path)]) == 0
    names = sorted(path.name for path in tmp_path.glob("*.yaml"))
    # 5 nodes, namespace, NetworkPolicy, 2 ConfigMaps, the JobSet.
    assert len(names) == 5 + 1 + 1 + 2 + 1
    # Beside them only the record of what render wrote there, which a later render replaces alone.
    assert sorted(path.name for path in tmp_path.iterdir()) == [".tfk8s-render", *names]
    record = yaml.safe_load((tmp_path / ".tfk8s-render").read_text())
    # Each with the sha256 of what render wrote: a file changed since is no longer render's to replace.
    assert record == {"stack": "scene1-case2",
                      "files": {name: hashlib.sha256((tmp_path / name).read_bytes()).hexdigest() for name in names}}
    assert names[:6] == [f"000{i}-node-srv-0{i}.yaml" for i in range(5)] + ["0005-namespace-tf-scene1-case2.yaml"]
    # Everything a task needs comes before the tasks.
    kinds = [yaml.safe_load((tmp_path / name).read_text())["kind"] for name in names]
    assert kinds[-1] == "JobSet"
    printed = capsys.readouterr().out.splitlines()
    assert "     5  Node" in printed and "     1  JobSet" in printed
    assert printed[-1].startswith("    10  objects of stack scene1-case2 in ")


def test_render_of_the_statefulset_model_has_a_workload_per_group(tmp_path, capsys):
    stack = write_variant(tmp_path, "scene1-case2", "sts", lambda v: v["tfk8s:cluster"].update(workload="statefulset"))
    assert main(["render", stack, "--out", str(tmp_path / "out")]) == 0
    kinds = [yaml.safe_load(path.read_text())["kind"] for path in sorted((tmp_path / "out").glob("*.yaml"))]
    # A Service per role, the chief's Job, PS and workers per server, after what they need.
    first_task = kinds.index("Service")
    assert set(kinds[first_task:]) == {"Service", "StatefulSet", "Job"}
    assert len(kinds) == 5 + 1 + 1 + 2 + 3 + 1 + 2 * 5


def test_render_replaces_an_earlier_rendering(tmp_path):
    assert main(["render", "scene1-case3", "--out", str(tmp_path)]) == 0
    assert main(["render", "scene1-case1", "--out", str(tmp_path)]) == 0
    assert len(list(tmp_path.glob("*.yaml"))) == 1 + 1 + 1 + 2 + 1


def test_render_keeps_the_trainer_source_readable(tmp_path):
    assert main(["render", "scene1-case1", "--out", str(tmp_path)]) == 0
    text = next(tmp_path.glob("*-configmap-tfk8s-trainer.yaml")).read_text()
    assert "  __main__.py: |" in text


def test_render_of_a_bad_stack_writes_nothing(tmp_path, capsys):
    assert main(["render", "no-such-stack", "--out", str(tmp_path / "out")]) == 2
    assert "stack 'no-such-stack': no file" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
