"""Kubeflow's TFJob and tfk8s side by side on the same real nodes (`make bench-vs-tfjob`).

Two team programs, each one TFJob manifest, run as a TFJob (applied with kubectl, run by Kubeflow's
training operator v1.9.4: make cluster-up TFJOB=1) and as its tfk8s stack (the same YAML through
import-tfjob), brought up by the Pulumi engine as `make up` does and by tfk8s's own applier as
`make apply` does (the runs to Succeeded only: a lost task is the same cluster's work either way), on
the local cluster's two real nodes (srv-00, srv-01: kubelet, containerd, runc), one after the other,
RUNS times each, alternating:

- tf2-ps: tests/team_programs/ctr-tfjob/tfjob.yaml, a TF2 ParameterServerStrategy coordinator on the
  chief, 1 PS, 2 workers (the program of tests/team_programs/tf2-ps), 300 steps;
- tf1-between-graph: tests/team_programs/tf1-between-graph/tfjob.yaml, PS and Worker replicas only
  as Kubeflow's TF1 dist-mnist example (1 PS, 2 workers, worker 0 the chief; its train.py through
  run.sh), 600 global steps.

Each program is baked into the team's image. Each worker logs its steps (--log-steps). Per program,
medians and the ratios tfk8s / TFJob, engine and applier (below 1: tfk8s is faster):

- seconds from the apply (`kubectl apply`; the start of `pulumi up`) to every task's pod Running,
  split where the workload (the TFJob; the JobSet) is first seen: the client's part (kubectl; the
  Pulumi engine) and the cluster's (controllers, scheduler, kubelet); then the start stage by stage:
  the engine's steps as `pulumi up` printed them (its output timed line by line, and printed), the
  rest polled every 0.25 s (JobSet's Jobs, every pod created, scheduled, Running, the client
  returned);
- to the first training step a worker logs, and to Succeeded (the TFJob's condition; the JobSet
  Completed);
- after Succeeded, seconds until no PS or worker pod is left running (TFJob: its cleanPodPolicy);
- the controllers' own cost during each run: CPU seconds and peak memory of the training operator
  against JobSet's and Kueue's controllers together;
- where the tasks sat (TFJob: where the scheduler put them; tfk8s: its plan);
- a task lost while every worker trains, until training goes on: worker-0's pod deleted (as kubectl
  delete pod does), to its replacement logging a step; ps-0's pod deleted, to a worker logging a step after
  the new PS started; worker-0 evicted through the Eviction API (policy/v1), to its replacement
  logging a step. TFJob with the manifest's restartPolicy (OnFailure) and with ExitCode. A run in
  which the experiment failed instead, or training did not go on within 600 s, is reported as such.

Root only; needs `make toolchain node-image`; run it under the cluster lock as make does (flock
/tmp/tfk8s-cluster.lock). The cluster lives under .cluster/bench-tfjob (the operator's log in its
logs/training-operator.log) and is stopped, the host put back, at the end; after an interrupted run,
`benchmarks/vs_tfjob.py --down` stops it. The last line of output is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT_ROOT))

from kubernetes import client  # noqa: E402
from vs_tfjob_measure import disruption_outcome, run_outcome  # noqa: E402
from vs_tfjob_programs import NAMESPACE, PROGRAMS, load_team_image  # noqa: E402
from vs_tfjob_report import LOSS_SIDES, RUN_SIDES, Outcome, Run, print_program, program_figures  # noqa: E402
from vs_tfjob_sides import SERVERS, sides_of  # noqa: E402

from tools.localcluster import lifecycle, paths  # noqa: E402
from tools.localcluster.client import api_client  # noqa: E402
from tools.localcluster.task_loss_timing import DISRUPTIONS  # noqa: E402

CLUSTER = paths.ClusterDir(paths.CLUSTER_ROOT / "bench-tfjob")


def say(line: str) -> None:
    print(line, flush=True)


def machine() -> dict[str, Any]:
    """The date and how busy the machine was (its cores; the load averages over 1, 5 and 15 minutes)."""
    return {"utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "cores": os.cpu_count(), "load": os.getloadavg()}


def shown(outcome: Outcome) -> str:
    return outcome if isinstance(outcome, str) else f"training again {outcome:.1f} s after"


def measure(names: list[str], runs: int, lost_tasks: bool = True) -> dict[str, Any]:
    """Every program's runs and lost tasks (unless `lost_tasks` is False), alternating the sides, on the
    running cluster."""
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-vs-tfjob-") as folder:
        work = Path(folder)
        api = api_client(CLUSTER.kubeconfig)
        client.CoreV1Api(api).create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=NAMESPACE)))
        sides = {}
        for name in names:
            load_team_image(PROGRAMS[name], CLUSTER, work)
            sides[name] = sides_of(PROGRAMS[name], api, CLUSTER.kubeconfig, work)
            results[name] = {
                "runs": {side: [] for side in RUN_SIDES},
                "lost": {kind: {side: [] for side in LOSS_SIDES} for kind in DISRUPTIONS},
            }
        for attempt in range(1, runs + 1):
            for name in names:
                done: dict[str, list[Run]] = results[name]["runs"]
                for side in RUN_SIDES:
                    run = run_outcome(sides[name][side], PROGRAMS[name].steps, CLUSTER)
                    for seconds, line in run.pop("client_log", []) if isinstance(run, dict) else []:
                        say(f"  pulumi up +{seconds:5.1f} s: {line}")
                    done[side].append(run)
                    say(f"{name} {side} run {attempt}: {json.dumps(run)}")
                lost: dict[str, dict[str, list[Outcome]]] = results[name]["lost"]
                for kind in DISRUPTIONS if lost_tasks else ():
                    for side in LOSS_SIDES:
                        lost[kind][side].append(disruption_outcome(sides[name][side], kind))
                        say(f"{name} {side} run {attempt}: {kind}: {shown(lost[kind][side][-1])}")
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="runs of each side, per program (default 3)")
    parser.add_argument(
        "--program",
        choices=(*PROGRAMS, "both"),
        default="both",
        help="the team program to run as a TFJob and as a tfk8s stack (default both)",
    )
    parser.add_argument(
        "--without-lost-tasks",
        action="store_true",
        help="only the runs to Succeeded: no task lost while training (about a third of the time)",
    )
    parser.add_argument(
        "--down", action="store_true", help="only stop the benchmark's cluster (after an interrupted run) and exit"
    )
    options = parser.parse_args()
    if options.down:
        stopped = lifecycle.down(CLUSTER, say=say)
        say(f"stopped {', '.join(stopped)}" if stopped else "nothing was running")
        return 0
    if options.runs < 1:
        parser.error(f"--runs must be at least 1 (got {options.runs})")
    names = list(PROGRAMS) if options.program == "both" else [options.program]
    before = machine()
    say(f"machine before: {json.dumps(before)}")
    # Its cluster lives only as long as the run, as the other benchmarks' do: a run killed before
    # the control plane's state was written (SIGTERM, a session's end) left etcd and the API server
    # running, unrecorded, where `--down` could not find them.
    lifecycle.up(CLUSTER, real=SERVERS, tfjob=True, say=say, tie_to_parent=True)
    try:
        results = measure(names, options.runs, lost_tasks=not options.without_lost_tasks)
    finally:
        lifecycle.down(CLUSTER, say=say)
    after = machine()
    say(f"machine after: {json.dumps(after)}; the operator's log: {CLUSTER.log_dir / 'training-operator.log'}")
    figures = {}
    for name in names:
        figures[name] = program_figures(results[name]["runs"], results[name]["lost"])
        print_program(name, options.runs, figures[name], say)
    report = {"runs": options.runs, "machine": {"before": before, "after": after}, "programs": figures}
    say(json.dumps({**report, "raw": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
