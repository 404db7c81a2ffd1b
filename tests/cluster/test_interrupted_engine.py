"""`make up` stopped half-way, on the local cluster with the real engine: by Ctrl-C, or killed outright
(a closed laptop, a CI job's timeout) while the engine creates the JobSet. The next `make up`
completes with every object as planned, and `make destroy`, after it or straight after the kill,
leaves nothing: no object, no node label, no lock, no unfinished operation in the state.

The kill is made to land inside a create, as it does when a slow admission webhook or a busy API
server holds one: the JobSet controller (the JobSet webhook's server) is paused by its process
group until the engine's state records the create as started, and resumed after the kill."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from components.objects.loading import load_experiment
from components.spec.stack_files import PROJECT_ROOT
from tests.cluster.conftest import TEST_CLUSTER
from tests.cluster.test_cluster import node_labels, pods_by_node
from tests.cluster.test_engine import ENGINE_TIMEOUT_S, POD_WAIT_S, SCENE1, engine, namespace_exists, planned
from tools.engine.workspace import project_name
from tools.localcluster.control_plane import ControlPlane
from tools.localcluster.experiment_pods import wait_for_pods

STACK = "scene1-case2"
OBJECTS = 13  # scene1-case2's resources under the engine (test_engine.py)
# What a terminal does on a second thought: Ctrl-C, then the process group killed if it is still there.
GRACE_AFTER_CTRL_C_S = 10.0


def started_up(kubeconfig: Path, state: Path, log: Path) -> subprocess.Popen:
    """`make up` in a session of its own: a signal to its group reaches the engine's CLI and plugins,
    as a terminal's Ctrl-C reaches make and everything under it."""
    with log.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "tools.engine", "up", STACK, "--kubeconfig", str(kubeconfig), "--state", str(state)],
            cwd=PROJECT_ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def checkpoint(state: Path) -> dict:
    path = state / "state" / ".pulumi" / "stacks" / project_name() / f"{STACK}.json"
    if not path.exists():
        return {}
    return json.loads(path.read_text())["checkpoint"]["latest"] or {}


def pending(state: Path) -> list[str]:
    return [op["resource"]["urn"].split("::")[-1] for op in checkpoint(state).get("pending_operations") or []]


def locks(state: Path) -> list[Path]:
    return sorted((state / "state" / ".pulumi" / "locks").rglob("*.json"))


def wait_for(check, what: str, process: subprocess.Popen, log: Path, timeout_s: float = ENGINE_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if process.poll() is not None:
            pytest.fail(f"`make up` ended (exit {process.returncode}) before {what}:\n{log.read_text()[-3000:]}")
        if time.monotonic() > deadline:
            pytest.fail(f"no {what} within {timeout_s:.0f} s:\n{log.read_text()[-3000:]}")
        time.sleep(0.05)


def cli(command: str, kubeconfig: Path, state: Path) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, "-m", "tools.engine", command, STACK, "--kubeconfig", str(kubeconfig), "--state", str(state)],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=ENGINE_TIMEOUT_S,
    )
    return done.returncode, done.stdout + done.stderr


def assert_as_planned(local_cluster, kubeconfig: Path, state: Path) -> None:
    wait_for_pods(local_cluster.api, load_experiment(STACK), POD_WAIT_S)
    assert pods_by_node(local_cluster, STACK) == planned(STACK)
    again = engine("preview", STACK, kubeconfig, state)
    assert not again.failed, again.tail
    assert set(again.ops.values()) == {"same"} and len(again.ops) == OBJECTS, again.changed()
    assert pending(state) == [] and locks(state) == []


def assert_nothing_left(local_cluster, state: Path, labels_before: dict) -> None:
    assert not namespace_exists(local_cluster, load_experiment(STACK).namespace)
    assert node_labels(local_cluster, SCENE1) == labels_before
    assert checkpoint(state).get("resources") in (None, []) and pending(state) == [] and locks(state) == []


def stop_group(process: subprocess.Popen, first: signal.Signals) -> None:
    os.killpg(process.pid, first)
    try:
        process.wait(timeout=GRACE_AFTER_CTRL_C_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def test_up_stopped_by_ctrl_c_is_completed_by_the_next_up_and_destroyed_to_nothing(local_cluster, tmp_path):
    kubeconfig, state, log = local_cluster.kubeconfig, tmp_path / "engine", tmp_path / "up.log"
    before = node_labels(local_cluster, SCENE1)
    up = started_up(kubeconfig, state, log)
    try:
        wait_for(lambda: "JobSet" in log.read_text(errors="replace"), "the JobSet's step", up, log)
        stop_group(up, signal.SIGINT)
        assert up.returncode != 0, "the interrupted up said it succeeded"

        code, output = cli("up", kubeconfig, state)
        assert code == 0, output[-3000:]
        assert_as_planned(local_cluster, kubeconfig, state)
    finally:
        code, output = cli("destroy", kubeconfig, state)
    assert code == 0, output[-3000:]
    assert_nothing_left(local_cluster, state, before)


@pytest.mark.parametrize("then", ["up", "destroy"])
def test_up_killed_inside_a_create_leaves_a_lock_that_the_next_run_clears(local_cluster, tmp_path, then):
    kubeconfig, state, log = local_cluster.kubeconfig, tmp_path / "engine", tmp_path / "up.log"
    before = node_labels(local_cluster, SCENE1)
    jobset_controller = ControlPlane.load(TEST_CLUSTER).processes["jobset-controller"]
    os.killpg(jobset_controller, signal.SIGSTOP)
    try:
        up = started_up(kubeconfig, state, log)
        wait_for(lambda: f"{STACK}-tf" in pending(state), "the JobSet's create in flight", up, log)
        os.killpg(up.pid, signal.SIGKILL)
        up.wait()
    finally:
        os.killpg(jobset_controller, signal.SIGCONT)
    assert locks(state) != [], "the killed run left no lock: the fault was not made"
    assert pending(state) != []

    try:
        code, output = cli(then, kubeconfig, state)
        assert code == 0, output[-3000:]
        assert "its lock is removed" in output and "interrupted while creating" in output, output[-3000:]
        if then == "up":
            assert_as_planned(local_cluster, kubeconfig, state)
    finally:
        code, output = cli("destroy", kubeconfig, state)
    assert code == 0, output[-3000:]
    assert_nothing_left(local_cluster, state, before)
