"""Real pods on a real kubelet node against the same training as local processes.

One run, figures side by side, on one real node (srv-00: kubelet, containerd,
runc, CoreDNS) of the local cluster:

- the timeline of an experiment in pods: apply -> every task serving -> the
  chief starts training -> first step -> the chief complete, and where the
  time before training goes (TensorFlow's import in each pod);
- examples/s in pods against `python -m trainer.local` with the same trainer
  settings and task counts (2 PS, 2 workers; goal: at least 0.85), with the
  pods as tfk8s renders them and with CPU limits set equal to the requests;
- how long after the chief completes the PS and worker pods are gone (the
  JobSet ends them; they held the node's CPU and memory until then);
- a lost worker: from `kubectl delete pod` of a worker to its replacement's
  first steps, stage by stage (the Job controller's back-off, the pod's start,
  TensorFlow's start, the chief's first call to it), for worker-1, then
  worker-0, then worker-1 again (its own back-off doubles; the other's not);
- CPU seconds and peak memory of each pod, from its cgroup.

Root only; needs `make toolchain node-image`. The cluster lives under
.cluster/bench-real and is stopped, the host put back, at the end.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import yaml

PROJECT_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT_ROOT))

from kubernetes import client  # noqa: E402

from components.plan import labels as L  # noqa: E402
from components.objects.render import render  # noqa: E402
from components.objects.loading import load_experiment  # noqa: E402
from tools.localcluster import host, lifecycle, paths  # noqa: E402
from tools.localcluster.client import api_client  # noqa: E402
from tools.localcluster.experiments import apply_manifests, delete_manifests, rendered_objects  # noqa: E402
from tools.localcluster.experiment_pods import wait_for_pods  # noqa: E402
from tools.localcluster.podlogs import timestamped_log  # noqa: E402
from tools.localcluster.worker_loss import WorkerReturn, lose_worker  # noqa: E402
from tools.nodeimage.images import tensorflow_image  # noqa: E402

CLUSTER = paths.ClusterDir(paths.CLUSTER_ROOT / "bench-real")
SERVER = "srv-00"
TRAINER = {"embeddingRows": 100000, "batchSize": 512, "steps": 1500, "checkpointEvery": 500, "partition": "auto"}
# Requests that fill the node's 2 CPUs: what a user sizing this server would ask for.
RESOURCES = {"chief": "200m", "ps": "400m", "workers": "500m"}
TRAINER_PYTHON = PROJECT_ROOT / ".venv-trainer" / "bin" / "python"
GOAL_RATIO = 0.85
WAIT_S = 600
# Workers lost one after the other in one run (worker-1 twice: its own back-off doubles).
LOST_WORKERS = (1, 0, 1)
UNTIL_STOPPED = 10**7  # the worker-loss run trains until the losses are measured, then is deleted


def stack_values(**trainer: Any) -> dict[str, Any]:
    return {
        "tfk8s:nodePools": [{"name": "servers", "nodes": [SERVER]}],
        "tfk8s:cluster": {
            "placement": "colocated",
            "image": tensorflow_image().reference,
            "ps": {"replicas": 2, "pool": "servers", "cpu": RESOURCES["ps"]},
            "workers": {"replicas": 2, "pool": "servers", "cpu": RESOURCES["workers"], "memory": "1Gi"},
            "chief": {"cpu": RESOURCES["chief"], "memory": "1Gi"},
        },
        "tfk8s:trainer": {**TRAINER, **trainer},
    }


def run_local() -> dict[str, Any]:
    """trainer.local with the same settings and task counts; its summary."""
    flags = {"embeddingRows": "--embedding-rows", "batchSize": "--batch-size", "steps": "--steps",
             "checkpointEvery": "--checkpoint-every", "partition": "--partition"}
    args = [str(TRAINER_PYTHON), "-m", "trainer.local", "--ps", "2", "--workers", "2", "--progress-every", "500"]
    for key, flag in flags.items():
        args += [flag, str(TRAINER[key])]
    result = subprocess.run(args, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=WAIT_S)
    if result.returncode != 0:
        raise RuntimeError(f"trainer.local failed: {result.stderr[-2000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


@dataclass
class PodUsage:
    cpu_s: float = 0.0
    peak_mib: float = 0.0


@dataclass
class PodRun:
    label: str
    summary: dict[str, Any] = field(default_factory=dict)
    timeline: dict[str, float] = field(default_factory=dict)  # seconds after the apply
    import_s: dict[str, float] = field(default_factory=dict)  # container start -> serving
    usage: dict[str, PodUsage] = field(default_factory=dict)
    ended_s: float = 0.0  # chief complete -> no PS or worker pod left


def _pod_cgroup(hierarchy: str, uid: str) -> Optional[Path]:
    root = Path("/sys/fs/cgroup") / hierarchy / f"tfk8s-{SERVER}"
    matches = list(root.glob(f"kubepods*/**/pod{uid}")) or list(root.glob(f"kubepods*/pod{uid}"))
    return matches[0] if matches else None


def _read_usage(uid: str) -> Optional[PodUsage]:
    cpu, memory = _pod_cgroup("cpuacct", uid), _pod_cgroup("memory", uid)
    try:
        return PodUsage(
            cpu_s=int((cpu / "cpuacct.usage").read_text()) / 1e9,
            peak_mib=int((memory / "memory.max_usage_in_bytes").read_text()) / 2**20,
        )
    except (OSError, TypeError, ValueError):
        return None


def run_in_pods(api: client.ApiClient, stack: str, label: str, cpu_limits: bool) -> PodRun:
    core, batch = client.CoreV1Api(api), client.BatchV1Api(api)
    chief_job = f"{L.WORKLOAD}=chief"
    experiment = load_experiment(stack)
    namespace = experiment.namespace
    with tempfile.TemporaryDirectory() as out:
        render(experiment, Path(out))
        manifests = rendered_objects(experiment, Path(out))
    if cpu_limits:
        for manifest in manifests:
            for container in _containers(manifest):
                container["resources"]["limits"]["cpu"] = container["resources"]["requests"]["cpu"]
    run = PodRun(label)
    usage: dict[str, PodUsage] = {}
    names: dict[str, str] = {}
    task_logs: dict[str, tuple[Any, list]] = {}  # PS and workers: read while they run (they end with the chief)
    done = threading.Event()

    def sample() -> None:
        # A pod's cgroup goes with its container: sample while it runs.
        while not done.is_set():
            for pod in core.list_namespaced_pod(namespace).items:
                names[pod.metadata.uid] = pod.metadata.name
                read = _read_usage(pod.metadata.uid)
                if read:
                    usage[pod.metadata.uid] = read
                if pod.metadata.labels[L.COMPONENT] != "chief" and pod.metadata.name not in task_logs:
                    try:
                        lines = timestamped_log(core, namespace, pod.metadata.name)
                    except client.ApiException:
                        continue  # not started yet
                    if any("serving on" in line for _, line in lines):
                        task_logs[pod.metadata.name] = (pod, lines)
            done.wait(1.0)

    applied = time.time()
    apply_manifests(api, experiment.stack, manifests)
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    deadline = time.monotonic() + WAIT_S
    while not any(job.status.succeeded for job in batch.list_namespaced_job(namespace, label_selector=chief_job).items):
        if time.monotonic() > deadline:
            raise RuntimeError(f"{label}: the chief did not complete within {WAIT_S} s")
        time.sleep(0.5)
    completed = time.time()
    tasks = L.selector_text(experiment.stack, ("ps", "worker"))
    while core.list_namespaced_pod(namespace, label_selector=tasks).items:
        if time.time() - completed > WAIT_S:
            raise RuntimeError(f"{label}: PS and workers still there {WAIT_S} s after the chief completed")
        time.sleep(0.2)
    run.ended_s = time.time() - completed
    done.set()
    sampler.join()

    serving: dict[str, float] = {}
    for name, (pod, lines) in task_logs.items():
        serving[name] = next(t for t, line in lines if "serving on" in line)
        run.import_s[name] = serving[name] - _container_started(pod)
    (chief,) = core.list_namespaced_pod(namespace, label_selector=L.selector_text(experiment.stack, ("chief",))).items
    lines = timestamped_log(core, namespace, chief.metadata.name)
    events = {json.loads(line)["event"]: t for t, line in lines if line.startswith("{")}
    first_step = next(t for t, line in lines if line.startswith("step "))
    run.summary = json.loads(next(line for _, line in reversed(lines) if '"summary"' in line))
    run.timeline.update({"chief starts training": events["start"] - applied, "first step reported": first_step - applied})
    run.import_s[chief.metadata.name] = events["cluster_serving"] - _container_started(chief)
    run.timeline["every task serving"] = max(serving.values()) - applied
    run.timeline["chief complete"] = completed - applied
    run.usage = {names[uid]: value for uid, value in usage.items() if uid in names}
    delete_manifests(api, experiment.stack, manifests)
    return run


def lose_workers(api: client.ApiClient, stack: str) -> list[WorkerReturn]:
    """Train until stopped; lose LOST_WORKERS one after the other, each once the previous is back."""
    experiment = load_experiment(stack)
    with tempfile.TemporaryDirectory() as out:
        render(experiment, Path(out))
        manifests = rendered_objects(experiment, Path(out))
    apply_manifests(api, experiment.stack, manifests)
    try:
        wait_for_pods(api, experiment, WAIT_S)
        return [lose_worker(client.CoreV1Api(api), experiment, index, timeout_s=WAIT_S) for index in LOST_WORKERS]
    finally:
        delete_manifests(api, experiment.stack, manifests)


def _container_started(pod: Any) -> float:
    state = pod.status.container_statuses[0].state
    return (state.running or state.terminated).started_at.timestamp()


def _containers(manifest: dict) -> list[dict]:
    """The containers of a workload, or of every replicated Job of a JobSet."""
    if manifest["kind"] == "JobSet":
        return [c for job in manifest["spec"]["replicatedJobs"] for c in job["template"]["spec"]["template"]["spec"]["containers"]]
    spec = manifest.get("spec", {}).get("template", {}).get("spec", {})
    return spec.get("containers", [])


def main() -> int:
    host.require_root()
    print(f"settings: {json.dumps(TRAINER)}; 2 PS, 2 workers; CPU requests {RESOURCES}", flush=True)
    started = time.monotonic()
    local = run_local()
    print(f"trainer.local: {local['examples_per_sec']:.0f} examples/s ({time.monotonic() - started:.0f} s)", flush=True)

    with tempfile.TemporaryDirectory() as stacks:
        stack = str(Path(stacks) / "Pulumi.bench-real.yaml")
        Path(stack).write_text(yaml.safe_dump({"config": stack_values()}, sort_keys=False))
        losses_stack = str(Path(stacks) / "Pulumi.bench-real-losses.yaml")
        Path(losses_stack).write_text(yaml.safe_dump({"config": stack_values(steps=UNTIL_STOPPED, checkpointEvery=0)}))
        started = time.monotonic()
        lifecycle.up(CLUSTER, real=[SERVER], tie_to_parent=True)
        print(f"cluster with real node {SERVER} up in {time.monotonic() - started:.0f} s", flush=True)
        try:
            api = api_client(CLUSTER.kubeconfig)
            runs = [
                run_in_pods(api, stack, "pods as rendered (CPU requests, no CPU limit)", cpu_limits=False),
                run_in_pods(api, stack, "pods with CPU limits = requests", cpu_limits=True),
            ]
            losses = lose_workers(api, losses_stack)
        finally:
            lifecycle.down(CLUSTER)
    report(local, runs)
    report_losses(losses)
    return 0


def report_losses(losses: list[WorkerReturn]) -> None:
    print("\na lost worker: seconds after `kubectl delete pod` (creation and start are whole seconds, as the API stores them)")
    stages = [stage for stage, _ in losses[0].stages()]
    print(f"  {'loss':<16}" + "".join(f"{stage:>28}" for stage in stages))
    for number, loss in enumerate(losses, 1):
        print(f"  {f'{number}. {loss.task}':<16}" + "".join(f"{seconds:>28.1f}" for _, seconds in loss.stages()))
    for loss in losses:
        print(f"  {loss.task}: Job back-off {loss.back_off_s:.1f} s, pod and TensorFlow start {loss.start_s:.1f} s, "
              f"chief reaching it {loss.resume_s:.1f} s")


def report(local: dict[str, Any], runs: list[PodRun]) -> None:
    first = runs[0]
    print("\nseconds after the apply (pods as rendered)")
    for stage, seconds in sorted(first.timeline.items(), key=lambda item: item[1]):
        print(f"  {stage:<24} {seconds:6.1f}")
    imports = sorted(first.import_s.values())
    print(f"  container start -> serving (TensorFlow import), per pod: {imports[0]:.1f} to {imports[-1]:.1f} s")
    print(f"  training (chief's own count): {first.summary['seconds']:.1f} s for {first.summary['steps']} steps")

    print(f"\n{'run':<48} {'examples/s':>10} {'ratio':>6}")
    print(f"{'trainer.local (processes, 2 PS, 2 workers)':<48} {local['examples_per_sec']:>10.0f} {1.0:>6.2f}")
    for run in runs:
        ratio = run.summary["examples_per_sec"] / local["examples_per_sec"]
        print(f"{run.label:<48} {run.summary['examples_per_sec']:>10.0f} {ratio:>6.2f}")
    ratio = first.summary["examples_per_sec"] / local["examples_per_sec"]
    print(f"goal pods / local >= {GOAL_RATIO}: {'met' if ratio >= GOAL_RATIO else 'MISSED'} ({ratio:.2f})")

    print("\nPS and worker pods gone after the chief completed (the JobSet ends them), seconds")
    for run in runs:
        print(f"  {run.label:<48} {run.ended_s:.1f}")

    print("\nper pod over the run: CPU seconds, peak memory MiB")
    for run in runs:
        print(f"  {run.label}")
        for name, use in sorted(run.usage.items()):
            print(f"    {name:<20} {use.cpu_s:7.1f} s {use.peak_mib:8.0f} MiB")


if __name__ == "__main__":
    sys.exit(main())
