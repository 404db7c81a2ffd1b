"""A program's `source`: only the program's own files are shipped, and credentials are refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from components.cli.plan_view import plan_table
from components.objects.loading import load_experiment_values
from components.plan.program_source import ProgramSourceError, load_program_source
from components.plan.trainer_bundle import load_trainer_bundle
from components.spec.models import StackConfigError
from components.spec.stack_files import PROJECT_ROOT
from tests.objects.test_program import program_values

SECRET = "s3cr3t-never-shipped"
PEM_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n"
SERVICE_ACCOUNT = (
    '{\n  "type": "service_account",\n  "project_id": "team",\n'
    '  "private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvQ\\n-----END PRIVATE KEY-----\\n"\n}\n'
)


def write(folder: Path, files: dict[str, str]) -> None:
    for relative, content in files.items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)


def shipped(source) -> list[str]:
    return [item.path for item in source.files]


def refusal(project: Path, folder: str) -> str:
    with pytest.raises(ProgramSourceError) as error:
        load_program_source(project, folder)
    return str(error.value)


def test_only_the_programs_own_files_are_shipped(tmp_path):
    write(tmp_path / "prog", {
        "train.py": "print('train')\n",
        "pkg/model.py": "MODEL = 1\n",
        ".env": f"TOKEN={SECRET}\n",
        ".netrc": f"machine example.com login me password {SECRET}\n",
        ".git/config": f"[credential]\n  helper = store {SECRET}\n",
        ".venv/lib/x.py": f"# {SECRET}\n",
        ".gitignore": "data/\n*.ckpt\n!keep.ckpt\n",
        ".tfk8signore": "scratch/\n",
        "data/train.csv": f"{SECRET}\n",
        "model.ckpt": SECRET,
        "keep.ckpt": "weights to start from\n",
        "scratch/notes.txt": f"{SECRET}\n",
        "sub/.gitignore": "*.log\n",
        "sub/run.log": f"{SECRET}\n",
        "sub/eval.py": "print('eval')\n",
    })
    source = load_program_source(tmp_path, "prog")
    assert shipped(source) == ["keep.ckpt", "pkg/model.py", "sub/eval.py", "train.py"]
    data, binary = source.config_map_data()
    assert not binary and not any(SECRET in text for text in data.values())
    assert source.left_out == (
        ".env", ".git/", ".gitignore", ".netrc", ".tfk8signore", ".venv/", "data/", "model.ckpt", "scratch/",
        "sub/.gitignore", "sub/run.log",
    )


def test_a_folder_left_out_is_never_read(tmp_path, monkeypatch):
    write(tmp_path / "prog", {"train.py": "", ".gitignore": "data/\n", "data/part-0/rows.csv": "", ".git/HEAD": ""})
    os.mkfifo(tmp_path / "prog" / "data" / "pipe")  # reading it would hang, listing it is refused as not a file
    listed = []
    real_scandir = os.scandir

    def recording_scandir(path="."):
        listed.append(Path(path).relative_to(tmp_path / "prog").as_posix())
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", recording_scandir)
    source = load_program_source(tmp_path, "prog")
    assert shipped(source) == ["train.py"] and source.left_out == (".git/", ".gitignore", "data/")
    assert listed == ["."]


def test_negations_behave_as_in_git(tmp_path):
    write(tmp_path / "prog", {
        ".gitignore": "*.ckpt\n!best.ckpt\ndata/\n!data/vocab.txt\nlogs/*\n!logs/keep.txt\n",
        "a.ckpt": "", "best.ckpt": "", "deep/best.ckpt": "", "deep/b.ckpt": "",
        "data/vocab.txt": "",  # git cannot re-include a file of an ignored folder
        "logs/run.txt": "", "logs/keep.txt": "",  # but it can one of a folder whose files alone are ignored
        "train.py": "",
    })
    assert shipped(load_program_source(tmp_path, "prog")) == ["best.ckpt", "deep/best.ckpt", "logs/keep.txt", "train.py"]


def test_the_projects_gitignore_applies_inside_the_folder_each_relative_to_its_own(tmp_path):
    write(tmp_path, {
        ".gitignore": "*.ckpt\n/out/\nbuild/\n",
        "prog/.gitignore": "!best.ckpt\n",  # a deeper file decides over a higher one
        "prog/a.ckpt": "", "prog/best.ckpt": "", "prog/out/x.py": "", "prog/train.py": "",
        "build/generated/train.py": "", "build/generated/model.ckpt": "",
    })
    assert shipped(load_program_source(tmp_path, "prog")) == ["best.ckpt", "out/x.py", "train.py"]
    # A folder named on purpose is shipped even when git ignores it, by its own rules.
    assert shipped(load_program_source(tmp_path, "build/generated")) == ["model.ckpt", "train.py"]


def test_a_tfk8signore_can_ship_what_git_ignores(tmp_path):
    write(tmp_path / "prog", {".gitignore": "vocab/\n", ".tfk8signore": "!vocab/\n", "vocab/words.txt": "", "train.py": ""})
    assert shipped(load_program_source(tmp_path, "prog")) == ["train.py", "vocab/words.txt"]


def test_a_link_to_a_file_left_out_is_left_out(tmp_path):
    write(tmp_path / "prog", {".env": f"TOKEN={SECRET}\n", "train.py": ""})
    (tmp_path / "prog" / "settings.txt").symlink_to(".env")
    source = load_program_source(tmp_path, "prog")
    assert shipped(source) == ["train.py"] and "settings.txt" in source.left_out


@pytest.mark.parametrize(
    "name, content, looks_like",
    [
        ("id_rsa", "not even a key, the name is enough\n", "a private key"),
        ("keys/server.pem", "-----BEGIN CERTIFICATE-----\n", "a key or certificate (PEM)"),
        ("tls.key", "", "a private key"),
        ("credentials.json", SERVICE_ACCOUNT, "a credentials file"),
        ("config/trainer-sa.json", SERVICE_ACCOUNT, "a service account key"),
        ("deploy_notes.txt", f"to reach the bucket:\n{PEM_KEY}", "a private key"),
        ("_netrc", "machine example.com password x\n", "a password or token file"),
        ("aws/credentials", "[default]\naws_secret_access_key = x\n", "a credentials file"),
        ("vault.kdbx", "", "a password database"),
    ],
)
def test_a_file_that_looks_like_a_credential_is_refused_with_the_way_to_pass_it_as_a_secret(tmp_path, name, content, looks_like):
    write(tmp_path / "prog", {"train.py": "", name: content})
    message = refusal(tmp_path, "prog")
    assert message.startswith(f"tfk8s:program.source: 'prog/{name}' ({looks_like}") and "looks like a credential" in message
    assert "pulumi config set --secret --path 'tfk8s:program.env.NAME'" in message
    assert "{secret: <Secret>, key: <key>}" in message and "prog/.tfk8signore" in message


def test_every_credential_is_named_at_once_and_reaches_the_user_as_the_stacks_error(tmp_path):
    write(tmp_path / "prog", {"train.py": "", "id_ed25519": PEM_KEY, "ca/server.pem": ""})
    name, values = program_values({"source": "prog", "command": ["python", "train.py"]})
    with pytest.raises(StackConfigError) as error:
        load_experiment_values(name, values, load_trainer_bundle(PROJECT_ROOT), project_root=tmp_path)
    message = str(error.value)
    assert name in message and "'prog/ca/server.pem' (a key or certificate (PEM)), 'prog/id_ed25519' (a private key)" in message
    assert "look like credentials" in message


def test_a_credential_left_out_is_not_refused(tmp_path):
    write(tmp_path / "prog", {
        "train.py": "", ".tfk8signore": "id_rsa\nkeys/\n", ".gitignore": "*.pem\n",
        "id_rsa": PEM_KEY, "keys/sa.json": SERVICE_ACCOUNT, "server.pem": PEM_KEY, ".ssh/id_ed25519": PEM_KEY,
    })
    source = load_program_source(tmp_path, "prog")
    assert shipped(source) == ["train.py"]
    assert {"id_rsa", "keys/", "server.pem", ".ssh/"} <= set(source.left_out)


def test_a_folder_that_cannot_be_listed_is_refused_naming_it(tmp_path, monkeypatch):
    write(tmp_path / "prog", {"train.py": "", "locked/data.py": ""})
    real_scandir = os.scandir

    def refusing_scandir(path="."):
        if Path(path).name == "locked":
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", refusing_scandir)
    assert refusal(tmp_path, "prog") == (
        "tfk8s:program.source: 'prog/locked' cannot be read (Permission denied); make it readable, "
        "or leave it out in prog/.tfk8signore"
    )


def test_a_folder_with_only_files_left_out_says_so(tmp_path):
    write(tmp_path / "prog", {".env": "", ".gitignore": "*.ckpt\n", "model.ckpt": ""})
    assert refusal(tmp_path, "prog") == (
        "tfk8s:program.source: 'prog' holds no files to ship (3 left out: dotfiles, and what .gitignore "
        "or .tfk8signore ignores)"
    )


def test_plan_names_what_was_left_out_of_the_source(tmp_path):
    write(tmp_path / "prog", {"train.py": "", ".env": f"TOKEN={SECRET}\n", ".gitignore": "data/\n", "data/x.csv": ""})
    name, values = program_values({"source": "prog", "command": ["python", "train.py"]})
    experiment = load_experiment_values(name, values, load_trainer_bundle(PROJECT_ROOT), project_root=tmp_path)
    shown = plan_table(experiment.config, experiment.plan, experiment.program_source)
    assert "source prog (1 files" in shown
    assert "left out of source: .env, .gitignore, data/" in shown and SECRET not in shown


def test_a_path_too_long_for_its_configmap_key_is_refused_naming_it(tmp_path):
    """Each folder name fits the file system (at most 255 bytes), but the path, joined with '__' into
    one ConfigMap key, may pass Kubernetes' 253 characters: the API server would refuse the ConfigMap."""
    at_the_bound = "/".join(["d" * 122, "e" * 123, "t.py"])  # its key: 253 characters
    write(tmp_path / "fits", {at_the_bound: "\n"})
    assert shipped(load_program_source(tmp_path, "fits")) == [at_the_bound]
    past_it = "/".join(["d" * 122, "e" * 124, "t.py"])  # 254
    write(tmp_path / "prog", {past_it: "print('train')\n", "ok.py": "\n"})
    said = refusal(tmp_path, "prog")
    assert f"'prog/{past_it}': its ConfigMap key" in said and "is 254 characters" in said and "at most 253" in said, said
