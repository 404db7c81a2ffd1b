"""Where `make up`'s first seconds go, until the JobSet is requested: stage by stage, quiet and beside
other work, on a private local control plane (kwok servers).

Each run is `make up` of scene1-case1 from nothing (then `make destroy`, untimed), its steps as
tools/engine/__main__.py takes them, in a process of its own that prints when each ended (the clock
is CLOCK_MONOTONIC, one for every process), while this one watches for the JobSet:

  python          the interpreter started (`python -c pass`, timed apart)
  imports         tools.engine and what it imports (tfk8s's modules, Pulumi's SDK, the clients)
  stack checked   load_experiment: the stack file read and validated
  workspace       engine_stack: the settings written, the provider linked, the Automation API's
                  workspace (it runs `pulumi version`) and the stack selected (`pulumi stack select`)
  state read      run_engine's look for what a killed run left (its lock, its pending operations)
  update started  `pulumi up` printed "Updating (": the CLI started and read the stack's state
  program run     the inline program called by the engine
  policy pack loaded      "Loading policy packs...: done"
  first object requested  the first "creating ("
  JobSet requested  the JobSet's "creating ("
  JobSet seen     a watch on JobSets saw it (the API server has it)

Beside other work: two busy processes, one per core, run throughout (stopped by their PIDs).
Goal (issue 67): the JobSet requested within 1.5 s of the start on a quiet machine (median of the
runs).

    .venv/bin/python benchmarks/engine_start.py [--runs N]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT_ROOT))

STACK = "scene1-case1"
GOAL_S = 1.5
WAIT_S = 300.0
# The engine's own timeline, from the lines `pulumi up` prints: (stage, the words of its first line).
# benchmarks/vs_tfjob_sides.py reads the same (this module imports nothing it would time).
ENGINE_MARKS = (
    ("update started", ("Updating (",)),
    ("policy pack loaded", ("Loading policy packs...: done",)),
    ("first object requested", ("kubernetes:", " creating (")),
    ("JobSet requested", (":JobSet ", " creating (")),
    ("JobSet created", (":JobSet ", " created (")),
)
STAGES = (
    "python",
    "imports",
    "stack checked",
    "workspace",
    "state read",
    "update started",
    "program run",
    "policy pack loaded",
    "first object requested",
    "JobSet requested",
    "JobSet seen",
)
MARK = "engine-start-mark"


def child(stack: str, kubeconfig: str, state: str) -> int:
    """One `make up`, as tools/engine/__main__.py runs it, printing each step's end."""

    def mark(name: str) -> None:
        print(json.dumps({MARK: name, "at": time.monotonic()}), flush=True)

    import functools

    from components.objects.loading import load_experiment
    from components.resources.entry_point import main as tfk8s_program
    from components.spec.stack_files import stack_path
    from tools.engine.workspace import EngineDirs, engine_stack, run_engine

    mark("imports")
    load_experiment(stack)
    mark("stack checked")

    def program() -> None:
        mark("program run")
        tfk8s_program(stack_file=stack_path(stack))

    target = engine_stack(stack, Path(kubeconfig), EngineDirs(Path(state)), program=program)
    mark("workspace")
    lines = []

    def on_output(line: str) -> None:
        lines.append((time.monotonic(), line))

    # run_engine's own steps before `pulumi up`, timed by the first line the CLI prints after them.
    import tools.engine.workspace as workspace

    original = workspace.interrupted.say_what_is_pending

    @functools.wraps(original)
    def timed_pending(*args, **kwargs):
        pending = original(*args, **kwargs)
        mark("state read")
        return pending

    workspace.interrupted.say_what_is_pending = timed_pending
    run_engine(target, "up", on_output=on_output)
    for stage, words in ENGINE_MARKS:
        at = next((at for at, line in lines if all(word in line for word in words)), None)
        if at is not None:
            print(json.dumps({MARK: stage, "at": at}), flush=True)
    return 0


def busy() -> None:
    while True:
        pass


def one_run(cluster, api, experiment) -> dict[str, float]:
    from kubernetes import client, watch

    seen: dict[str, float] = {}
    stop = threading.Event()

    def watch_jobsets() -> None:
        custom = client.CustomObjectsApi(api)
        while not stop.is_set():
            stream = watch.Watch()
            for event in stream.stream(
                custom.list_namespaced_custom_object,
                "jobset.x-k8s.io",
                "v1alpha2",
                experiment.namespace,
                "jobsets",
                timeout_seconds=1,
            ):
                if event["type"] == "ADDED":
                    seen.setdefault("JobSet seen", time.monotonic())
            if seen:
                return

    watcher = threading.Thread(target=watch_jobsets, daemon=True)
    watcher.start()
    time.sleep(1.0)  # the watch is open before the clock starts
    state = str(cluster.root / "pulumi")
    started = time.monotonic()
    run = subprocess.run(
        [sys.executable, __file__, "--child", STACK, str(cluster.kubeconfig), state],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=WAIT_S,
    )
    stop.set()
    watcher.join(timeout=10)
    if run.returncode != 0:
        raise RuntimeError(f"make up failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}")
    marks = {}
    for line in run.stdout.splitlines():
        if line.startswith("{") and MARK in line:
            record = json.loads(line)
            marks[record[MARK]] = record["at"] - started
    marks.update({name: at - started for name, at in seen.items()})
    destroy = subprocess.run(
        [
            sys.executable,
            "-m",
            "tools.engine",
            "destroy",
            STACK,
            "--kubeconfig",
            str(cluster.kubeconfig),
            "--state",
            state,
        ],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=WAIT_S,
    )
    if destroy.returncode != 0:
        raise RuntimeError(f"make destroy failed:\n{destroy.stdout[-3000:]}\n{destroy.stderr[-3000:]}")
    return marks


def interpreter_start() -> float:
    started = time.monotonic()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="runs of each kind (default: %(default)s)")
    parser.add_argument("--child", nargs=3, metavar=("STACK", "KUBECONFIG", "STATE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(*args.child)

    from components.objects.loading import load_experiment
    from tools.localcluster import control_plane, paths
    from tools.localcluster.client import api_client
    from tools.localcluster.nodes import create_fake_nodes

    cluster = paths.ClusterDir(paths.CLUSTER_ROOT / "bench-engine-start")
    experiment = load_experiment(STACK)
    print("starting a private local control plane ...", flush=True)
    control_plane.up(cluster, tie_to_parent=True)
    rows: dict[str, list[dict[str, float]]] = {"quiet": [], "beside other work": []}
    try:
        api = api_client(cluster.kubeconfig)
        create_fake_nodes(api, [experiment.config])
        one_run(cluster, api, experiment)  # untimed: the first run's caches (plugins, bytecode, the state folder)
        for kind in rows:
            hogs = [multiprocessing.Process(target=busy, daemon=True) for _ in range(2 if kind != "quiet" else 0)]
            for hog in hogs:
                hog.start()
            try:
                for number in range(args.runs):
                    marks = one_run(cluster, api, experiment)
                    marks["python"] = interpreter_start()
                    rows[kind].append(marks)
                    print(
                        f"  {kind}, run {number + 1}: JobSet requested at {marks.get('JobSet requested', 0):.2f} s",
                        flush=True,
                    )
            finally:
                for hog in hogs:
                    hog.kill()
                    hog.join()
    finally:
        control_plane.down(cluster)

    print(f"\n`make up` of {STACK}: seconds after the command started, medians of {args.runs} runs")
    print(f"{'stage':<24}" + "".join(f"{kind:>20}" for kind in rows))
    medians = {}
    for stage in STAGES:
        cells = []
        for kind, runs in rows.items():
            values = [run[stage] for run in runs if stage in run]
            medians[(kind, stage)] = statistics.median(values) if values else None
            cells.append("—" if not values else f"{statistics.median(values):.2f}")
        print(f"{stage:<24}" + "".join(f"{cell:>20}" for cell in cells))
    requested = medians[("quiet", "JobSet requested")]
    met = requested is not None and requested <= GOAL_S
    print(
        f"\ngoal: the JobSet requested within {GOAL_S} s on a quiet machine: {'met' if met else 'MISSED'} "
        f"({requested if requested is None else f'{requested:.2f}'} s)"
    )
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
