"""A worker pod lost on purpose, and where the time goes until its replacement runs steps.

`kubectl delete pod` of one worker of a running experiment, timed from the
deletion to each stage a user could observe: the deleted trainer stops, the
Job controller creates the replacement pod, its container starts, TensorFlow's
server listens, and the chief collects the first steps the new process ran.
Used by the real-pod tests (a bound on the whole) and `make bench-real` (the
stages, side by side).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Optional

from kubernetes import client

from components.plan import labels as L
from components.plan.experiment import Experiment

from .client import always_set, is_not_found, name_of
from .podlogs import timestamped_log

POLL_S = 0.2
COMPLETION_INDEX_LABEL = "batch.kubernetes.io/job-completion-index"


class WorkerLossError(AssertionError):
    """A stage did not come within its time: names the stage and what was seen."""


@dataclass(frozen=True)
class WorkerReturn:
    """Seconds after the deletion of `task`'s pod at which each stage was seen."""

    task: str
    old_pod: str
    new_pod: str
    trainer_stopped_s: float  # the deleted pod's container terminated
    replacement_created_s: float  # the Job controller made the new pod (whole seconds, as the API stores it)
    container_started_s: float  # the new container started (whole seconds, as the API stores it)
    serving_s: float  # TensorFlow's server in the new pod listens
    first_steps_s: float  # the chief collected the new process's first steps

    @property
    def back_off_s(self) -> float:
        """The Job controller's wait before it replaced the pod (Kubernetes' floor)."""
        return self.replacement_created_s - self.trainer_stopped_s

    @property
    def start_s(self) -> float:
        """The new pod's start and TensorFlow's, until its server listens (Kubernetes' and TensorFlow's floor)."""
        return self.serving_s - self.replacement_created_s

    @property
    def resume_s(self) -> float:
        """From the new server listening to the chief collecting its first steps (tfk8s's and TensorFlow's)."""
        return self.first_steps_s - self.serving_s

    def stages(self) -> list[tuple[str, float]]:
        return [
            ("trainer stopped", self.trainer_stopped_s),
            ("replacement pod created", self.replacement_created_s),
            ("its container started", self.container_started_s),
            ("its server listens", self.serving_s),
            ("its first steps collected", self.first_steps_s),
        ]


def task_pod(core: client.CoreV1Api, experiment: Experiment, role: str, index: int) -> Optional[client.V1Pod]:
    """The current pod of task `<role>-<index>`: its group's first index plus its Job completion
    index; not one being deleted."""
    first_index = {group.name: group.first_index for group in experiment.groups}
    selector = L.selector_text(experiment.stack, (role,))
    for pod in core.list_namespaced_pod(experiment.namespace, label_selector=selector).items:
        metadata = always_set(pod.metadata)
        labels = metadata.labels or {}
        if metadata.deletion_timestamp is None and COMPLETION_INDEX_LABEL in labels:
            if first_index[labels[L.WORKLOAD]] + int(labels[COMPLETION_INDEX_LABEL]) == index:
                return pod
    return None


def joined_processes(core: client.CoreV1Api, experiment: Experiment) -> dict[str, float]:
    """Worker process -> when the running chief collected its first steps (its `worker_joined`
    events; a process is named `worker-<i>@<hostname> pid <pid> started <UTC time>`, and a
    replacement has its pod's hostname and PID again: only its start time tells it apart)."""
    selector = L.selector_text(experiment.stack, ("chief",))
    joined: dict[str, float] = {}
    for pod in core.list_namespaced_pod(experiment.namespace, label_selector=selector).items:
        if always_set(pod.status).phase != "Running":
            continue
        try:
            lines = timestamped_log(core, experiment.namespace, name_of(pod))
        except client.ApiException:
            continue  # its container is starting
        for stamp, line in lines:
            if line.startswith("{") and '"worker_joined"' in line:
                joined.setdefault(json.loads(line)["worker"], stamp)
    return joined


def joined_since(core: client.CoreV1Api, experiment: Experiment, index: int, since: float) -> Optional[float]:
    """When the chief collected the first steps of a worker-`index` process started at `since` or
    later (seconds since the epoch); None if none has run steps yet."""
    prefix = f"worker-{index}@"
    stamps = [
        stamp
        for process, stamp in joined_processes(core, experiment).items()
        if process.startswith(prefix) and _process_started(process) >= since
    ]
    return min(stamps) if stamps else None


def _process_started(process: str) -> float:
    started = process.rsplit(" started ", 1)[1]
    return datetime.fromisoformat(started.replace("Z", "+00:00")).timestamp()


def wait_until_joined(core: client.CoreV1Api, experiment: Experiment, index: int, timeout_s: float) -> str:
    """Block until worker `index`'s current pod has run steps for the chief; that pod's name."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        pod = task_pod(core, experiment, "worker", index)
        state = _container_state(pod) if pod is not None else None
        running = state.running if state is not None else None
        # The API stores the container's start in whole seconds, rounded down.
        if pod is not None and running is not None:
            if joined_since(core, experiment, index, always_set(running.started_at).timestamp()) is not None:
                return name_of(pod)
        time.sleep(POLL_S * 2)
    raise WorkerLossError(f"worker-{index} ran no steps for the chief within {timeout_s:.0f} s")


def lose_worker(core: client.CoreV1Api, experiment: Experiment, index: int, timeout_s: float = 120.0) -> WorkerReturn:
    """Delete worker `index`'s pod (it must have run steps already); wait until its replacement
    has run steps for the chief; the stages, in seconds after the deletion."""
    namespace = experiment.namespace
    old = wait_until_joined(core, experiment, index, timeout_s)
    deleted_at = time.time()
    core.delete_namespaced_pod(old, namespace)
    deadline = time.monotonic() + timeout_s

    def waited(stage: str) -> None:
        if time.monotonic() > deadline:
            raise WorkerLossError(f"worker-{index}: no {stage} within {timeout_s:.0f} s of deleting pod {old}")
        time.sleep(POLL_S)

    stopped = None
    new = None
    while new is None or stopped is None:
        if stopped is None:
            stopped = _trainer_stopped(core, namespace, old)
        if new is None:
            new = task_pod(core, experiment, "worker", index)
        if new is None or stopped is None:
            waited("replacement pod" if stopped is not None else "stop of its trainer")
    new_name = name_of(new)
    while (first_steps := joined_since(core, experiment, index, deleted_at)) is None:
        waited(f"steps run by the replacement (pod {new_name})")
    # It served before it ran steps: its log says when.
    serving = _first_line(core, namespace, new_name, "serving on")
    if serving is None:
        raise WorkerLossError(f"worker-{index}: pod {new_name} ran steps but its log has no 'serving on'")
    new = core.read_namespaced_pod(new_name, namespace)
    # It ran steps, so the kubelet has reported its container running (or terminated since).
    state = always_set(_container_state(new))
    running_or_done = state.running if state.running is not None else always_set(state.terminated)
    started = always_set(running_or_done.started_at).timestamp()
    return WorkerReturn(
        task=f"worker-{index}",
        old_pod=old,
        new_pod=new_name,
        trainer_stopped_s=stopped - deleted_at,
        replacement_created_s=always_set(always_set(new.metadata).creation_timestamp).timestamp() - deleted_at,
        container_started_s=started - deleted_at,
        serving_s=serving - deleted_at,
        first_steps_s=first_steps - deleted_at,
    )


def _trainer_stopped(core: client.CoreV1Api, namespace: str, pod: str) -> Optional[float]:
    """When the pod's container terminated (or, once the pod is gone, now); None while it runs."""
    try:
        found = core.read_namespaced_pod(pod, namespace)
    except client.ApiException as error:
        if is_not_found(error):
            return time.time()
        raise
    state = _container_state(found)
    if state is not None and state.terminated is not None:
        return always_set(state.terminated.finished_at).timestamp()
    return None


def _container_state(pod: client.V1Pod) -> Optional[client.V1ContainerState]:
    """The state of the pod's (one) container; None until the kubelet reports it."""
    statuses = always_set(pod.status).container_statuses or []
    return always_set(statuses[0].state) if statuses else None


def _first_line(core: client.CoreV1Api, namespace: str, pod: str, text: str) -> Optional[float]:
    try:
        lines = timestamped_log(core, namespace, pod)
    except client.ApiException:
        return None  # its container is starting
    return next((stamp for stamp, line in lines if text in line), None)
