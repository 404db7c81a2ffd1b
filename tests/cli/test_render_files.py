"""`render` removes only files it wrote, and puts a rendering in place whole or not at all."""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

import components.cli.main as cli_main
import components.objects.render as render_module
import components.objects.render_folder as render_folder
import components.objects.render_record as render_record
from components.cli.main import main
from components.objects.loading import load_experiment
from components.objects.render import read_rendered
from tests.harness import PROJECT_ROOT
from tests.unprivileged import read_only, run_python


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every file's bytes and every folder under `root`, by path."""
    return {str(path.relative_to(root)): path.read_bytes() if path.is_file() else None
            for path in sorted(root.rglob("*"))}


@pytest.fixture
def project(tmp_path) -> Path:
    """A copy of the project's stacks, Pulumi.yaml and README.md: what a mistaken --out would hit."""
    copy = tmp_path / "project"
    shutil.copytree(PROJECT_ROOT / "stacks", copy / "stacks")
    for name in ("Pulumi.yaml", "README.md"):
        shutil.copy2(PROJECT_ROOT / name, copy / name)
    return copy


def rendered_names(folder: Path) -> list[str]:
    """The objects' files and the node label scripts."""
    return sorted(path.name for pattern in ("*.yaml", "*.sh") for path in folder.glob(pattern))


def test_render_into_the_stacks_folder_leaves_every_file_as_it_was(project, capsys):
    before = snapshot(project)
    assert main(["render", "scene1-case2", "--out", str(project / "stacks")]) == 2
    assert snapshot(project) == before
    err = capsys.readouterr().err
    assert "Pulumi.gpu-p40.yaml, which render did not write" in err and "--force" in err
    assert len(err.strip().splitlines()) == 1


def test_render_into_the_project_folder_leaves_every_file_as_it_was(project, capsys, monkeypatch):
    monkeypatch.chdir(project)
    before = snapshot(project)
    assert main(["render", "scene1-case2", "--out", "."]) == 2
    assert snapshot(project) == before
    assert "render: . holds Pulumi.yaml, which render did not write" in capsys.readouterr().err


def test_a_folder_holding_a_file_render_did_not_write_is_refused_naming_it(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["render", "scene1-case2", "--out", str(out)]) == 0
    (out / "notes.txt").write_text("my notes\n")
    before = snapshot(tmp_path)
    capsys.readouterr()
    assert main(["render", "scene1-case1", "--out", str(out)]) == 2
    assert snapshot(tmp_path) == before
    said = capsys.readouterr()
    assert said.out == ""
    assert "holds notes.txt, which render did not write; nothing written" in said.err
    assert "--force to write there anyway (every file render did not write is kept" in said.err


def test_force_keeps_the_users_files_and_removes_only_the_earlier_renderings(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["render", "scene1-case3", "--out", str(out)]) == 0
    (out / "notes.txt").write_text("my notes\n")
    (out / "my-extra.yaml").write_text("kind: ConfigMap\n")
    assert main(["render", "scene1-case1", "--out", str(out), "--force"]) == 0
    # scene1-case3's files are gone; the user's two files are as they were.
    assert (out / "notes.txt").read_text() == "my notes\n"
    assert (out / "my-extra.yaml").read_text() == "kind: ConfigMap\n"
    assert [name for name in rendered_names(out) if name != "my-extra.yaml"] == rendered_names_of("scene1-case1", tmp_path)
    assert [m["metadata"]["name"] for m in read_rendered(out)][:1] == ["tf-scene1-case1"]
    assert len(read_rendered(out)) == 5
    assert "kept my-extra.yaml, notes.txt in " in capsys.readouterr().err


def rendered_names_of(stack: str, tmp_path: Path) -> list[str]:
    fresh = tmp_path / f"fresh-{stack}"
    assert main(["render", stack, "--out", str(fresh)]) == 0
    return rendered_names(fresh)


def test_force_never_overwrites_a_file_render_did_not_write(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "0000-namespace-tf-scene1-case1.yaml").write_text("mine\n")
    before = snapshot(tmp_path)
    assert main(["render", "scene1-case1", "--out", str(out), "--force"]) == 2
    assert snapshot(tmp_path) == before
    assert "0000-namespace-tf-scene1-case1.yaml was not written by render" in capsys.readouterr().err


def test_rendering_a_smaller_experiment_leaves_exactly_its_files(tmp_path):
    out = tmp_path / "out"
    assert main(["render", "scene1-case3", "--out", str(out)]) == 0
    assert main(["render", "scene1-case1", "--out", str(out)]) == 0
    assert sorted(path.name for path in out.iterdir()) == [".tfk8s-render", *rendered_names_of("scene1-case1", tmp_path)]
    # No staging or set-aside folder is left beside it.
    assert sorted(path.name for path in tmp_path.iterdir()) == ["fresh-scene1-case1", "out"]


def test_rendering_into_the_current_folder_again_replaces_it_in_place(tmp_path, monkeypatch):
    out = tmp_path / "out"
    assert main(["render", "scene1-case3", "--out", str(out)]) == 0
    monkeypatch.chdir(out)
    assert main(["render", "scene1-case1", "--out", "."]) == 0
    # A shell in the folder is still in it: the folder was not swapped from under it.
    assert Path.cwd() == out.resolve() and out.is_dir()
    assert len(read_rendered(out)) == 5 and len(rendered_names(out)) == 5 + 2
    assert yaml.safe_load((out / ".tfk8s-render").read_text())["stack"] == "scene1-case1"


def fail_after(calls: int, error: BaseException, real):
    count = {"calls": 0}

    def failing(*args, **kwargs):
        count["calls"] += 1
        if count["calls"] > calls:
            raise error
        return real(*args, **kwargs)
    return failing


@pytest.mark.parametrize("force", [False, True], ids=["replaced", "forced"])
def test_a_disk_that_fills_part_way_leaves_the_earlier_rendering_whole(tmp_path, capsys, monkeypatch, force):
    out = tmp_path / "out"
    assert main(["render", "scene1-case1", "--out", str(out)]) == 0
    before = snapshot(tmp_path)
    full = OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(render_folder, "write_new_file", fail_after(3, full, render_folder.write_new_file))
    args = ["render", "scene1-case3", "--out", str(out), *(["--force"] if force else [])]
    capsys.readouterr()
    assert main(args) == 2
    assert snapshot(tmp_path) == before
    assert capsys.readouterr().err.strip().endswith("cannot write " + str(out) + ": No space left on device; it is as it was")


def test_an_error_while_making_the_objects_leaves_the_earlier_rendering_whole(tmp_path, monkeypatch):
    out = tmp_path / "out"
    assert main(["render", "scene1-case1", "--out", str(out)]) == 0
    before = snapshot(tmp_path)
    monkeypatch.setattr(render_module, "to_yaml", fail_after(4, KeyboardInterrupt(), render_module.to_yaml))
    with pytest.raises(KeyboardInterrupt):
        render_module.render(load_experiment("scene1-case3"), out)
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("flags", [["-o", "yaml"], ["--out", "-"]], ids=["-o yaml", "--out -"])
def test_yaml_on_standard_output_is_the_folders_objects_and_nothing_else(tmp_path, capsys, monkeypatch, flags):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(cli_main, "DEFAULT_RENDER_ROOT", tmp_path / "out")
    assert main(["render", "scene1-case2", *flags]) == 0
    said = capsys.readouterr()
    assert list(tmp_path.iterdir()) == []
    assert "     5  objects of stack scene1-case2 on standard output" in said.err.splitlines()
    assert main(["render", "scene1-case2", "--out", str(tmp_path / "folder")]) == 0
    assert list(yaml.safe_load_all(said.out)) == read_rendered(tmp_path / "folder")


def test_yaml_output_and_a_folder_together_are_refused(tmp_path, capsys):
    assert main(["render", "scene1-case2", "-o", "yaml", "--out", str(tmp_path / "out")]) == 2
    assert "-o yaml writes to standard output" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("out", ["", "  "])
def test_an_empty_folder_name_is_refused_and_the_current_folder_is_left_alone(project, capsys, monkeypatch, out):
    monkeypatch.chdir(project)
    before = snapshot(project)
    with pytest.raises(SystemExit) as exited:
        main(["render", "scene1-case2", "--out", out])
    assert exited.value.code == 2
    assert "argument --out: an empty folder name; give a folder" in capsys.readouterr().err
    assert snapshot(project) == before


def test_a_file_given_as_the_folder_is_one_clear_error(project, capsys, monkeypatch):
    monkeypatch.chdir(project)
    before = snapshot(project)
    assert main(["render", "scene1-case2", "--out", "README.md"]) == 2
    assert main(["render", "scene1-case2", "--out", "README.md/rendered"]) == 2
    assert snapshot(project) == before
    assert capsys.readouterr().err.splitlines() == [
        "render: README.md is a file, not a folder: render writes one YAML file per object into a folder",
        "render: cannot write README.md/rendered: README.md is a file, not a folder",
    ]


def test_a_record_naming_files_outside_its_folder_is_not_trusted(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["render", "scene1-case1", "--out", str(out)]) == 0
    (tmp_path / "precious.yaml").write_text("mine\n")
    record = out / ".tfk8s-render"
    record.write_text(record.read_text() + f"  ../precious.yaml: {sha256_of_file(tmp_path / 'precious.yaml')}\n")
    before = snapshot(tmp_path)
    assert main(["render", "scene1-case1", "--out", str(out), "--force"]) == 2
    assert snapshot(tmp_path) == before
    assert ".tfk8s-render is not a record render can trust (it needs `stack:` and `files:`" in capsys.readouterr().err


def sha256_of_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_record_holds_the_sha256_of_each_file_as_render_wrote_it(tmp_path):
    out = tmp_path / "out"
    assert main(["render", "scene1-case1", "--out", str(out)]) == 0
    record = yaml.safe_load((out / ".tfk8s-render").read_text())
    assert record["files"] == {name: sha256_of_file(out / name) for name in rendered_names(out)}


def test_a_users_file_listed_by_a_record_without_checksums_is_refused_not_removed(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("my notes\n")
    (out / ".tfk8s-render").write_text("stack: x\nfiles: [notes.txt]\n")
    before = snapshot(tmp_path)
    assert main(["render", "scene1-case1", "--out", str(out)]) == 2
    assert snapshot(tmp_path) == before
    assert capsys.readouterr().err == (
        f"render: {out} holds notes.txt, which an older render recorded without its sha256, so render cannot tell "
        "whether it was changed since; nothing written: check the files .tfk8s-render lists, remove those that hold "
        "nothing of yours (or the folder), and render again\n")


@pytest.mark.parametrize("files", ["[README.md]", f"{{README.md: {'ab' * 32}}}"],
                         ids=["older record", "checksum unmatched"])
def test_force_keeps_a_users_file_that_a_record_lists(tmp_path, capsys, files):
    out = tmp_path / "out"
    out.mkdir()
    shutil.copy2(PROJECT_ROOT / "README.md", out / "README.md")
    (out / ".tfk8s-render").write_text(f"stack: x\nfiles: {files}\n")
    assert main(["render", "scene1-case1", "--out", str(out), "--force"]) == 0
    assert (out / "README.md").read_bytes() == (PROJECT_ROOT / "README.md").read_bytes()
    assert f"kept README.md in {out}: render did not write them, or they were changed since" in capsys.readouterr().err
    assert len(read_rendered(out)) == 5


def edit_namespace_file(out: Path, stack: str) -> Path:
    """What a user does to a rendered file: a label of their own."""
    (path,) = out.glob(f"*-namespace-tf-{stack}.yaml")
    namespace = yaml.safe_load(path.read_text())
    namespace["metadata"]["labels"]["team"] = "ranking"
    path.write_text(yaml.safe_dump(namespace))
    return path


def test_a_rendered_file_the_user_edited_is_never_replaced(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["render", "scene1-case1", "--out", str(out)]) == 0
    edited = edit_namespace_file(out, "scene1-case1")
    before = snapshot(tmp_path)
    capsys.readouterr()
    assert main(["render", "scene1-case1", "--out", str(out)]) == 2
    assert f"holds {edited.name}, which render wrote but which was changed since; nothing written" in (
        capsys.readouterr().err)
    assert main(["render", "scene1-case1", "--out", str(out), "--force"]) == 2
    assert capsys.readouterr().err == (
        f"render: {edited} was changed since render wrote it, and the rendering has a file of that name: render "
        "never overwrites it; move it, or render into another folder\n")
    assert snapshot(tmp_path) == before


def test_force_keeps_an_edited_file_the_new_rendering_does_not_have(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["render", "scene1-case1", "--out", str(out)]) == 0
    edited = edit_namespace_file(out, "scene1-case1")
    text = edited.read_text()
    assert main(["render", "scene1-case3", "--out", str(out), "--force"]) == 0
    assert edited.read_text() == text
    assert f"kept {edited.name} in {out}: render did not write them, or they were changed since" in (
        capsys.readouterr().err)
    # Now the user's: not in the record, so no later render removes it.
    assert edited.name not in yaml.safe_load((out / ".tfk8s-render").read_text())["files"]


def test_a_forced_render_cut_off_part_way_is_recognised_as_renders_by_the_next(tmp_path, monkeypatch):
    out = tmp_path / "out"
    assert main(["render", "scene1-case1", "--out", str(out)]) == 0
    (out / "notes.txt").write_text("my notes\n")
    # The record, then three of the six files renamed into place: the trainer's source changed meanwhile.
    monkeypatch.setattr(render_module, "to_yaml", lambda manifest: yaml.safe_dump(manifest) + "# changed\n")
    monkeypatch.setattr(os, "replace", fail_after(1 + 3, KeyboardInterrupt(), os.replace))
    with pytest.raises(KeyboardInterrupt):
        render_module.render(load_experiment("scene1-case1"), out, force=True)
    monkeypatch.undo()
    assert main(["render", "scene1-case1", "--out", str(out), "--force"]) == 0
    assert rendered_names(out) == rendered_names_of("scene1-case1", tmp_path)
    assert read_rendered(out) == read_rendered(tmp_path / "fresh-scene1-case1")


def render_unprivileged(*args: str) -> subprocess.CompletedProcess:
    """`render ARGS` as a user runs it, cut off (and failed) should it wait on what it reads."""
    try:
        return run_python("-m", "components", "render", *args)
    except subprocess.TimeoutExpired:
        pytest.fail(f"render {' '.join(args)} hung")


@pytest.mark.parametrize("kind", ["link to /dev/zero", "pipe", "link to the user's file", "folder"])
def test_a_record_that_is_not_a_plain_file_is_never_read_or_replaced(tmp_path, kind):
    out = tmp_path / "out"
    assert main(["render", "scene1-case1", "--out", str(out)]) == 0
    record = out / ".tfk8s-render"
    users_record = tmp_path / "my-record.yaml"
    users_record.write_bytes(record.read_bytes())
    record.unlink()
    if kind == "pipe":
        os.mkfifo(record)
    elif kind == "folder":
        record.mkdir()
    else:
        record.symlink_to("/dev/zero" if kind == "link to /dev/zero" else users_record)
    before = snapshot(tmp_path)
    result = render_unprivileged("scene1-case1", "--out", str(out))
    assert result.returncode == 2
    assert result.stderr.startswith(f"render: {out} holds .tfk8s-render, which is not a plain file, as render's "
                                    "record is; nothing written")
    result = render_unprivileged("scene1-case1", "--out", str(out), "--force")
    assert result.returncode == 2
    assert result.stderr.startswith(f"render: {record} is not a plain file, and the rendering has a file of that name")
    assert snapshot(tmp_path) == before


def test_a_record_that_cannot_be_read_is_named_as_such(tmp_path):
    out = tmp_path / "out"
    assert main(["render", "scene1-case1", "--out", str(out)]) == 0
    (out / ".tfk8s-render").chmod(0)
    before = snapshot(tmp_path)
    result = render_unprivileged("scene1-case1", "--out", str(out))
    assert result.returncode == 2
    assert result.stderr.startswith(f"render: {out / '.tfk8s-render'} is not a record render can trust (cannot read "
                                    "it: Permission denied)")
    assert snapshot(tmp_path) == before


def test_a_record_bigger_than_any_render_writes_is_not_read_whole(tmp_path, capsys, monkeypatch):
    out = tmp_path / "out"
    assert main(["render", "scene1-case1", "--out", str(out)]) == 0
    monkeypatch.setattr(render_record, "MAX_RECORD_BYTES", 100)
    assert main(["render", "scene1-case1", "--out", str(out)]) == 2
    assert "is not a record render can trust (larger than any record render writes)" in capsys.readouterr().err


def test_a_writable_folder_in_a_read_only_one_is_rendered_in_place(tmp_path):
    shared = tmp_path / "shared"
    out = shared / "team"
    assert main(["render", "scene1-case3", "--out", str(out)]) == 0
    shared.chmod(0o555)
    result = render_unprivileged("scene1-case1", "--out", str(out))
    assert result.returncode == 0, result.stderr
    fresh = rendered_names_of("scene1-case1", tmp_path)
    assert sorted(path.name for path in out.iterdir()) == [".tfk8s-render", *fresh]
    assert read_rendered(out) == read_rendered(tmp_path / "fresh-scene1-case1")
    assert [path.name for path in shared.iterdir()] == ["team"]


def test_a_read_only_folder_is_one_clear_error_and_keeps_its_rendering(tmp_path):
    out = tmp_path / "out"
    assert main(["render", "scene1-case1", "--out", str(out)]) == 0
    read_only(out)
    before = snapshot(tmp_path)
    for force in ([], ["--force"]):
        result = run_python("-m", "components", "render", "scene1-case3", "--out", str(out), *force)
        assert result.returncode == 2, result.stderr
        assert result.stderr == f"render: cannot write {out}: Permission denied; it is as it was\n"
        assert snapshot(tmp_path) == before


def test_a_folder_under_a_read_only_one_is_one_clear_error(tmp_path):
    parent = tmp_path / "shared"
    parent.mkdir()
    read_only(parent)
    result = run_python("-m", "components", "render", "scene1-case1", "--out", str(parent / "out"))
    assert result.returncode == 2
    assert result.stderr == f"render: cannot write {parent / 'out'}: Permission denied; it is as it was\n"
    assert list(parent.iterdir()) == []
