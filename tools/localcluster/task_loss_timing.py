"""A task lost while every worker trains, timed until training goes on, on either side of
tools/localcluster/tfjob_sides.py: the TFJob under Kubeflow's training operator, or its import under
tfk8s. What became of it is read from what a user sees: the replacement's log, or the experiment's
own failure (the TFJob's Failed condition; the JobSet's terminal state).

Used by `make bench-vs-tfjob` (each loss, on each side, several times) and by the migration's
real-pod test (a worker deleted, on both sides once).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Optional

from kubernetes import client

from .podlogs import timestamped_log
from .tfjob_sides import STEP_LINE, ExperimentFailed, Side, stamp

# A run a task is lost in trains until it is deleted: never a step count raced against the loss.
UNTIL_STOPPED = 1_000_000
POLL_S = 0.25
WAIT_S = 600.0
SETTLE_S = 3.0  # a task is lost once every worker has trained this long
CONTAINER = "tensorflow"  # the program's container, in the TFJob and in tfk8s's pods alike


@dataclass(frozen=True)
class Disruption:
    role: str  # the task lost: <role>-0
    evicted: bool  # through the Eviction API (policy/v1), else a plain delete
    label: str


DISRUPTIONS = {
    "worker_deleted": Disruption("worker", False, "a worker pod deleted, to its replacement logging a step"),
    "ps_deleted": Disruption("ps", False, "a PS pod deleted, to a worker's step after the new PS started"),
    "worker_evicted": Disruption("worker", True, "a worker evicted (Eviction API), to its replacement's step"),
}


@dataclass(frozen=True)
class AfterLoss:
    """What became of the experiment after its task was lost, and when."""

    seconds: float  # after the loss: until training went on, or until the experiment was seen failed
    failed: Optional[str]  # why the experiment failed; None where training went on
    lost_at: float  # when the task was deleted or evicted, seconds since the epoch (as logs stamp lines)
    replacement: Optional[str]  # the lost task's new pod, where one was seen


class NotWithin(RuntimeError):
    """A wait ran out."""


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
    raise NotWithin(f"{what}: not within {timeout_s:.0f} s")


def steps_logged(side: Side, pod: Any, after: float = 0.0) -> bool:
    """The pod's program has logged a training step (after `after`, seconds since the epoch)."""
    try:
        lines = timestamped_log(side.core, side.namespace(), pod.metadata.name)
    except client.ApiException:
        return False  # its container is starting, or the pod is gone
    return any(STEP_LINE in line and when > after for when, line in lines)


def all_running(side: Side) -> bool:
    pods = side.all_pods()
    return len(pods) == side.program.tasks and all(pod.status.phase == "Running" for pod in pods)


def container_started(pod: Optional[Any]) -> Optional[float]:
    """When the pod's program container started running (seconds since the epoch, whole seconds)."""
    for status in (pod and pod.status.container_statuses) or []:
        if status.name == CONTAINER and status.state.running is not None:
            return stamp(status.state.running.started_at)
    return None


def teardown(side: Side) -> None:
    side.delete()
    wait_for(lambda: not side.all_pods(), f"the {side.name} experiment's pods gone")


def _lose(side: Side, pod: Any, evicted: bool) -> None:
    name, namespace = pod.metadata.name, side.namespace()
    if evicted:
        eviction = client.V1Eviction(metadata=client.V1ObjectMeta(name=name, namespace=namespace))
        side.core.create_namespaced_pod_eviction(name, namespace, eviction)
    else:
        side.core.delete_namespaced_pod(name, namespace)


def lose_task(side: Side, lost: Disruption, back_within_s: float = WAIT_S) -> AfterLoss:
    """On a side already applied: task <role>-0 lost once every worker trains, then the seconds
    until training goes on (the replacement worker logs a step; for a PS, a worker logs a step after
    the new PS started), or until the experiment is seen failed instead. NotWithin when neither came
    within `back_within_s` of the loss."""
    wait_for(lambda: all_running(side), "every task Running")
    wait_for(lambda: all(steps_logged(side, pod) for pod in side.pods("worker")), "every worker training")
    time.sleep(SETTLE_S)  # not a wait on an event: every worker trains, and the loss comes this much later
    old = side.task_pod(lost.role, 0)
    assert old is not None, f"no {lost.role}-0 pod while every worker trains"
    lost_at, lost_at_epoch = time.monotonic(), time.time()
    _lose(side, old, lost.evicted)

    def until_back(condition: Callable[[], Any], what: str) -> Any:
        """`condition`'s first true value, the experiment's failure raised as soon as it is seen."""

        def check() -> Any:
            if (why := side.failed()) is not None:
                raise ExperimentFailed(why)
            return condition()

        try:
            return wait_for(check, what, max(0.0, lost_at + back_within_s - time.monotonic()))
        except NotWithin:
            raise NotWithin(f"{what}: not within {back_within_s:.0f} s") from None

    def replacement() -> Any:
        pod = side.task_pod(lost.role, 0)
        return pod is not None and pod.metadata.uid != old.metadata.uid and pod

    new, failed = None, None
    try:
        new = until_back(replacement, f"a replacement {lost.role}-0")
        if lost.role == "worker":
            until_back(lambda: steps_logged(side, side.task_pod("worker", 0) or new), "the replacement's first step")
        else:
            started = until_back(lambda: container_started(side.task_pod("ps", 0)), "the new PS started")
            until_back(
                lambda: any(
                    steps_logged(side, pod, after=started)
                    for pod in side.pods("worker")
                    if pod.metadata.deletion_timestamp is None
                ),
                "a worker's step after the new PS started",
            )
    except ExperimentFailed as error:
        failed = str(error)
    return AfterLoss(time.monotonic() - lost_at, failed, lost_at_epoch, new and new.metadata.name)
