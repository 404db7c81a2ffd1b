"""Kubeflow's TFJob and tfk8s side by side on the same real nodes (`make bench-vs-tfjob`).

One team program, one TFJob manifest (tests/team_programs/ctr-tfjob/tfjob.yaml: a TF2
ParameterServerStrategy coordinator on the chief, 1 PS, 2 workers, the program of
tests/team_programs/tf2-ps baked into the team's image): run as a TFJob, applied with kubectl and
run by Kubeflow's training operator v1.8.1 (make cluster-up TFJOB=1), and as its tfk8s stack, the
same YAML through import-tfjob, brought up by the Pulumi engine as `make up` does. Both on the
local cluster's two real nodes (srv-00, srv-01: kubelet, containerd, runc), one after the other,
RUNS times each, alternating. Medians, and the ratio tfk8s / TFJob (below 1: tfk8s is faster):

- seconds from the apply (`kubectl apply`; the start of `pulumi up`) to every task's pod Running,
  to the first training step a worker logs, and to Succeeded (the TFJob's condition; the
  experiment's JobSet Completed);
- after Succeeded, seconds until no PS or worker pod is left (TFJob: its cleanPodPolicy Running);
- a worker pod deleted (`kubectl delete pod`), to its replacement logging a training step;
- where the tasks sat (TFJob: where the scheduler put them; tfk8s: the plan's counts);
- the controllers' own cost during each run: CPU seconds and peak memory of the training operator
  against JobSet's and Kueue's controllers together.

Root only; needs `make toolchain node-image`. The cluster lives under .cluster/bench-tfjob and is
stopped, the host put back, at the end. The last line of output is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

PROJECT_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT_ROOT))

import yaml  # noqa: E402
from kubernetes import client  # noqa: E402

from components.live.status import read_jobset  # noqa: E402
from components.migrate.carry import ImportOptions, carry  # noqa: E402
from components.migrate.stack_yaml import stack_yaml  # noqa: E402
from components.migrate.tfjob import read_tfjob  # noqa: E402
from components.objects.loading import load_experiment  # noqa: E402
from components.plan import labels as L  # noqa: E402
from components.plan.task_roles import TRAINING_CLUSTER  # noqa: E402
from tools.localcluster import control_plane, lifecycle, paths, realnodes  # noqa: E402
from tools.localcluster.client import api_client, is_not_found  # noqa: E402
from tools.localcluster.podlogs import timestamped_log  # noqa: E402
from tools.localcluster.worker_loss import task_pod  # noqa: E402
from tools.nodeimage.archive import ImageConfig, write_image_archive  # noqa: E402
from tools.nodeimage.images import tensorflow_image  # noqa: E402

CLUSTER = paths.ClusterDir(paths.CLUSTER_ROOT / "bench-tfjob")
SERVERS = ("srv-00", "srv-01")
TFJOB_FILE = PROJECT_ROOT / "tests" / "team_programs" / "ctr-tfjob" / "tfjob.yaml"
PROGRAM = PROJECT_ROOT / "tests" / "team_programs" / "tf2-ps" / "train.py"
NAMESPACE = "bench-tfjob"
STACK = "bench-vs-tfjob"
STEPS = 300
UNTIL_STOPPED = 1_000_000  # the lost-worker runs train until deleted
STEP_LINE = "worker: step"
ROLES = TRAINING_CLUSTER  # chief, ps, worker: TFJob labels its replica types by the same names
TFJOB_ROLE_LABEL = "training.kubeflow.org/replica-type"
TFJOB_INDEX_LABEL = "training.kubeflow.org/replica-index"
TFJOB_NAME_LABEL = "training.kubeflow.org/job-name"
# The controllers each side brings; the control plane's own (API server, Job controller) serves both.
CONTROLLERS = {"tfjob": ("training-operator",), "tfk8s": ("jobset-controller", "kueue-controller")}
POLL_S = 0.25
WAIT_S = 600.0
SETTLE_S = 3.0  # a lost worker is deleted once training has run this long


def tfjob_manifest(steps: int, restart_policy: Optional[str] = None) -> dict[str, Any]:
    """The team's TFJob with its steps, each worker logging its steps, in the benchmark's namespace;
    every replica's restartPolicy replaced by `restart_policy` where one is given."""
    manifest = yaml.safe_load(TFJOB_FILE.read_text())
    manifest["metadata"]["namespace"] = NAMESPACE
    for replica in manifest["spec"]["tfReplicaSpecs"].values():
        if restart_policy:
            replica["restartPolicy"] = restart_policy
        for container in replica["template"]["spec"]["containers"]:
            container["args"] = ["--steps", str(steps), "--log-steps"]
    return manifest


class ExperimentFailed(RuntimeError):
    """The experiment failed where it was meant to go on (a lost worker ended it)."""


def team_image(work: Path) -> str:
    """The team's image (the nodes' TensorFlow with the program at /opt/ctr) on both real nodes."""
    manifest = tfjob_manifest(STEPS)
    reference = manifest["spec"]["tfReplicaSpecs"]["Chief"]["template"]["spec"]["containers"][0]["image"]
    rootfs = work / "rootfs"
    (rootfs / "opt" / "ctr").mkdir(parents=True)
    shutil.copy(PROGRAM, rootfs / "opt" / "ctr" / PROGRAM.name)
    archive = work / "ctr.tar"
    write_image_archive(rootfs, reference, ImageConfig(), archive, base=tensorflow_image().archive)
    realnodes.import_archive(CLUSTER, archive)
    return reference


# -- the controllers' own cost ---------------------------------------------------------------------


def _group_usage(group: int) -> tuple[float, int]:
    """CPU seconds and resident bytes of every process in process group `group`."""
    ticks, rss = 0, 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == group:  # pgrp
            ticks += int(fields[11]) + int(fields[12])  # utime, stime
            rss += int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
    return ticks / os.sysconf("SC_CLK_TCK"), rss


@dataclass
class ControllerCost:
    groups: list[int]
    start_cpu_s: float = 0.0
    peak_rss: int = 0

    def __post_init__(self) -> None:
        self.start_cpu_s = sum(_group_usage(group)[0] for group in self.groups)

    def sample(self) -> None:
        self.peak_rss = max(self.peak_rss, sum(_group_usage(group)[1] for group in self.groups))

    def cpu_s(self) -> float:
        return sum(_group_usage(group)[0] for group in self.groups) - self.start_cpu_s


def controller_cost(side: str) -> ControllerCost:
    plane = control_plane.ControlPlane.load(CLUSTER)
    assert plane is not None, "the benchmark's cluster is not running"
    return ControllerCost([plane.processes[name] for name in CONTROLLERS[side]])


# -- the two sides ----------------------------------------------------------------------------------


@dataclass
class Side:
    """How one side applies, reads and deletes the same experiment."""

    name: str
    api: client.ApiClient
    kubeconfig: Path
    work: Path

    def __post_init__(self) -> None:
        self.core = client.CoreV1Api(self.api)

    def apply(self, steps: int) -> None:
        raise NotImplementedError

    def succeeded(self) -> bool:
        raise NotImplementedError

    def failed(self) -> Optional[str]:
        """Why the experiment failed; None while it has not."""
        raise NotImplementedError

    def delete(self) -> None:
        raise NotImplementedError

    def worker_pod(self, index: int) -> Optional[Any]:
        raise NotImplementedError

    def placement(self) -> dict[str, dict[str, int]]:
        table: dict[str, Counter] = {}
        for role in ROLES:
            for pod in self.pods(role):
                if pod.spec.node_name:
                    table.setdefault(pod.spec.node_name, Counter())[role] += 1
        return {node: dict(counts) for node, counts in sorted(table.items())}

    def pods(self, role: str) -> list[Any]:
        raise NotImplementedError

    def namespace(self) -> str:
        raise NotImplementedError


class KubeflowTFJob(Side):
    restart_policy: Optional[str] = None  # the manifest's own

    def _kubectl(self, *args: str) -> None:
        command = [str(paths.binary("kubectl")), "--kubeconfig", str(self.kubeconfig), *args]
        result = subprocess.run(command, capture_output=True, text=True, timeout=300)
        if result.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)}: {result.stderr.strip()}")

    def apply(self, steps: int) -> None:
        manifest = self.work / "tfjob.yaml"
        manifest.write_text(yaml.safe_dump(tfjob_manifest(steps, self.restart_policy)))
        self._kubectl("apply", "-f", str(manifest))

    def _tfjob(self) -> Any:
        name = tfjob_manifest(STEPS)["metadata"]["name"]
        return client.CustomObjectsApi(self.api).get_namespaced_custom_object(
            "kubeflow.org", "v1", NAMESPACE, "tfjobs", name
        )

    def _conditions(self) -> dict[str, dict[str, Any]]:
        return {c["type"]: c for c in self._tfjob().get("status", {}).get("conditions", []) if c["status"] == "True"}

    def succeeded(self) -> bool:
        if (why := self.failed()) is not None:
            raise ExperimentFailed(f"the TFJob failed: {why}")
        return "Succeeded" in self._conditions()

    def failed(self) -> Optional[str]:
        failed = self._conditions().get("Failed")
        return None if failed is None else failed.get("message", failed.get("reason", "Failed"))

    def delete(self) -> None:
        self._kubectl("delete", "-f", str(self.work / "tfjob.yaml"), "--ignore-not-found", "--wait=true")
        wait_for(lambda: not any(self.pods(role) for role in ROLES), "the TFJob's pods gone")

    def pods(self, role: str) -> list[Any]:
        name = tfjob_manifest(STEPS)["metadata"]["name"]
        selector = f"{TFJOB_NAME_LABEL}={name},{TFJOB_ROLE_LABEL}={role}"
        return self.core.list_namespaced_pod(NAMESPACE, label_selector=selector).items

    def worker_pod(self, index: int) -> Optional[Any]:
        for pod in self.pods("worker"):
            if pod.metadata.labels.get(TFJOB_INDEX_LABEL) == str(index) and pod.metadata.deletion_timestamp is None:
                return pod
        return None

    def namespace(self) -> str:
        return NAMESPACE


class Tfk8sStack(Side):
    """The same TFJob through import-tfjob, brought up and destroyed by the Pulumi engine."""

    def _stack_file(self, steps: int) -> Path:
        text = yaml.safe_dump(tfjob_manifest(steps))
        job = read_tfjob(text, "tfjob.yaml")
        imported = carry(job, ImportOptions(stack=STACK, nodes=SERVERS))
        target = self.work / f"Pulumi.{STACK}.yaml"
        header = f"Imported from TFJob '{job.name}' by benchmarks/vs_tfjob.py, as import-tfjob does."
        target.write_text(stack_yaml(imported.values, header, imported.comments))
        return target

    def _engine(self, command: str, stack_file: Path) -> None:
        result = subprocess.run(
            [sys.executable, "-m", "tools.engine", command, str(stack_file), "--kubeconfig", str(self.kubeconfig)],
            cwd=PROJECT_ROOT,
            capture_output=True,
            text=True,
            timeout=WAIT_S,
        )
        if result.returncode != 0:
            raise RuntimeError(f"pulumi {command}: {result.stdout[-2000:]}{result.stderr[-2000:]}")

    def apply(self, steps: int) -> None:
        self.stack_file = self._stack_file(steps)
        self.experiment = load_experiment(str(self.stack_file))
        # `pulumi up` returns once the objects exist; the clock started before it, as with kubectl.
        self.engine_run = subprocess.Popen(
            [sys.executable, "-m", "tools.engine", "up", str(self.stack_file), "--kubeconfig", str(self.kubeconfig)],
            cwd=PROJECT_ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )

    def _terminal_state(self) -> Optional[str]:
        jobset = read_jobset(self.api, self.experiment) or {}
        return (jobset.get("status") or {}).get("terminalState")

    def succeeded(self) -> bool:
        if (why := self.failed()) is not None:
            raise ExperimentFailed(f"the experiment failed: {why}")
        return self._terminal_state() == "Completed"

    def failed(self) -> Optional[str]:
        return "its JobSet Failed" if self._terminal_state() == "Failed" else None

    def delete(self) -> None:
        output, _ = self.engine_run.communicate(timeout=WAIT_S)
        if self.engine_run.returncode != 0:
            raise RuntimeError(f"pulumi up: {output[-3000:]}")
        self._engine("destroy", self.stack_file)
        wait_for(lambda: not any(self.pods(role) for role in ROLES), "the experiment's pods gone")

    def pods(self, role: str) -> list[Any]:
        selector = L.selector_text(self.experiment.stack, (role,))
        try:
            return self.core.list_namespaced_pod(self.experiment.namespace, label_selector=selector).items
        except client.ApiException as error:
            if is_not_found(error):
                return []
            raise

    def worker_pod(self, index: int) -> Optional[Any]:
        return task_pod(self.core, self.experiment, "worker", index)

    def namespace(self) -> str:
        return self.experiment.namespace


# -- measuring ----------------------------------------------------------------------------------------


def wait_for(
    condition: Callable[[], Any], what: str, timeout_s: float = WAIT_S, each: Callable[[], None] = lambda: None
) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        each()
        found = condition()
        if found:
            return found
        time.sleep(POLL_S)
    raise RuntimeError(f"{what}: not within {timeout_s:.0f} s")


def _steps_logged(side: Side, pod: Any) -> bool:
    try:
        return any(STEP_LINE in line for _, line in timestamped_log(side.core, side.namespace(), pod.metadata.name))
    except client.ApiException:
        return False  # its container is starting


def _all_running(side: Side, expected: int) -> bool:
    pods = [pod for role in ROLES for pod in side.pods(role)]
    return len(pods) == expected and all(pod.status.phase == "Running" for pod in pods)


def one_run(side: Side, expected_tasks: int) -> dict[str, Any]:
    """Apply, the start, Succeeded and the cleanup, with the controllers' cost; then delete."""
    cost = controller_cost(side.name)
    started = time.monotonic()
    side.apply(STEPS)
    try:
        wait_for(lambda: _all_running(side, expected_tasks), "every task Running", each=cost.sample)
        running = time.monotonic() - started
        placement = side.placement()
        wait_for(lambda: any(_steps_logged(side, pod) for pod in side.pods("worker")), "a first step", each=cost.sample)
        first_step = time.monotonic() - started
        wait_for(side.succeeded, "Succeeded", each=cost.sample)
        succeeded = time.monotonic() - started
        wait_for(lambda: not (side.pods("ps") or side.pods("worker")), "PS and workers gone", each=cost.sample)
        cleaned = time.monotonic() - started - succeeded
        return {
            "running_s": running,
            "first_step_s": first_step,
            "succeeded_s": succeeded,
            "cleanup_s": cleaned,
            "placement": placement,
            "controller_cpu_s": cost.cpu_s(),
            "controller_peak_mib": cost.peak_rss / 2**20,
        }
    finally:
        side.delete()


def lost_worker(side: Side, expected_tasks: int) -> float:
    """A worker pod deleted while training: seconds until its replacement logs a step; ExperimentFailed
    when the deletion failed the experiment instead."""
    side.apply(UNTIL_STOPPED)
    try:
        wait_for(lambda: _all_running(side, expected_tasks), "every task Running")
        wait_for(lambda: all(_steps_logged(side, pod) for pod in side.pods("worker")), "both workers training")
        time.sleep(SETTLE_S)
        old = side.worker_pod(0)
        assert old is not None, "no worker-0 pod while both workers train"
        deleted = time.monotonic()
        side.core.delete_namespaced_pod(old.metadata.name, side.namespace())

        def replaced() -> Any:
            if (why := side.failed()) is not None:
                raise ExperimentFailed(why)
            pod = side.worker_pod(0)
            return pod is not None and pod.metadata.uid != old.metadata.uid and pod

        replacement = wait_for(replaced, "a replacement worker-0")
        wait_for(lambda: _steps_logged(side, side.worker_pod(0) or replacement), "the replacement's first step")
        return time.monotonic() - deleted
    finally:
        side.delete()


def median(runs: list[dict[str, Any]], key: str) -> float:
    return statistics.median(run[key] for run in runs)


def say(line: str) -> None:
    print(line, flush=True)


def lost_worker_outcome(side: Side, expected_tasks: int) -> float | str:
    """Seconds until the replacement trains, or why the experiment failed instead."""
    try:
        return lost_worker(side, expected_tasks)
    except ExperimentFailed as failed:
        return f"failed: {failed}"


def median_or_outcome(outcomes: list[float | str]) -> float | str:
    """The median of the runs that recovered; the first failure where any run did not."""
    failures = [outcome for outcome in outcomes if isinstance(outcome, str)]
    return failures[0] if failures else statistics.median(o for o in outcomes if not isinstance(o, str))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="runs of each side (default 3)")
    options = parser.parse_args()
    if options.runs < 1:
        parser.error(f"--runs must be at least 1 (got {options.runs})")
    lifecycle.up(CLUSTER, real=SERVERS, tfjob=True, say=say)
    try:
        with tempfile.TemporaryDirectory(prefix="bench-vs-tfjob-") as folder:
            work = Path(folder)
            team_image(work)
            api = api_client(CLUSTER.kubeconfig)
            client.CoreV1Api(api).create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=NAMESPACE)))
            tfjob = KubeflowTFJob("tfjob", api, CLUSTER.kubeconfig, work)
            # The restart policy TFJob documents for retrying a replica that was killed (exit 128+):
            # the manifest's own, OnFailure, leaves a deleted worker's pod Failed, and the TFJob with it.
            tfjob_exit_code = KubeflowTFJob("tfjob", api, CLUSTER.kubeconfig, work)
            tfjob_exit_code.restart_policy = "ExitCode"
            tfk8s = Tfk8sStack("tfk8s", api, CLUSTER.kubeconfig, work)
            sides: dict[str, Side] = {"tfjob": tfjob, "tfk8s": tfk8s}
            lost_sides: dict[str, Side] = {"tfjob": tfjob, "tfjob_exitcode": tfjob_exit_code, "tfk8s": tfk8s}
            expected = sum(r["replicas"] for r in tfjob_manifest(STEPS)["spec"]["tfReplicaSpecs"].values())
            runs: dict[str, list[dict[str, Any]]] = {name: [] for name in sides}
            lost: dict[str, list[float | str]] = {name: [] for name in lost_sides}
            for attempt in range(options.runs):
                for name, side in sides.items():
                    runs[name].append(one_run(side, expected))
                    say(f"{name} run {attempt + 1}: {json.dumps(runs[name][-1])}")
                for name, side in lost_sides.items():
                    lost[name].append(lost_worker_outcome(side, expected))
                    outcome = lost[name][-1]
                    shown = outcome if isinstance(outcome, str) else f"back training {outcome:.1f} s after"
                    say(f"{name} run {attempt + 1}: worker-0 deleted: {shown}")
    finally:
        lifecycle.down(CLUSTER, say=say)

    figures: dict[str, dict[str, Any]] = {}
    say(f"\n{'':36}{'TFJob':>10}{'tfk8s':>10}{'ratio':>8}")
    for key, label in (
        ("running_s", "apply to every task Running (s)"),
        ("first_step_s", "apply to the first step (s)"),
        ("succeeded_s", "apply to Succeeded (s)"),
        ("cleanup_s", "Succeeded to PS/workers gone (s)"),
        ("controller_cpu_s", "controllers' CPU during a run (s)"),
        ("controller_peak_mib", "controllers' peak memory (MiB)"),
    ):
        tfjob_value, tfk8s_value = median(runs["tfjob"], key), median(runs["tfk8s"], key)
        ratio = tfk8s_value / tfjob_value if tfjob_value else None
        figures[key] = {"tfjob": tfjob_value, "tfk8s": tfk8s_value, "ratio": ratio}
        say(f"{label:36}{tfjob_value:>10.1f}{tfk8s_value:>10.1f}{ratio or 0:>8.2f}")
    outcomes = {name: median_or_outcome(values) for name, values in lost.items()}
    recovered = outcomes["tfjob_exitcode"], outcomes["tfk8s"]
    ratio = recovered[1] / recovered[0] if all(isinstance(o, float) for o in recovered) else None  # type: ignore[operator]
    figures["lost_worker_s"] = {**outcomes, "ratio": ratio}
    say("a worker pod deleted, to its replacement logging a step:")
    for name, outcome in outcomes.items():
        say(f"  {name:34}" + (outcome if isinstance(outcome, str) else f"{outcome:.1f} s"))
    if ratio is not None:
        say(f"  tfk8s / TFJob (restartPolicy ExitCode): {ratio:.2f}")
    placements = {name: [run["placement"] for run in runs[name]] for name in sides}
    for name, seen in placements.items():
        say(f"{name} placed the tasks: {'; '.join(json.dumps(p) for p in seen)}")
    say(json.dumps({"runs": options.runs, "figures": figures, "placement": placements, "lost_worker_runs": lost}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
