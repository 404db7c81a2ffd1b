"""Faults beyond a lost pod, each injected while a real experiment trains on the real nodes, each undone
(docs/lifecycle.md, "When the cluster fails").

A server that dies: srv-01, holding both workers, goes silent as a machine that loses its power or its
network does (tools/localcluster/server_faults.py: its pods frozen, its kubelet, containerd and
NetworkPolicy agent stopped, its addresses dropped on the pod bridge; its Node left in place). Its
Node turns NotReady, its pods stay listed, and nothing replaces them: `status` names the server, the
tasks that wait on it and the taint that releases them. The operator applies it, as status says; the
replacements wait for srv-01 (strict placement). The server comes back: its kubelet ends the pods it
had, and no second copy of any task runs. The taint removed, the replacements run and training goes
on. Two pods of one task never run at once, sampled throughout from the API server."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import signal
import subprocess
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Iterator

import pytest
from kubernetes import client

from components.cli.main import main
from components.live.lost_servers import OUT_OF_SERVICE, OUT_OF_SERVICE_VALUE
from components.objects.loading import load_experiment
from components.plan import labels as L
from tests.realpods.conftest import (
    POD_WAIT_S,
    REAL_CLUSTER,
    UNTIL_STOPPED,
    RealCluster,
    local_volume_folder,
    scaled_to_real_nodes,
)
from tests.stack_variants import write_variant
from tools.localcluster import host
from tools.localcluster.node_files import NodeDir, cgroup_name, nodes_dir
from tools.localcluster.outages import processes_away
from tools.localcluster.realnodes_teardown import node_shims
from tools.localcluster.server_faults import dead_server, dropped
from trainer.log_lines import read_progress_line

LOST = "srv-01"
# Kubernetes' node-monitor-grace-period (50 s) and the node controller's own period, with room for a
# slow machine: the Node is NotReady well within it.
NOT_READY_WITHIN_S = 150.0


def isolated_stack(cluster: RealCluster, name: str) -> str:
    """scene2-case1's shape on the real nodes: the chief and the PS on srv-00, both workers on srv-01."""
    edit = scaled_to_real_nodes("ps-servers", "worker-servers", {"steps": UNTIL_STOPPED, "checkpointEvery": 0}, ps=1)
    return str(write_variant(cluster.stacks_dir, "scene2-case1", name, edit))


def wait(check, what: str, timeout_s: float = POD_WAIT_S, every_s: float = 0.5):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(every_s)
    pytest.fail(f"no {what} within {timeout_s:.0f} s")


class TwoCopiesWatch:
    """Samples the experiment's pods every half second: a task with two pods running at once (neither
    being deleted) is recorded."""

    def __init__(self, cluster: RealCluster, stack: str) -> None:
        self.cluster, self.namespace, self.selector = (
            cluster,
            load_experiment(stack).namespace,
            L.selector_text(load_experiment(stack).stack),
        )
        self.seen: list[str] = []
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        core = self.cluster.core
        while not self._stop.wait(0.5):
            pods = core.list_namespaced_pod(self.namespace, label_selector=self.selector).items
            running = Counter(
                (pod.metadata.labels.get(L.WORKLOAD), pod.metadata.labels.get(L.COMPLETION_INDEX))
                for pod in pods
                if pod.status.phase == "Running" and pod.metadata.deletion_timestamp is None
            )
            self.seen += [f"{group}-{index}: {count} pods" for (group, index), count in running.items() if count > 1]
            self.samples += 1

    def __enter__(self) -> "TwoCopiesWatch":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def status_json(cluster: RealCluster, stack: str, capsys) -> tuple[int, dict]:
    code = main(["status", stack, "--kubeconfig", str(cluster.kubeconfig), "--json"])
    return code, json.loads(capsys.readouterr().out)


def taint(cluster: RealCluster, present: bool) -> None:
    node = cluster.core.read_node(LOST)
    taints = [t for t in node.spec.taints or [] if t.key != OUT_OF_SERVICE]
    if present:
        taints.append({"key": OUT_OF_SERVICE, "value": OUT_OF_SERVICE_VALUE, "effect": "NoExecute"})
    cluster.core.patch_node(LOST, {"spec": {"taints": taints}})


def ready(cluster: RealCluster) -> bool:
    conditions = cluster.core.read_node(LOST).status.conditions or []
    return any(c.type == "Ready" and c.status == "True" for c in conditions)


def last_step(cluster: RealCluster, stack: str, after: float = 0.0) -> tuple[float, int] | None:
    """The chief's latest progress line logged after `after` (seconds since the epoch): (when, step)."""
    found = None
    for log in cluster.running_logs(stack, "chief"):
        for stamp, line in log.lines:
            progress = read_progress_line(line)
            if progress is not None and stamp > after:
                found = (stamp, progress.step)
    return found


def test_a_dead_server_is_named_by_status_released_by_the_taint_and_training_goes_on(real_cluster, tmp_path, capsys):
    stack = isolated_stack(real_cluster, "real-dead-server")
    with real_cluster.running(stack, tmp_path):
        wait(lambda: last_step(real_cluster, stack), "progress line from the chief", 300.0)
        workers = {pod.metadata.name: pod.status.pod_ip for pod in real_cluster.pods(stack, "worker")}
        assert {pod.spec.node_name for pod in real_cluster.pods(stack, "worker")} == {LOST}
        node = NodeDir(nodes_dir(REAL_CLUSTER) / LOST)
        tainted = False
        with TwoCopiesWatch(real_cluster, stack) as watch:
            try:
                with dead_server(REAL_CLUSTER, LOST, workers.values()):
                    lost_at = time.time()
                    wait(lambda: not ready(real_cluster), f"{LOST} NotReady", NOT_READY_WITHIN_S)
                    not_ready_s = time.time() - lost_at
                    code, seen = status_json(real_cluster, stack, capsys)
                    assert code == 1
                    (server,) = seen["lostServers"]
                    assert server["server"] == LOST and server["tasks"] == ["worker-0", "worker-1"]
                    assert (
                        server["release"]
                        == f"kubectl taint node {LOST} {OUT_OF_SERVICE}={OUT_OF_SERVICE_VALUE}:NoExecute"
                    )
                    phases = {task["task"]: task["phase"] for task in seen["tasks"]}
                    assert phases["worker-0"] == phases["worker-1"] == "Unknown" and phases["ps-0"] == "Running"

                    taint(real_cluster, True)  # what status says to do, once the machine is known to be down
                    tainted = True
                    released_at = time.time()

                    def replacements_wait() -> bool:
                        pods = real_cluster.pods(stack, "worker")
                        return len(pods) == 2 and all(
                            p.metadata.name not in workers and not p.spec.node_name for p in pods
                        )

                    wait(replacements_wait, "replacement worker pods, waiting for the server")
                    replaced_s = time.time() - released_at
                    code, seen = status_json(real_cluster, stack, capsys)
                    assert seen["lostServers"][0]["outOfService"] is True
                    assert all(
                        "waits for srv-01, out of service" in t["reason"]
                        for t in seen["tasks"]
                        if t["task"].startswith("worker-")
                    )

                # Back: its kubelet ends the pods it had (deleted from the API meanwhile); none runs again.
                wait(lambda: ready(real_cluster), f"{LOST} Ready again", NOT_READY_WITHIN_S)
                wait(
                    lambda: not node_shims(node) and not host.processes_in_cgroup(cgroup_name(LOST)),
                    f"the old workers' processes on {LOST} ended",
                )
                assert all(not p.spec.node_name for p in real_cluster.pods(stack, "worker")), (
                    "a replacement ran before the taint went"
                )
            finally:
                if tainted:
                    taint(real_cluster, False)  # the command status names once the server is back
            untainted_at = time.time()
            resumed = wait(
                lambda: last_step(real_cluster, stack, after=untainted_at), "progress after the server came back", 300.0
            )
        assert watch.samples > 20 and watch.seen == [], watch.seen
        print(
            f"{LOST} NotReady {not_ready_s:.0f} s after it died; replacements created {replaced_s:.0f} s after the "
            f"taint; training on {resumed[0] - untainted_at:.0f} s after the taint was removed"
        )


PARTITION_S = 30.0


def test_a_worker_cut_off_from_the_ps_for_30_s_trains_on_once_the_link_returns(real_cluster, tmp_path):
    """Every packet between worker-1's pod and the PS' pod dropped on the pod bridge for 30 s, then let
    through: the experiment goes on after the link returns (or would end naming the worker); it never
    hangs, and nothing is restarted."""
    stack = isolated_stack(real_cluster, "real-partition")
    with real_cluster.running(stack, tmp_path):
        wait(lambda: last_step(real_cluster, stack), "progress line from the chief", 300.0)
        (ps,) = real_cluster.pods(stack, "ps")
        worker = real_cluster.task_pod(stack, "worker", 1)
        with dropped([worker.status.pod_ip], [ps.status.pod_ip]):
            cut_at = time.time()
            time.sleep(PARTITION_S)  # the fault's own length, not a race: nothing is awaited here
            during = last_step(real_cluster, stack, after=cut_at + 5.0)
        healed_at = time.time()
        resumed = wait(
            lambda: last_step(real_cluster, stack, after=healed_at + 1.0), "progress after the link returned", 300.0
        )
        assert real_cluster.jobset(stack)["status"].get("restarts", 0) == 0, "a partition restarted the experiment"
        assert {pod.metadata.name for pod in real_cluster.pods(stack, "ps")} == {ps.metadata.name}
        print(
            f"partition of {PARTITION_S:.0f} s: the chief {'went on with worker-0' if during else 'waited'} meanwhile;"
            f" training on {resumed[0] - healed_at:.1f} s after the link returned"
        )


def chief_log_file(cluster: RealCluster, stack: str) -> Path:
    """The chief container's log as its kubelet writes it on the host: readable with the API away."""
    chief = cluster.running_chief(stack)
    folder = f"{chief.metadata.namespace}_{chief.metadata.name}_{chief.metadata.uid}"
    return nodes_dir(REAL_CLUSTER) / chief.spec.node_name / "pod-logs" / folder / "tensorflow" / "0.log"


def step_in_file(log: Path) -> int:
    """The chief's latest step in its container log (CRI lines: time, stream, tag, text)."""
    steps = [read_progress_line(line.split(" ", 3)[-1]) for line in log.read_text(errors="replace").splitlines()]
    return max((progress.step for progress in steps if progress is not None), default=-1)


def trainer_processes(pod_uid: str) -> list[int]:
    """The trainer's processes in one pod (its cgroup carries the pod's UID), not the sandbox's."""
    found = []
    for pid in host.processes_in_cgroup(cgroup_name(LOST)):
        try:
            cgroups = Path(f"/proc/{pid}/cgroup").read_text()
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if pod_uid.replace("-", "_") in cgroups.replace("-", "_") and b"trainer" in command:
            found.append(pid)
    return found


def test_the_control_plane_restarted_mid_run_training_goes_on_and_a_worker_lost_meanwhile_comes_back_once(
    real_cluster, tmp_path, capsys
):
    """etcd and the API server stopped (by PID) while the experiment trains, and worker-1's trainer killed
    while they are away: the chief's step keeps advancing, `status`, `top` and `logs` each say in one
    line that the API server does not answer, and once they are started again status reads the cluster
    within seconds and the Job replaces worker-1, once."""
    stack = isolated_stack(real_cluster, "real-control-plane")
    with real_cluster.running(stack, tmp_path):
        wait(lambda: last_step(real_cluster, stack), "progress line from the chief", 300.0)
        log = chief_log_file(real_cluster, stack)
        lost = real_cluster.task_pod(stack, "worker", 1)
        with processes_away(REAL_CLUSTER, ("etcd", "kube-apiserver")):
            for command in (["status", stack], ["top", stack], ["logs", stack, "chief-0"]):
                code = main([*command, "--kubeconfig", str(real_cluster.kubeconfig)])
                out, err = capsys.readouterr()
                assert code == 2 and out == "" and "Traceback" not in err, (command, out, err)
                assert "does not answer" in err and len(err.strip().splitlines()) == 1, (command, err)

            killed = trainer_processes(lost.metadata.uid)
            assert killed, "worker-1's trainer was not found on the host"
            for pid in killed:
                os.kill(pid, signal.SIGKILL)
            before = step_in_file(log)
            wait(lambda: step_in_file(log) > before + 100, "the chief's steps while the API server is away", 120.0)
        back_at = time.monotonic()
        wait(lambda: main(["status", stack, "--kubeconfig", str(real_cluster.kubeconfig)]) in (0, 1), "status answering")
        answered_s = time.monotonic() - back_at
        capsys.readouterr()

        def worker_1_pods() -> list:
            return [p for p in real_cluster.pods(stack, "worker") if p.metadata.labels.get(L.COMPLETION_INDEX) == "1"]

        def replaced() -> bool:
            return any(p.metadata.uid != lost.metadata.uid and p.status.phase == "Running" for p in worker_1_pods())

        wait(replaced, "worker-1's replacement running")
        assert len(worker_1_pods()) == 2, [p.metadata.name for p in worker_1_pods()]  # the lost pod, one replacement
        resumed_at = time.time()
        wait(lambda: last_step(real_cluster, stack, after=resumed_at), "progress after the restart", 300.0)
        print(f"control plane back: status answered {answered_s:.1f} s after the restart")


def test_the_jobset_and_kueue_controllers_stopped_while_a_worker_is_lost_it_comes_back_once(real_cluster, tmp_path):
    """The JobSet and Kueue controllers stopped (by PID), worker-1's pod deleted meanwhile: the Job
    replaces it (the Job controller runs on), and the controllers, started again, restart nothing and
    replace it no second time."""
    stack = isolated_stack(real_cluster, "real-controllers")
    with real_cluster.running(stack, tmp_path):
        wait(lambda: last_step(real_cluster, stack), "progress line from the chief", 300.0)
        lost = real_cluster.task_pod(stack, "worker", 1)
        others = {p.metadata.uid for role in ("chief", "ps") for p in real_cluster.pods(stack, role)}
        with processes_away(REAL_CLUSTER, ("jobset-controller", "kueue-controller")):
            real_cluster.core.delete_namespaced_pod(lost.metadata.name, lost.metadata.namespace)
            wait(lambda: (p := real_cluster.task_pod(stack, "worker", 1)) is not None and p.metadata.uid != lost.metadata.uid
                 and p.status.phase == "Running", "worker-1's replacement running while the controllers are away")
        replacement = real_cluster.task_pod(stack, "worker", 1)
        resumed_at = time.time()
        wait(lambda: last_step(real_cluster, stack, after=resumed_at), "progress after the controllers' restart", 300.0)
        # The controllers caught up: nothing restarted, no second replacement.
        assert real_cluster.jobset(stack)["status"].get("restarts", 0) == 0
        assert real_cluster.task_pod(stack, "worker", 1).metadata.uid == replacement.metadata.uid
        assert {p.metadata.uid for role in ("chief", "ps") for p in real_cluster.pods(stack, role)} == others


def test_metrics_server_stopped_top_and_diagnose_name_the_missing_source_and_read_the_kubelets(
    real_cluster, tmp_path, capsys
):
    """metrics-server stopped (by PID) while the experiment trains: `top` and `diagnose` say that the
    metrics API's server does not answer and read each node's kubelet summary instead (the cluster's
    admin may), with figures for every task; no traceback. Started again, `top` reads the metrics API."""
    stack = isolated_stack(real_cluster, "real-metrics-down")
    kubeconfig = ["--kubeconfig", str(real_cluster.kubeconfig)]
    with real_cluster.running(stack, tmp_path):
        wait(lambda: last_step(real_cluster, stack), "progress line from the chief", 300.0)
        with processes_away(REAL_CLUSTER, ("metrics-server",)):
            code = main(["top", stack, *kubeconfig])
            out, err = capsys.readouterr()
            assert code == 0 and "Traceback" not in err, err
            assert (
                "CPU and memory from the kubelet summary (each node's kubelet through the API server's node proxy), "
                "instead of the metrics API: metrics.k8s.io is registered, but its server does not answer" in out
            ), out

            def every_task_measured() -> dict | None:
                # A container's first CPU figure comes with its kubelet's second sample, seconds after its start.
                code = main(["top", stack, "--json", *kubeconfig])
                seen = json.loads(capsys.readouterr().out)
                assert code == 0 and seen["metrics_source"] == "kubelet summary", seen
                return seen if all(task["cpu_cores"] is not None for task in seen["tasks"]) else None

            wait(every_task_measured, "CPU figures of every task from the kubelet summary", 120.0, every_s=2.0)

            code = main(["diagnose", stack, "--seconds", "30", "--json", *kubeconfig])
            out, err = capsys.readouterr()
            assert code in (0, 1) and "Traceback" not in err, err
            assert json.loads(out)["metrics_source"] == "kubelet summary"

        def metrics_api_back() -> bool:
            code = main(["top", stack, "--json", *kubeconfig])
            out, _ = capsys.readouterr()
            return code == 0 and json.loads(out)["metrics_source"] == "metrics.k8s.io"

        wait(metrics_api_back, "top reading the metrics API again", 120.0, every_s=2.0)


@contextlib.contextmanager
def small_filesystem(folder: Path, size: str) -> Iterator[None]:
    """A tmpfs of `size` mounted on `folder` (under the cluster's own folder) for the block: a disk
    that can fill up. Unmounted after, lazily where a pod's bind mount of it lingers."""
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tfk8s-fault", str(folder)], check=True)
    try:
        yield
    finally:
        if subprocess.run(["umount", str(folder)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(folder)], check=True)


def fill(folder: Path) -> Path:
    """Write a file into `folder` until its filesystem has no space left; the file."""
    filler = folder / "filler"
    with filler.open("wb") as out:
        try:
            while True:
                out.write(b"\0" * 2**20)
                out.flush()
        except OSError as error:
            assert error.errno == errno.ENOSPC, error
    return filler


def chief_events(cluster: RealCluster, stack: str, name: str) -> list[dict]:
    """Event `name` as every chief pod of the experiment logged it, ended ones too, oldest pod first."""
    namespace = load_experiment(stack).namespace
    found = []
    for pod in sorted(cluster.pods(stack, "chief"), key=lambda p: p.metadata.creation_timestamp):
        try:
            found += [event for _, event in cluster.log(namespace, pod.metadata.name).events(name)]
        except client.ApiException:
            continue  # its container is starting
    return found


def test_a_full_checkpoint_volume_fails_the_chief_naming_it_and_a_restart_resumes_once_space_is_freed(
    real_cluster, local_volume, tmp_path
):
    """The chief's checkpoint volume fills up mid-run: the chief stops, naming the checkpoint it could not
    write and why (no space left), and its Job starts it again from the last complete checkpoint, which
    stays readable. Once space is freed, the restarted chief resumes from that checkpoint, not from step
    0, and writes the next one."""

    def durable(values: dict) -> None:
        scaled_to_real_nodes("servers", "servers", {"steps": UNTIL_STOPPED, "checkpointEvery": 200}, ps=1, workers=1)(
            values
        )
        values["tfk8s:cluster"]["chief"]["checkpointVolume"] = {"size": "1Gi", "storageClass": local_volume}

    stack = str(write_variant(real_cluster.stacks_dir, "scene1-case1", "real-full-disk", durable))
    folder = local_volume_folder(real_cluster)
    with small_filesystem(folder, "64m"):
        with real_cluster.running(stack, tmp_path):
            first = real_cluster.wait_for_event(stack, "checkpoint", step=lambda s: s is not None and s >= 200)
            filler = fill(folder)
            failed = wait(lambda: chief_events(real_cluster, stack, "failed"), "the chief's failure", 300.0)[0]
            assert "could not write the checkpoint of step" in failed["error"], failed
            assert "No space left on device" in failed["error"], failed
            filler.unlink()  # space freed
            restored = wait(lambda: chief_events(real_cluster, stack, "restored"), "a restarted chief", 300.0)[0]
            assert restored["step"] >= first["step"] > 0, "resumed from the last complete checkpoint, not step 0"
            wait(
                lambda: [e for e in chief_events(real_cluster, stack, "checkpoint") if e["step"] > restored["step"]],
                "a checkpoint after the resume",
                300.0,
            )
            print(f"full volume: the chief stopped ({failed['error']}); resumed from step {restored['step']}")
