"""A secret set as a user sets it (`make pulumi ... config set --secret`) goes up with the real
engine, reaches a running pod's environment, and is plain text nowhere else: not in the stack
file, the engine's state, the preview, the rendered objects or anything a command printed."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kubernetes.stream import stream

from components.objects.loading import load_experiment
from components.plan.object_names import PROGRAM_SECRET
from components.objects.render import render
from tests.cluster.test_engine import ENGINE_TIMEOUT_S, engine
from tests.realpods.conftest import POD_WAIT_S, RealCluster, scaled_to_real_nodes
from tests.stack_variants import write_variant

PROJECT_ROOT = Path(__file__).resolve().parents[2]
TOKEN = "tfk8s-test-token-5b0d2e9c"
PASSPHRASE = "a passphrase of the team's"
# Every task waits, so the test reads the environment of a running pod and then ends the run.
WAITS = ["python", "-c", "import time; print('ready', flush=True); time.sleep(600)"]


def project_with_stack(root: Path, name: str) -> Path:
    """A copy of the project's Pulumi.yaml with one program stack in its stacks/, as a team's checkout."""
    root.mkdir()
    shutil.copy(PROJECT_ROOT / "Pulumi.yaml", root / "Pulumi.yaml")
    (root / "stacks").mkdir()

    def to_program(values: dict) -> None:
        scaled_to_real_nodes("servers", "servers", {})(values)
        del values["tfk8s:trainer"]
        values["tfk8s:cluster"]["ps"]["memory"] = "1Gi"
        values["tfk8s:program"] = {"command": WAITS, "env": {"LEVEL": "debug"}}

    return Path(write_variant(root / "stacks", "scene1-case1", name, to_program))


def make_pulumi(project: Path, state: Path, stack: str, *args: str, secret_input: str) -> subprocess.CompletedProcess:
    """`make pulumi STACK=<stack> ARGS='...'` with the value typed on stdin, as a user would."""
    return subprocess.run(
        [sys.executable, "-m", "tools.engine", "pulumi", stack, "--state", str(state), "--project", str(project), "--", *args],
        cwd=PROJECT_ROOT, input=secret_input, capture_output=True, text=True, timeout=ENGINE_TIMEOUT_S,
        env={**os.environ, "PULUMI_CONFIG_PASSPHRASE": PASSPHRASE},
    )


def running_chief(cluster: RealCluster, stack: str):
    deadline = time.monotonic() + POD_WAIT_S
    while time.monotonic() < deadline:
        running = [pod for pod in cluster.pods(stack, "chief") if pod.status.phase == "Running"]
        if running:
            return running[0]
        time.sleep(1)
    pytest.fail(f"no running chief within {POD_WAIT_S:.0f} s")


# The secret as text, and as a Secret's `data` holds it.
FORMS = (TOKEN.encode(), base64.b64encode(TOKEN.encode()))


def files_holding(folder: Path) -> list[str]:
    return [str(path) for path in folder.rglob("*") if path.is_file() and any(form in path.read_bytes() for form in FORMS)]


def holds(text: str) -> bool:
    return any(form.decode() in text for form in FORMS)


def test_a_secret_set_with_make_pulumi_reaches_the_pod_and_is_plain_text_nowhere(real_cluster, tmp_path, monkeypatch):
    project, state = tmp_path / "project", tmp_path / "engine"
    stack_file = project_with_stack(project, "real-secret")
    said: list[str] = []

    set_secret = make_pulumi(project, state, "real-secret", "config", "set", "--secret", "--path",
                             "tfk8s:program.env.TOKEN", secret_input=TOKEN)
    said += [set_secret.stdout, set_secret.stderr]
    assert set_secret.returncode == 0, set_secret.stderr
    written = stack_file.read_text(encoding="utf-8")
    assert not holds(written) and "secure:" in written and "encryptionsalt:" in written

    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", PASSPHRASE)
    preview = engine("preview", str(stack_file), real_cluster.kubeconfig, state)
    said.append(preview.text)
    assert not preview.failed, preview.tail
    # The engine holds the Secret's values as a secret, shown as [secret] (the provider moves stringData
    # into data).
    secret_inputs = preview.inputs["real-secret-program-env"]
    assert secret_inputs["data"].get("ciphertext") == "[secret]", secret_inputs
    assert not holds(json.dumps(preview.inputs))

    up = engine("up", str(stack_file), real_cluster.kubeconfig, state)
    said.append(up.text)
    try:
        assert not up.failed, up.tail
        chief = running_chief(real_cluster, str(stack_file))
        seen = stream(
            real_cluster.core.connect_get_namespaced_pod_exec, chief.metadata.name, chief.metadata.namespace,
            command=["printenv", "TOKEN"], stderr=True, stdout=True, stdin=False, tty=False,
        )
        assert seen.strip() == TOKEN
        pod_spec = str(chief.spec.to_dict())
        assert TOKEN not in pod_spec and PROGRAM_SECRET in pod_spec

        rendered = tmp_path / "rendered"
        render(load_experiment(str(stack_file)), rendered)
        assert files_holding(rendered) == []
        assert files_holding(state) == [], "the engine's state holds the secret in plain text"
        assert not holds("\n".join(said))
        # The Secret in the cluster holds it (that is where pods read it), and nothing else there does.
        live = real_cluster.core.read_namespaced_secret(PROGRAM_SECRET, chief.metadata.namespace)
        assert base64.b64decode(live.data["TOKEN"]).decode() == TOKEN
        assert not holds(str(live.metadata.to_dict()))
    finally:
        destroy = engine("destroy", str(stack_file), real_cluster.kubeconfig, state)
        assert not destroy.failed, destroy.tail
