"""What a killed engine run leaves in the file backend, and how the next run treats it
(tools/engine/interrupted.py): a lock of a run that ended is removed, one that may still be held
refuses the run naming its holder; unfinished creates are ended once the run has settled them."""

from __future__ import annotations

import gzip
import json
import os
import socket
import subprocess
import time
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace

import pytest
from pulumi import automation as auto

from tools.engine import interrupted

PROJECT, STACK = "tfk8s", "scene1-case2"
JOBSET_URN = (
    f"urn:pulumi:{STACK}::tfk8s::tfk8s:tf_cluster:TFCluster$kubernetes:jobset.x-k8s.io/v1alpha2:JobSet::{STACK}-tf"
)
NAMESPACE_URN = f"urn:pulumi:{STACK}::tfk8s::tfk8s:tf_cluster:TFCluster$kubernetes:core/v1:Namespace::{STACK}-namespace"


def ended_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def unreaped_pid() -> tuple[int, subprocess.Popen]:
    """A child that has ended and that nobody has reaped yet: a zombie, as a killed engine's CLI is."""
    process = subprocess.Popen(["true"])
    for _ in range(1000):
        if Path(f"/proc/{process.pid}/stat").read_text().split(") ")[1].startswith("Z"):
            return process.pid, process
        time.sleep(0.01)
    raise AssertionError("the child never ended")


def write_lock(state: Path, pid: int, host: str = "", at: str = "") -> Path:
    folder = state / ".pulumi" / "locks" / "organization" / PROJECT / STACK
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"lock-{pid}.json"
    held = {
        "pid": pid,
        "username": "root",
        "hostname": host or socket.gethostname(),
        "timestamp": at or datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f000Z"),
    }
    path.write_text(json.dumps(held))
    return path


def operation(urn: str, kind: str, name: str, namespace: str | None, kind_of_op: str = "creating") -> dict:
    metadata = {"name": name, **({"namespace": namespace} if namespace else {})}
    api_version = "v1" if kind == "Namespace" else "jobset.x-k8s.io/v1alpha2"
    resource = {
        "urn": urn,
        "type": f"kubernetes:{kind}",
        "inputs": {"apiVersion": api_version, "kind": kind, "metadata": metadata},
    }
    return {"resource": resource, "type": kind_of_op}


class FakeStack:
    """An automation stack on a file backend: its state as `pulumi stack export` gives it."""

    name = STACK

    def __init__(self, state: Path, deployment: dict | None = None) -> None:
        self.workspace = SimpleNamespace(env_vars={"PULUMI_BACKEND_URL": state.as_uri()})
        self.deployment = deployment or {}
        self.cancelled = 0

    def cancel(self) -> None:
        self.cancelled += 1
        for lock in (Path(self.workspace.env_vars["PULUMI_BACKEND_URL"][len("file://") :]) / ".pulumi").rglob("*.json"):
            lock.unlink()

    def export_stack(self) -> auto.Deployment:
        return auto.Deployment(version=3, deployment=json.loads(json.dumps(self.deployment)))

    def import_stack(self, state: auto.Deployment) -> None:
        self.deployment = state.deployment


def test_a_lock_left_by_a_run_that_ended_on_this_machine_is_removed_and_said(tmp_path):
    pid = ended_pid()
    write_lock(tmp_path, pid)
    stack, said = FakeStack(tmp_path), []
    interrupted.release_a_killed_runs_lock(stack, PROJECT, said.append)
    assert stack.cancelled == 1 and interrupted.stack_locks(tmp_path, PROJECT, STACK) == []
    assert len(said) == 1 and f"pid {pid} of root@{socket.gethostname()}" in said[0] and "lock is removed" in said[0]


@pytest.mark.parametrize("left_by", ["a killed process not yet reaped", "a process whose pid was given again"])
def test_a_lock_whose_writer_is_gone_though_its_pid_answers_is_removed(tmp_path, left_by):
    if left_by == "a killed process not yet reaped":
        pid, child = unreaped_pid()
        write_lock(tmp_path, pid)
    else:
        # This test's own pid, on a lock written before this process started: a process since ended wrote it.
        child = None
        write_lock(tmp_path, os.getpid(), at="2026-01-05T09:00:00.123456789Z")
    stack, said = FakeStack(tmp_path), []
    interrupted.release_a_killed_runs_lock(stack, PROJECT, said.append)
    assert stack.cancelled == 1 and interrupted.stack_locks(tmp_path, PROJECT, STACK) == []
    assert len(said) == 1 and "lock is removed" in said[0]
    if child is not None:
        child.wait()


@pytest.mark.parametrize("holder", ["a running process", "another machine", "an unreadable lock"])
def test_a_lock_that_may_still_be_held_refuses_the_run_naming_its_holder_and_stays(tmp_path, holder):
    if holder == "a running process":
        lock = write_lock(tmp_path, os.getpid())
    elif holder == "another machine":
        lock = write_lock(tmp_path, ended_pid(), host="ci-runner-7")
    else:
        lock = write_lock(tmp_path, ended_pid())
        lock.write_text("{not json")
    write_lock(tmp_path, ended_pid())  # beside a lock of a run that ended: nothing is removed either
    stack = FakeStack(tmp_path)
    with pytest.raises(interrupted.StackHeld) as refused:
        interrupted.release_a_killed_runs_lock(stack, PROJECT, print)
    assert stack.cancelled == 0 and lock.exists()
    assert f"stack '{STACK}' is being changed by another engine run" in str(refused.value)
    assert "wait for it to end" in str(refused.value)


def test_no_lock_no_backend_folder_nothing_to_do(tmp_path):
    stack = FakeStack(tmp_path)
    interrupted.release_a_killed_runs_lock(stack, PROJECT, print)
    stack.workspace.env_vars["PULUMI_BACKEND_URL"] = "https://api.pulumi.com"
    interrupted.release_a_killed_runs_lock(stack, PROJECT, print)
    assert stack.cancelled == 0


def test_unfinished_operations_are_named_by_kind_and_object():
    deployment = {
        "pending_operations": [
            operation(JOBSET_URN, "JobSet", "tf", "tf-scene1-case2"),
            operation(NAMESPACE_URN, "Namespace", "tf-scene1-case2", None, "updating"),
            {
                "resource": {
                    "urn": "urn:pulumi:x::tfk8s::pulumi:providers:kubernetes::default",
                    "type": "pulumi:providers:kubernetes",
                },
                "type": "creating",
            },
        ]
    }
    found = interrupted.pending_operations(deployment)
    assert [p.describe() for p in found] == [
        "JobSet tf-scene1-case2/tf (interrupted while creating)",
        "Namespace tf-scene1-case2 (interrupted while updating)",
    ]
    assert [p.is_create for p in found] == [True, False]
    assert interrupted.pending_operations(None) == [] and interrupted.pending_operations({}) == []


@pytest.mark.parametrize("compressed", [False, True], ids=["json", "json.gz"])
def test_what_a_killed_run_left_is_read_from_the_file_backends_checkpoint_without_the_cli(tmp_path, compressed):
    """The checkpoint's latest deployment is what `pulumi stack export` prints: read without the CLI."""
    deployment = {"resources": [], "pending_operations": [operation(JOBSET_URN, "JobSet", "tf", "tf-scene1-case2")]}
    folder = tmp_path / ".pulumi" / "stacks" / PROJECT
    folder.mkdir(parents=True)
    data = json.dumps({"version": 3, "checkpoint": {"stack": STACK, "latest": deployment}}).encode()
    if compressed:
        (folder / f"{STACK}.json.gz").write_bytes(gzip.compress(data))
    else:
        (folder / f"{STACK}.json").write_bytes(data)
    stack, said = FakeStack(tmp_path), []
    stack.export_stack = None  # the CLI is not asked
    pending = interrupted.say_what_is_pending(stack, PROJECT, "up", said.append)
    assert [p.describe() for p in pending] == ["JobSet tf-scene1-case2/tf (interrupted while creating)"]
    assert len(said) == 1 and "left 1 operation(s) unfinished" in said[0], said


def test_without_a_checkpoint_file_the_cli_exports_the_state(tmp_path):
    deployment = {"pending_operations": [operation(NAMESPACE_URN, "Namespace", "tf-scene1-case2", None, "deleting")]}
    pending = interrupted.say_what_is_pending(FakeStack(tmp_path, deployment), PROJECT, "destroy", print)
    assert [p.describe() for p in pending] == ["Namespace tf-scene1-case2 (interrupted while deleting)"]


def test_after_up_the_creates_whose_object_is_in_the_state_are_ended_and_no_other(tmp_path):
    still_out = JOBSET_URN.replace("-tf", "-tensorboard")
    deployment = {
        "resources": [{"urn": JOBSET_URN}],
        "pending_operations": [
            operation(JOBSET_URN, "JobSet", "tf", "tf-scene1-case2"),
            operation(still_out, "JobSet", "tensorboard", "tf-scene1-case2"),
            operation(NAMESPACE_URN, "Namespace", "tf-scene1-case2", None, "deleting"),
        ],
    }
    stack = FakeStack(tmp_path, deployment)
    pending = interrupted.pending_operations(deployment)
    interrupted.settle_pending_creates(stack, "up", pending, print)
    left = [(op["resource"]["urn"], op["type"]) for op in stack.deployment["pending_operations"]]
    assert left == [(still_out, "creating"), (NAMESPACE_URN, "deleting")]
    assert stack.deployment["resources"] == [{"urn": JOBSET_URN}]


def test_after_destroy_every_create_is_ended_once_its_object_is_deleted(tmp_path, monkeypatch):
    deployment = {"resources": [], "pending_operations": [operation(JOBSET_URN, "JobSet", "tf", "tf-scene1-case2")]}
    deleted = []
    monkeypatch.setattr(interrupted, "_delete_objects_of", lambda stack, creates, say: deleted.extend(creates))
    stack = FakeStack(tmp_path, deployment)
    interrupted.settle_pending_creates(stack, "destroy", interrupted.pending_operations(deployment), print)
    assert [c.urn for c in deleted] == [JOBSET_URN]
    assert stack.deployment["pending_operations"] == []


def test_a_preview_or_a_run_without_unfinished_creates_leaves_the_state_alone(tmp_path):
    deployment = {"pending_operations": [operation(JOBSET_URN, "JobSet", "tf", "tf-scene1-case2")]}
    stack = FakeStack(tmp_path, deployment)
    stack.import_stack = None  # any import would fail
    interrupted.settle_pending_creates(stack, "preview", interrupted.pending_operations(deployment), print)
    interrupted.settle_pending_creates(stack, "up", [], print)
