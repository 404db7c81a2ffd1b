"""The single files tfk8s writes (a stack from `import-tfjob`, `make docs`' reference) are written
whole or not at all: a failed write leaves the old file's bytes, and no temporary file beside it."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
import yaml

import components.cli.import_tfjob as importer
import components.spec.reference as reference
from components.cli.main import main
from tests.unprivileged import read_only, run_python

CONTAINER = {"name": "tensorflow", "image": "registry.example.com/ml/ctr:2.21.0", "command": ["python", "train.py"],
             "resources": {"requests": {"cpu": "2", "memory": "4Gi"}}}
TFJOB = {
    "apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "ctr-model"},
    "spec": {"tfReplicaSpecs": {
        role: {"replicas": count, "restartPolicy": "OnFailure", "template": {"spec": {"containers": [CONTAINER]}}}
        for role, count in (("Chief", 1), ("PS", 2), ("Worker", 4))
    }},
}
OLD_STACK = b"# my hand-tuned experiment\nconfig: {}\n"


@pytest.fixture
def stacks_dir(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "stacks"
    folder.mkdir()
    monkeypatch.setattr(importer, "STACKS_DIR", folder)
    return folder


@pytest.fixture
def tfjob_file(tmp_path) -> Path:
    path = tmp_path / "tfjob.yaml"
    path.write_text(yaml.safe_dump(TFJOB, sort_keys=False))
    return path


def disk_full(*args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_a_forced_import_that_fails_to_write_keeps_the_old_stack_file(stacks_dir, tfjob_file, capsys, monkeypatch):
    existing = stacks_dir / "Pulumi.imported.yaml"
    existing.write_bytes(OLD_STACK)
    monkeypatch.setattr(os, "fsync", disk_full)
    code = main(["import-tfjob", str(tfjob_file), "--stack", "imported", "--nodes", "n1", "--force"])
    assert code == 2
    assert existing.read_bytes() == OLD_STACK
    assert sorted(path.name for path in stacks_dir.iterdir()) == ["Pulumi.imported.yaml"]
    said = capsys.readouterr()
    assert said.err.splitlines()[-1].endswith("Pulumi.imported.yaml: No space left on device; nothing written")
    assert said.out == ""


IMPORT_INTO = """\
import sys
from pathlib import Path
import components.cli.import_tfjob as importer
from components.cli.main import main
importer.STACKS_DIR = Path(sys.argv[1])
sys.exit(main(sys.argv[2:]))
"""


def test_an_import_into_a_read_only_stacks_folder_is_one_clear_error(stacks_dir, tfjob_file):
    read_only(stacks_dir)
    result = run_python("-c", IMPORT_INTO, str(stacks_dir),
                        "import-tfjob", str(tfjob_file), "--stack", "imported", "--nodes", "n1")
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [
        f"import-tfjob: cannot write {stacks_dir / 'Pulumi.imported.yaml'}: Permission denied; nothing written"
    ]
    assert list(stacks_dir.iterdir()) == []


def test_make_docs_that_fails_to_write_keeps_the_old_reference(tmp_path, monkeypatch):
    page = tmp_path / reference.REFERENCE_FILE
    page.parent.mkdir(parents=True)
    page.write_bytes(b"# the reference as it was\n")
    monkeypatch.setattr(reference, "PROJECT_ROOT", tmp_path)
    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(OSError, match="No space left on device"):
        reference.main()
    assert page.read_bytes() == b"# the reference as it was\n"
    assert list(page.parent.iterdir()) == [page]
