"""What bench-vs-tfjob measures on one side: a run to Succeeded (its start split into the client's
part and the cluster's), and a task lost while training (a worker deleted, a PS deleted, a worker
evicted) until training goes on again (timed by tools/localcluster/task_loss_timing.py, which the
migration's real-pod test shares)."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from tools.localcluster import control_plane, paths
from tools.localcluster.task_loss_timing import (
    DISRUPTIONS,
    UNTIL_STOPPED,
    NotWithin,
    lose_task,
    steps_logged,
    teardown,
    wait_for,
)
from tools.localcluster.tfjob_sides import ExperimentFailed, Side

ENDED = ("Succeeded", "Failed")
# The controllers each side brings; the control plane's own (API server, Job controller) serves both.
CONTROLLERS = {"tfjob": ("training-operator",), "tfk8s": ("jobset-controller", "kueue-controller")}


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


def controller_cost(cluster: paths.ClusterDir, side: str) -> ControllerCost:
    plane = control_plane.ControlPlane.load(cluster)
    assert plane is not None, "the benchmark's cluster is not running"
    # Every TFJob side runs on the training operator, every tfk8s side on JobSet's and Kueue's.
    return ControllerCost([plane.processes[name] for name in CONTROLLERS["tfjob" if "tfjob" in side else "tfk8s"]])


# -- reading the pods -------------------------------------------------------------------------------


def still_running(side: Side) -> list[Any]:
    """PS and worker pods not ended (Succeeded, Failed): each holds its server's resources."""
    return [pod for pod in side.pods("ps", "worker") if pod.status.phase not in ENDED]


class StartWatch:
    """When each stage of the start was first seen, in seconds after the apply (polled every POLL_S):
    the client returned (kubectl; `pulumi up`), the workload (the TFJob; the JobSet) exists, JobSet's
    controller made its Jobs (tfk8s), every pod exists, is scheduled, runs."""

    def __init__(self, side: Side) -> None:
        self.side, self.started = side, time.monotonic()
        self.seen: dict[str, float] = {}

    def _mark(self, stage: str, reached: Callable[[], bool]) -> None:
        if stage not in self.seen and reached():
            self.seen[stage] = time.monotonic() - self.started

    def poll(self) -> None:
        self._mark("client returned", self.side.applied)
        self._mark("workload seen", lambda: self.side.workload() is not None)
        if "workload seen" in self.seen:
            self._mark("JobSet's Jobs seen", self.side.controllers_done)

    def all_running(self) -> bool:
        self.poll()
        pods = self.side.all_pods()
        created = len(pods) == self.side.program.tasks
        self._mark("pods created", lambda: created)
        self._mark("pods scheduled", lambda: created and all(pod.spec.node_name for pod in pods))
        self._mark("pods running", lambda: created and all(pod.status.phase == "Running" for pod in pods))
        return "pods running" in self.seen


# -- a run to Succeeded -----------------------------------------------------------------------------


def one_run(side: Side, steps: int, cluster: paths.ClusterDir) -> dict[str, Any]:
    """Apply, the start, Succeeded and the cleanup, with the controllers' cost; then delete. The start
    splits at the moment the workload (the TFJob; the JobSet) is first seen: before it, the client's
    part (kubectl; the Pulumi engine), after it, the cluster's (controllers, scheduler, kubelet)."""
    cost = controller_cost(cluster, side.name)
    start = StartWatch(side)
    side.apply(steps)

    def each() -> None:
        cost.sample()
        start.poll()

    try:
        wait_for(start.all_running, "every task Running", each=cost.sample)
        placement = side.placement()
        wait_for(lambda: any(steps_logged(side, pod) for pod in side.pods("worker")), "a first step", each=each)
        first_step = time.monotonic() - start.started
        wait_for(side.succeeded, "Succeeded", each=each)
        succeeded = time.monotonic() - start.started
        wait_for(lambda: not still_running(side), "PS and workers ended", each=each)
        cleaned = time.monotonic() - start.started - succeeded
        wait_for(lambda: "client returned" in start.seen, "the client returned", each=each)
        stages = {**start.seen, **side.client_stages()}
        return {
            "running_s": stages["pods running"],
            "workload_s": stages["workload seen"],
            "cluster_start_s": stages["pods running"] - stages["workload seen"],
            "client_returned_s": stages["client returned"],
            "stages_s": dict(sorted(stages.items(), key=lambda stage: stage[1])),
            "client_log": side.client_log(),
            "first_step_s": first_step,
            "succeeded_s": succeeded,
            "cleanup_s": cleaned,
            "placement": placement,
            "controller_cpu_s": cost.cpu_s(),
            "controller_peak_mib": cost.peak_rss / 2**20,
        }
    finally:
        teardown(side)


def run_outcome(side: Side, steps: int, cluster: paths.ClusterDir) -> dict[str, Any] | str:
    """A run's figures, or why the experiment failed instead."""
    try:
        return one_run(side, steps, cluster)
    except ExperimentFailed as failed:
        return f"failed: {failed}"


# -- a task lost while training ---------------------------------------------------------------------


def disruption(side: Side, kind: str) -> float:
    """Task <role>-0 lost while every worker trains, in a run of its own: seconds until training
    goes on. ExperimentFailed when the loss failed the experiment instead; NotWithin when it never
    went on."""
    side.apply(UNTIL_STOPPED)
    try:
        after = lose_task(side, DISRUPTIONS[kind])
    finally:
        teardown(side)
    if after.failed is not None:
        raise ExperimentFailed(after.failed)
    return after.seconds


def disruption_outcome(side: Side, kind: str) -> float | str:
    """Seconds until training goes on, or why it did not."""
    try:
        return disruption(side, kind)
    except ExperimentFailed as failed:
        return f"failed: {failed}"
    except NotWithin as late:
        return f"not back: {late}"
