"""How fast a real control plane admits, schedules and places an experiment, and how that scales.

Starts a private local control plane (tools/localcluster: kube-apiserver,
etcd, controller-manager, scheduler, JobSet, kwok nodes) and applies the seed's
largest experiment, scene1-case4 (20 servers, 20 PS, 200 workers), then ten and
fifty times its servers, PS and workers (200 servers and 2,200 tasks; 1,000
servers and 11,000 tasks), under the JobSet model; and scene1-case4 and x10 under
the StatefulSet model for comparison. For each: the time from the start of the
server-side apply until every PS and worker pod is created, bound by the
scheduler and Running (kwok), whether each server then holds exactly its share
(read back from the API server), the bytes of the largest object as the API
server stores it, and the CPU seconds each process spent.

Targets: scene1-case4 within 30 s; x50 bound within 5 minutes, placed exactly.

    .venv/bin/python benchmarks/cluster_apply.py [--scales 1,10,50]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

import yaml

PROJECT_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT_ROOT))

from components.objects.render import render  # noqa: E402
from components.objects.loading import load_experiment  # noqa: E402
from components.spec.stack_files import read_stack_values  # noqa: E402
from program_under_mocks import SEED_STACK  # noqa: E402
from tests.stack_variants import scaled_values  # noqa: E402
from tools.localcluster import control_plane, paths  # noqa: E402
from tools.localcluster.client import api_client  # noqa: E402
from tools.localcluster.experiments import apply_manifests, delete_manifests, rendered_objects  # noqa: E402
from tools.localcluster.experiment_pods import wait_for_pods  # noqa: E402
from tools.localcluster.nodes import create_fake_nodes  # noqa: E402

TARGET_SECONDS = 30.0
TARGET_LARGEST_BOUND_S = 300.0
POD_TIMEOUT_S = 900.0
BENCH_NODE_GRACE = "30m"
BENCH_CLUSTER = paths.ClusterDir(paths.CLUSTER_ROOT / "bench")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def process_cpu(processes: dict[str, int]) -> dict[str, float]:
    return {name: cpu_seconds(pid) for name, pid in processes.items()} | {"client": time.process_time()}


# (workload, scale) in the order they run: the StatefulSet model at the smaller scales, to compare.
RUNS = (("jobset", 1), ("jobset", 10), ("jobset", 50), ("statefulset", 1), ("statefulset", 10))


def stack_file(directory: Path, scale: int, workload: str) -> str:
    """The seed stack with `scale` times its servers and tasks, under `workload`."""
    stack, values = read_stack_values(SEED_STACK)
    values = scaled_values(values, scale) if scale > 1 else copy.deepcopy(values)
    values["tfk8s:cluster"]["workload"] = workload
    path = directory / workload / f"Pulumi.{stack}{f'-x{scale}' if scale > 1 else ''}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({"config": values}, sort_keys=False))
    return str(path)


def placed_exactly(api, experiment) -> bool:
    """Every server holds exactly its share of PS and workers, as the API server has them."""
    from kubernetes import client

    from tools.localcluster.experiments import task_pods

    placed: dict[str, Counter] = {}
    for pod in task_pods(client.CoreV1Api(api), experiment):
        placed.setdefault(pod.spec.node_name, Counter())[pod.metadata.labels["app.kubernetes.io/component"]] += 1
    planned = {
        server: Counter({role: count for role, count in counts.items() if count})
        for server, counts in experiment.plan.per_server().items()
        if any(counts.values())
    }
    return placed == planned


def largest_stored(api, manifests: list[dict]) -> tuple[str, int]:
    """The object the API server stores largest (JSON as it returns it, managed fields and status included)."""
    from kubernetes.dynamic import DynamicClient

    dynamic = DynamicClient(api)
    sizes = {}
    for manifest in manifests:
        resource = dynamic.resources.get(api_version=manifest["apiVersion"], kind=manifest["kind"])
        meta = manifest["metadata"]
        obj = dynamic.get(resource, name=meta["name"], namespace=meta.get("namespace"))
        sizes[f"{manifest['kind']} {meta['name']}"] = len(json.dumps(obj.to_dict(), separators=(",", ":")))
    return max(sizes.items(), key=lambda item: item[1])


def measure(api, plane, stack_or_path: str, delete_after: bool) -> dict:
    experiment = load_experiment(stack_or_path)
    out_dir = BENCH_CLUSTER.root / "out" / experiment.stack
    render(experiment, out_dir)
    manifests = rendered_objects(experiment, out_dir)
    print(f"  {experiment.stack}: applying {len(manifests)} objects", flush=True)
    before = process_cpu(plane.processes)
    started = time.monotonic()
    apply_manifests(api, experiment.stack, manifests)
    applied_s = time.monotonic() - started
    times = wait_for_pods(api, experiment, POD_TIMEOUT_S, started=started)
    after = process_cpu(plane.processes)
    exact = placed_exactly(api, experiment)
    largest = largest_stored(api, manifests)
    if delete_after:
        delete_manifests(api, experiment.stack, manifests)
    pods = experiment.plan.count("ps") + experiment.plan.count("worker")
    return {
        "stack": f"{experiment.stack} ({experiment.workload})",
        "objects": len(manifests),
        "pods": pods,
        "applied_s": applied_s,
        "created_s": times.created_s,
        "bound_s": times.bound_s,
        "running_s": times.running_s,
        "exact": exact,
        "largest": largest,
        "cpu": {name: after[name] - before[name] for name in after},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scales", default="1,10,50", help="which of the JobSet runs (the StatefulSet ones: 1,10)")
    scales = {int(scale) for scale in parser.parse_args().scales.split(",")}
    runs = [(workload, scale) for workload, scale in RUNS if scale in scales]
    print("starting a private local control plane ...", flush=True)
    # A thousand kwok nodes' heartbeats lapse under the load (see control_plane.up): no evictions here.
    plane = control_plane.up(BENCH_CLUSTER, tie_to_parent=True, node_grace=BENCH_NODE_GRACE)
    rows: dict[tuple[str, int], dict] = {}
    try:
        files = {(workload, scale): stack_file(BENCH_CLUSTER.root, scale, workload) for workload, scale in runs}
        api = api_client(BENCH_CLUSTER.kubeconfig)
        nodes = create_fake_nodes(api, [load_experiment(f).config for f in files.values()])
        print(f"  {len(nodes)} fake servers", flush=True)
        for key, path in files.items():
            # One experiment at a time: the models label the same servers.
            rows[key] = measure(api, plane, path, delete_after=key != runs[-1])
    finally:
        control_plane.down(BENCH_CLUSTER)

    print()
    print("seconds from the start of the apply until every ... (cumulative)")
    print(f"{'stack':<34}{'objects':>8}{'pods':>7}{'admitted':>10}{'created':>9}{'bound':>8}{'running':>9}"
          f"{'pods/s':>8}{'exact':>7}  largest object stored")
    for row in rows.values():
        name, size = row["largest"]
        print(
            f"{row['stack']:<34}{row['objects']:>8}{row['pods']:>7}{row['applied_s']:>10.1f}"
            f"{row['created_s']:>9.1f}{row['bound_s']:>8.1f}{row['running_s']:>9.1f}"
            f"{row['pods'] / row['running_s']:>8.0f}{'yes' if row['exact'] else 'NO':>7}  {name}: {size:,} bytes"
        )
    print()
    print("CPU seconds per process during the run (2 cores shared by all)")
    names = list(next(iter(rows.values()))["cpu"])
    print(f"{'stack':<34}" + "".join(f"{name.replace('kube-', '').replace('-controller', ''):>19}" for name in names))
    for row in rows.values():
        print(f"{row['stack']:<34}" + "".join(f"{row['cpu'][name]:>19.1f}" for name in names))

    print()
    met = all(row["exact"] for row in rows.values())
    print(f"every experiment placed exactly: {'met' if met else 'MISSED'}")
    if ("jobset", 1) in rows:
        base = rows["jobset", 1]["running_s"]
        print(f"target {SEED_STACK} within {TARGET_SECONDS:.0f} s: {'met' if base <= TARGET_SECONDS else 'MISSED'} ({base:.1f} s)")
        met = met and base <= TARGET_SECONDS
    if ("jobset", 50) in rows:
        bound = rows["jobset", 50]["bound_s"]
        ok = bound <= TARGET_LARGEST_BOUND_S
        print(f"target x50 bound within {TARGET_LARGEST_BOUND_S:.0f} s: {'met' if ok else 'MISSED'} ({bound:.1f} s)")
        met = met and ok
    for workload in ("jobset", "statefulset"):
        if (workload, 1) in rows:
            for scale in (10, 50):
                if (workload, scale) in rows:
                    ratio = rows[workload, scale]["running_s"] / rows[workload, 1]["running_s"]
                    print(f"{workload} x{scale}: time to Running x{ratio:.2f} the seed's")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
