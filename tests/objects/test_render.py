"""`python -m components render`: the objects the program registers, as files kubectl can apply."""

from __future__ import annotations

import hashlib

import pytest
import yaml

from components.cli.main import main
from tests.runs import program_run
from tests.stack_variants import write_variant


def _identities(namespace: str, *rest: tuple[str, str]) -> list[tuple[str, str | None, str]]:
    """(kind, namespace, name) in apply order: the namespace, then what sits in it."""
    return [("Namespace", None, namespace)] + [(kind, namespace, name) for kind, name in rest]


# What a user finds in the folder, file by file in the order kubectl applies them.
RENDERED = {
    "scene1-case2": (
        ["0000-namespace-tf-scene1-case2.yaml", "0001-networkpolicy-tf-grpc-from-experiment-only.yaml",
         "0002-configmap-tfk8s-trainer.yaml", "0003-configmap-tfk8s-trainer-env.yaml", "0004-jobset-tf.yaml"],
        _identities("tf-scene1-case2",
                    ("NetworkPolicy", "tf-grpc-from-experiment-only"), ("ConfigMap", "tfk8s-trainer"),
                    ("ConfigMap", "tfk8s-trainer-env"), ("JobSet", "tf")),
    ),
    # The checkpoint claim exists before the JobSet whose chief mounts it.
    "scene1-case2-durable": (
        ["0000-namespace-tf-scene1-case2-durable.yaml", "0001-networkpolicy-tf-grpc-from-experiment-only.yaml",
         "0002-configmap-tfk8s-trainer.yaml", "0003-configmap-tfk8s-trainer-env.yaml",
         "0004-persistentvolumeclaim-tfk8s-checkpoints.yaml", "0005-jobset-tf.yaml"],
        _identities("tf-scene1-case2-durable",
                    ("NetworkPolicy", "tf-grpc-from-experiment-only"), ("ConfigMap", "tfk8s-trainer"),
                    ("ConfigMap", "tfk8s-trainer-env"), ("PersistentVolumeClaim", "tfk8s-checkpoints"),
                    ("JobSet", "tf")),
    ),
}


def _identity(manifest) -> tuple[str, str | None, str]:
    return manifest["kind"], manifest["metadata"].get("namespace"), manifest["metadata"]["name"]


@pytest.mark.parametrize("stack", sorted(RENDERED))
def test_render_writes_the_objects_the_program_registers_in_apply_order(stack, tmp_path):
    files, identities = RENDERED[stack]
    assert main(["render", stack, "--out", str(tmp_path)]) == 0
    paths = sorted(tmp_path.glob("*.yaml"))
    assert [path.name for path in paths] == files
    assert [_identity(yaml.safe_load(path.read_text())) for path in paths] == identities
    # `pulumi up` creates the same objects, in the order their dependencies resolve, and labels the nodes.
    registered = sorted(map(_identity, program_run(stack).manifests()), key=str)
    assert [i for i in registered if i[0] != "Node"] == sorted(identities, key=str)


def test_render_writes_no_node_but_scripts_that_label_and_unlabel_them(tmp_path, capsys):
    assert main(["render", "scene1-case2", "--out", str(tmp_path)]) == 0
    assert not [p for p in tmp_path.iterdir() if "kind: Node" in p.read_text()]
    label = (tmp_path / "label-nodes.sh").read_text().splitlines()
    assert label[0] == "#!/bin/sh" and "set -e" in label
    assert label[-5:] == [
        f"kubectl label node srv-0{i} --overwrite pool.tfk8s.io/scene1-case2=servers "
        f"role.tfk8s.io/scene1-case2=mixed server.tfk8s.io/scene1-case2=srv-0{i}" for i in range(5)]
    unlabel = (tmp_path / "unlabel-nodes.sh").read_text().splitlines()
    assert unlabel[-1] == ("kubectl label node srv-04 pool.tfk8s.io/scene1-case2- role.tfk8s.io/scene1-case2- "
                           "server.tfk8s.io/scene1-case2-")
    said = capsys.readouterr().err
    assert f"run sh {tmp_path}/label-nodes.sh before `kubectl apply -f {tmp_path}`" in said


def test_the_stream_holds_no_node_and_says_how_to_label_them(capsys):
    assert main(["render", "scene1-case2", "-o", "yaml"]) == 0
    printed = capsys.readouterr()
    assert "Node" not in {doc["kind"] for doc in yaml.safe_load_all(printed.out)}
    assert ("  kubectl label node srv-00 --overwrite pool.tfk8s.io/scene1-case2=servers "
            "role.tfk8s.io/scene1-case2=mixed server.tfk8s.io/scene1-case2=srv-00") in printed.err.splitlines()


def test_render_writes_one_numbered_file_per_object_in_apply_order(tmp_path, capsys):
    assert main(["render", "scene1-case2", "--out", str(tmp_path)]) == 0
    names = sorted(path.name for path in tmp_path.glob("*.yaml"))
    # Namespace, NetworkPolicy, 2 ConfigMaps, the JobSet.
    assert len(names) == 1 + 1 + 2 + 1
    scripts = ["label-nodes.sh", "unlabel-nodes.sh"]
    # Beside them the node label scripts and the record of what render wrote there, which a later render
    # replaces alone.
    assert sorted(path.name for path in tmp_path.iterdir()) == [".tfk8s-render", *names, *scripts]
    record = yaml.safe_load((tmp_path / ".tfk8s-render").read_text())
    # Each with the sha256 of what render wrote: a file changed since is no longer render's to replace.
    assert record == {"stack": "scene1-case2", "files": {
        name: hashlib.sha256((tmp_path / name).read_bytes()).hexdigest() for name in [*names, *scripts]}}
    assert names[0] == "0000-namespace-tf-scene1-case2.yaml"
    # Everything a task needs comes before the tasks.
    kinds = [yaml.safe_load((tmp_path / name).read_text())["kind"] for name in names]
    assert kinds[-1] == "JobSet"
    printed = capsys.readouterr().out.splitlines()
    assert "     1  Namespace" in printed and "     1  JobSet" in printed
    assert printed[-1].startswith("     5  objects of stack scene1-case2 in ")


def test_render_of_the_statefulset_model_has_a_workload_per_group(tmp_path, capsys):
    stack = write_variant(tmp_path, "scene1-case2", "sts", lambda v: v["tfk8s:cluster"].update(workload="statefulset"))
    assert main(["render", stack, "--out", str(tmp_path / "out")]) == 0
    kinds = [yaml.safe_load(path.read_text())["kind"] for path in sorted((tmp_path / "out").glob("*.yaml"))]
    # A Service per role, the chief's Job, PS and workers per server, after what they need.
    first_task = kinds.index("Service")
    assert set(kinds[first_task:]) == {"Service", "StatefulSet", "Job"}
    assert len(kinds) == 1 + 1 + 2 + 3 + 1 + 2 * 5


def test_render_replaces_an_earlier_rendering(tmp_path):
    assert main(["render", "scene1-case3", "--out", str(tmp_path)]) == 0
    assert main(["render", "scene1-case1", "--out", str(tmp_path)]) == 0
    assert len(list(tmp_path.glob("*.yaml"))) == 1 + 1 + 2 + 1


def test_render_keeps_the_trainer_source_readable(tmp_path):
    assert main(["render", "scene1-case1", "--out", str(tmp_path)]) == 0
    text = next(tmp_path.glob("*-configmap-tfk8s-trainer.yaml")).read_text()
    assert "  __main__.py: |" in text


def test_render_of_a_bad_stack_writes_nothing(tmp_path, capsys):
    assert main(["render", "no-such-stack", "--out", str(tmp_path / "out")]) == 2
    assert "stack 'no-such-stack': no file" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
