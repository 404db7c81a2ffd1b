"""The real Pulumi engine on the local control plane, beside tfk8s's own applier, in one run.

Starts a private local control plane (kwok servers) and, for scene1-case2 (5
servers, 55 PS and workers) and scene1-case4 (20 servers, 220), times:

- `make apply` (tfk8s's server-side applier) until it returns and until every
  PS and worker pod runs, then `make delete` until the namespace and the node
  labels are gone;
- `make preview` (the engine with the policy pack), `make up` until it returns
  and until every pod runs, a second preview (nothing to change), and
  `make destroy`: the toolchain's Pulumi CLI and Kubernetes provider, the
  program inline through the Automation API, a file backend.

Goal: preview of scene1-case4 within 15 s on the 2-core development machine.

    .venv/bin/python benchmarks/engine.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Callable

PROJECT_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT_ROOT))

from components.objects.render import render  # noqa: E402
from components.objects.loading import load_experiment  # noqa: E402
from tools.engine import EngineDirs, engine_stack, run_engine  # noqa: E402
from tools.localcluster import control_plane, paths  # noqa: E402
from tools.localcluster.client import api_client  # noqa: E402
from tools.localcluster.experiments import apply_manifests, delete_manifests, rendered_objects  # noqa: E402
from tools.localcluster.experiment_pods import wait_for_pods  # noqa: E402
from tools.localcluster.nodes import create_fake_nodes  # noqa: E402

STACKS = ("scene1-case2", "scene1-case4")
GOAL_STACK, GOAL_PREVIEW_S = "scene1-case4", 15.0
POD_TIMEOUT_S = 300.0
BENCH_CLUSTER = paths.ClusterDir(paths.CLUSTER_ROOT / "bench-engine")
COLUMNS = ("apply/up returns", "pods running", "second preview", "delete/destroy")


def timed(action: Callable[[], object]) -> float:
    started = time.monotonic()
    action()
    return time.monotonic() - started


def applier(api, stack: str) -> dict[str, float]:
    """`make apply` then `make delete`, as tools.localcluster runs them."""
    experiment = load_experiment(stack)
    out = BENCH_CLUSTER.root / "out" / stack
    started = time.monotonic()
    render(experiment, out)
    manifests = rendered_objects(experiment, out)
    apply_manifests(api, stack, manifests)
    applied = time.monotonic() - started
    wait_for_pods(api, experiment, POD_TIMEOUT_S, started=started)
    running = time.monotonic() - started
    return {"apply/up returns": applied, "pods running": running,
            "delete/destroy": timed(lambda: delete_manifests(api, stack, manifests))}


def engine(api, stack: str) -> dict[str, float]:
    """`make preview`, `make up`, a second preview, `make destroy`, as tools.engine runs them."""
    experiment = load_experiment(stack)
    target = engine_stack(stack, BENCH_CLUSTER.kubeconfig, EngineDirs(BENCH_CLUSTER.root / "pulumi"))
    quiet = {"on_output": lambda line: None}
    preview = timed(lambda: run_engine(target, "preview", **quiet))
    started = time.monotonic()
    run_engine(target, "up", **quiet)
    up = time.monotonic() - started
    wait_for_pods(api, experiment, POD_TIMEOUT_S, started=started)
    running = time.monotonic() - started
    again = timed(lambda: run_engine(target, "preview", expect_no_changes=True, **quiet))
    return {"preview": preview, "apply/up returns": up, "pods running": running, "second preview": again,
            "delete/destroy": timed(lambda: run_engine(target, "destroy", **quiet))}


def main() -> int:
    print("starting a private local control plane ...", flush=True)
    control_plane.up(BENCH_CLUSTER, tie_to_parent=True)
    rows: dict[tuple[str, str], dict[str, float]] = {}
    try:
        api = api_client(BENCH_CLUSTER.kubeconfig)
        create_fake_nodes(api, [load_experiment(stack).config for stack in STACKS])
        for stack in STACKS:
            for way, measure in (("make apply/delete", applier), ("engine", engine)):
                print(f"  {stack}: {way} ...", flush=True)
                rows[(stack, way)] = measure(api, stack)
    finally:
        control_plane.down(BENCH_CLUSTER)

    print()
    print("seconds (2 cores shared by the control plane, the engine and its provider)")
    print(f"{'stack':<15}{'how':<20}{'preview':>9}" + "".join(f"{name:>18}" for name in COLUMNS))
    for (stack, way), row in rows.items():
        cells = [row.get(name) for name in ("preview", *COLUMNS)]
        print(f"{stack:<15}{way:<20}" + "".join(
            f"{'—' if cell is None else f'{cell:.1f}':>{9 if i == 0 else 18}}" for i, cell in enumerate(cells)))
    print()
    for stack in STACKS:
        ours, theirs = rows[(stack, "make apply/delete")], rows[(stack, "engine")]
        print(f"{stack}: engine / applier, to pods running x{theirs['pods running'] / ours['pods running']:.2f}, "
              f"deletion x{theirs['delete/destroy'] / ours['delete/destroy']:.2f}")
    preview = rows[(GOAL_STACK, "engine")]["preview"]
    met = preview <= GOAL_PREVIEW_S
    print(f"goal: preview of {GOAL_STACK} within {GOAL_PREVIEW_S:.0f} s: {'met' if met else 'MISSED'} ({preview:.1f} s)")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
