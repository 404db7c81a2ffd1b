"""A value set with `pulumi config set --secret` never appears in plain text.

Under the engine (here its mocks) the program gets the value decrypted and is told which keys are
secret; from the stack file (`plan`, `render`, `diff`, `export`) it is still encrypted. Either way
the pods read it from the experiment's own Secret, and no object, output or command shows it.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from components.cli.main import main as components_main
from components.plan.object_names import PROGRAM_SECRET
from components.objects.render import read_rendered
from components.spec.secrets import SECRET_PLACEHOLDER
from components.spec.stack_files import read_stack_values
from tests.harness import run_program

TOKEN = "s3cr3t-token-value-7f1c"
ENCRYPTED = "v1:AAAABBBBccccDDDD:9f8e7d6c5b4a"
# How the Pulumi SDK marks a secret value on its way to the engine (pulumi/runtime/rpc.py).
SECRET_SIGNATURE_KEY, SECRET_SIGNATURE = "4dabf18193072939515e22adb298388d", "1b47061264138c4ac30d75fd1eb44270"
PROGRAM = {
    "image": "registry.example/team/ranker:1.0",
    "command": ["python", "train.py"],
    "args": ["--token-file", "none", "--level", "$(LEVEL)"],
    "env": {"TOKEN": TOKEN, "LEVEL": "debug"},
}


def program_values(env: dict) -> tuple[str, dict]:
    stack, values = read_stack_values("scene1-case1")
    values = copy.deepcopy(values)
    del values["tfk8s:trainer"]
    values["tfk8s:cluster"]["image"] = PROGRAM["image"]
    values["tfk8s:cluster"]["ps"]["memory"] = "2Gi"
    values["tfk8s:program"] = {key: value for key, value in PROGRAM.items() if key != "image"} | {"env": env}
    return stack, values


def env_of(pod_spec: dict) -> dict[str, dict]:
    (container,) = pod_spec["containers"]
    return {entry["name"]: entry for entry in container["env"]}


def pod_specs(run) -> list[dict]:
    (jobset,) = run.of_kind("JobSet")
    return [job["template"]["spec"]["template"]["spec"] for job in jobset.manifest["spec"]["replicatedJobs"]]


def test_a_secret_env_value_reaches_the_pods_only_through_the_experiments_secret_kept_secret_by_the_engine():
    stack, values = program_values({"TOKEN": TOKEN, "LEVEL": "debug"})
    run = run_program(stack, values, secret_keys=["tfk8s:program"])

    (secret,) = run.of_kind("Secret")
    assert secret.manifest["metadata"]["name"] == PROGRAM_SECRET
    # The engine gets the values as Pulumi secrets (wrapped in its secret signature): encrypted in
    # the state, [secret] in a preview.
    assert secret.manifest["stringData"] == {SECRET_SIGNATURE_KEY: SECRET_SIGNATURE, "value": {"LEVEL": "debug", "TOKEN": TOKEN}}
    assert {"data", "stringData"} <= set(secret.secret_outputs)

    for spec in pod_specs(run):
        token = env_of(spec)["TOKEN"]
        assert token == {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": PROGRAM_SECRET, "key": "TOKEN"}}}
    # Nothing else the program registers or exports holds the value.
    for resource in run.resources:
        if resource is not secret:
            assert TOKEN not in resource.wire_text, f"{resource.type} {resource.name} holds the secret"
    assert TOKEN not in json.dumps(run.outputs)
    # The Secret exists before any pod that reads it.
    (jobset,) = run.of_kind("JobSet")
    assert secret.urn in jobset.dependencies


def test_without_secrets_no_secret_is_created_and_env_values_stay_as_written():
    stack, values = program_values({"LEVEL": "debug"})
    run = run_program(stack, values)
    assert run.of_kind("Secret") == []
    for spec in pod_specs(run):
        assert env_of(spec)["LEVEL"] == {"name": "LEVEL", "value": "debug"}


@pytest.mark.parametrize(
    "key, edit",
    [
        ("tfk8s:cluster", lambda values: None),
        ("tfk8s:nodePools", lambda values: None),
    ],
    ids=["cluster-key-secret", "pools-key-secret"],
)
def test_a_secret_outside_program_env_is_refused_naming_the_key(key, edit):
    stack, values = program_values({"LEVEL": "debug"})
    edit(values)
    with pytest.raises(Exception) as raised:
        run_program(stack, values, secret_keys=[key])
    message = str(raised.value)
    assert f"stack '{stack}'" in message and key in message and "tfk8s:program.env" in message


def write_encrypted_stack(folder: Path, name: str) -> Path:
    """A stack file as `pulumi config set --secret --path tfk8s:program.env.TOKEN` leaves it."""
    _, values = program_values({"TOKEN": {"secure": ENCRYPTED}, "LEVEL": "debug"})
    path = folder / f"Pulumi.{name}.yaml"
    path.write_text(yaml.safe_dump({"encryptionsalt": "v1:c2FsdA==:v1:abc:def", "config": values}), encoding="utf-8")
    return path


def test_commands_reading_the_stack_file_show_the_secret_as_a_placeholder_and_render_says_so(tmp_path, capsys):
    stack = write_encrypted_stack(tmp_path, "secret-env")
    for command in (["plan", str(stack)], ["export", str(stack)], ["diff", str(stack), "scene1-case1"]):
        components_main(command)
        printed = capsys.readouterr()
        assert ENCRYPTED not in printed.out + printed.err, command
        if command[0] == "export":
            # trainer.local takes a Secret's value from the shell, as it does for a team's own Secret;
            # a plain value stays a value.
            exported = json.loads(printed.out)["program"]["env"]
            assert exported == {"TOKEN": {"secret": PROGRAM_SECRET, "key": "TOKEN"}, "LEVEL": "debug"}

    out = tmp_path / "rendered"
    assert components_main(["render", str(stack), "--out", str(out)]) == 0
    printed = capsys.readouterr()
    # The Secret, with placeholders, is a template that `kubectl apply -f` on the folder does not read.
    (template,) = out.glob(f"*-secret-{PROGRAM_SECRET}.yaml.template")
    secret = yaml.safe_load(template.read_text(encoding="utf-8"))
    assert secret["stringData"] == {"TOKEN": SECRET_PLACEHOLDER}
    create = (f"  kubectl -n {secret['metadata']['namespace']} create secret generic {PROGRAM_SECRET} "
              "--from-literal=TOKEN=...")
    said = f"render: Secret {PROGRAM_SECRET} is written as {template}, which `kubectl apply -f {out}` does not read"
    assert said in printed.err
    assert create in printed.err.splitlines()
    # What kubectl reads of the folder (.json, .yaml, .yml) holds neither the value nor a placeholder.
    applied = "".join(path.read_text(encoding="utf-8") for path in out.iterdir()
                      if path.suffix in (".json", ".yaml", ".yml"))
    assert ENCRYPTED not in applied and SECRET_PLACEHOLDER not in applied and "kind: Secret" not in applied
    assert "Secret" not in [manifest["kind"] for manifest in read_rendered(out)]
    pods = [yaml.safe_load(path.read_text()) for path in out.glob("*-jobset-*.yaml")]
    assert "secretKeyRef" in json.dumps(pods) and '"TOKEN", "value"' not in json.dumps(pods)

    # One stream for `| kubectl apply -f -`: the Secret left out of it, and said so.
    assert components_main(["render", str(stack), "-o", "yaml"]) == 0
    printed = capsys.readouterr()
    assert "Secret" not in [manifest["kind"] for manifest in yaml.safe_load_all(printed.out)]
    assert SECRET_PLACEHOLDER not in printed.out and ENCRYPTED not in printed.out
    assert f"render: Secret {PROGRAM_SECRET} is left out of the stream" in printed.err
    assert create in printed.err.splitlines()


def test_an_encrypted_value_anywhere_but_program_env_is_refused_naming_its_path(tmp_path, capsys):
    _, values = program_values({"LEVEL": "debug"})
    values["tfk8s:cluster"]["image"] = {"secure": ENCRYPTED}
    path = tmp_path / "Pulumi.secret-image.yaml"
    path.write_text(yaml.safe_dump({"config": values}), encoding="utf-8")
    assert components_main(["plan", str(path)]) == 2
    error = capsys.readouterr().err
    assert "tfk8s:cluster.image: is a secret" in error and "tfk8s:program.env" in error and ENCRYPTED not in error


def test_under_the_engine_a_secret_outside_env_is_refused_by_its_path_from_the_stack_file(tmp_path, monkeypatch):
    """The engine says only that tfk8s:program holds a secret; the stack file says where. A secret
    argument would be plain text in every pod spec: refused, naming the path and never the value."""
    stack, values = program_values({"LEVEL": "debug"})
    values["tfk8s:program"]["args"] = ["--token", TOKEN]
    on_disk = copy.deepcopy(values)
    on_disk["tfk8s:program"]["args"] = ["--token", {"secure": ENCRYPTED}]
    monkeypatch.setattr("components.spec.stack_files.STACKS_DIR", tmp_path)
    (tmp_path / f"Pulumi.{stack}.yaml").write_text(yaml.safe_dump({"config": on_disk}), encoding="utf-8")
    with pytest.raises(Exception) as raised:
        run_program(stack, values, secret_keys=["tfk8s:program"])
    message = str(raised.value)
    assert "tfk8s:program.args[1]: is a secret" in message and TOKEN not in message


def test_under_the_engine_only_the_values_the_stack_file_encrypts_go_through_the_secret(tmp_path, monkeypatch):
    stack, values = program_values({"TOKEN": TOKEN, "LEVEL": "debug"})
    on_disk = copy.deepcopy(values)
    on_disk["tfk8s:program"]["env"]["TOKEN"] = {"secure": ENCRYPTED}
    monkeypatch.setattr("components.spec.stack_files.STACKS_DIR", tmp_path)
    (tmp_path / f"Pulumi.{stack}.yaml").write_text(yaml.safe_dump({"config": on_disk}), encoding="utf-8")
    run = run_program(stack, values, secret_keys=["tfk8s:program"])
    (secret,) = run.of_kind("Secret")
    assert secret.manifest["stringData"]["value"] == {"TOKEN": TOKEN}
    for spec in pod_specs(run):
        # A plain value stays a value: the kubelet expands $(NAME) in it, which it would not in a Secret's.
        assert env_of(spec)["LEVEL"] == {"name": "LEVEL", "value": "debug"}


def test_a_secret_typed_as_a_number_is_carried_as_text_and_never_echoed():
    stack, values = program_values({"PIN": 987654321, "LEVEL": "debug"})
    run = run_program(stack, values, secret_keys=["tfk8s:program"])
    (secret,) = run.of_kind("Secret")
    assert secret.manifest["stringData"]["value"]["PIN"] == "987654321"
