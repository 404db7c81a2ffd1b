"""Containers' logs: with the kubelet's timestamps, to time what a pod did (tests, benchmarks); and
kept as a run goes, so that a failed run still shows what its programs printed."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Optional

from kubernetes import client

from .client import name_of


def timestamped_log(
    core: client.CoreV1Api, namespace: str, pod: str, previous: bool = False
) -> list[tuple[float, str]]:
    """(seconds since the epoch, line) for each line of the pod's container log."""
    text = core.read_namespaced_pod_log(pod, namespace, timestamps=True, previous=previous)
    lines = []
    # The kubelet stamps each line ended by a newline; a line may hold carriage returns and
    # backspaces of its own (Keras' progress bar), which str.splitlines would split at.
    for raw in text.removesuffix("\n").split("\n") if text else []:
        stamp, _, line = raw.partition(" ")
        lines.append((_epoch_seconds(stamp), line))
    return lines


def _epoch_seconds(stamp: str) -> float:
    # RFC 3339 with nanoseconds, which datetime does not parse: the fraction separately.
    seconds, _, fraction = stamp.rstrip("Z").partition(".")
    return datetime.fromisoformat(seconds + "+00:00").timestamp() + float(f"0.{fraction or 0}")


@dataclass(frozen=True)
class ContainerRun:
    """One run of a container: its restart count when it ran, its log, how it ended."""

    pod: str
    container: str
    run: int  # the container's restart count while this run was its current one
    log: str
    exit_code: Optional[int]  # None while it runs, or where the kubelet no longer says
    reason: str = ""


@dataclass
class KeptLogs:
    """Every run of every container of the pods `selector` picks in `namespace`, kept at each `poll`.

    The kubelet keeps a container's current log and its one previous run's, and drops both with the
    pod: a container restarted in place twice (restartPolicy OnFailure), or a pod a controller deletes
    when it fails the run (Kubeflow's training operator at its backoff limit), loses what its program
    printed. Polled often enough (more often than a container restarts), nothing is lost."""

    core: client.CoreV1Api
    namespace: str
    selector: str
    runs: dict[tuple[str, str, int], ContainerRun] = field(default_factory=dict)

    def poll(self) -> None:
        try:
            pods = self.core.list_namespaced_pod(self.namespace, label_selector=self.selector).items
        except client.ApiException:
            return  # the namespace is still being made, or already gone: nothing new to keep
        for pod in pods:
            for status in (pod.status and pod.status.container_statuses) or []:
                self._keep(name_of(pod), status)

    def _keep(self, pod: str, status: Any) -> None:
        finished = status.last_state and status.last_state.terminated
        if status.restart_count > 0 and finished and not self._ended(pod, status.name, status.restart_count - 1):
            self._read(pod, status.name, status.restart_count - 1, finished, previous=True)
        current = status.state and (status.state.running or status.state.terminated)
        if current and not self._ended(pod, status.name, status.restart_count):
            self._read(pod, status.name, status.restart_count, status.state.terminated, previous=False)

    def _ended(self, pod: str, container: str, run: int) -> bool:
        kept = self.runs.get((pod, container, run))
        return kept is not None and kept.exit_code is not None

    def _read(self, pod: str, container: str, run: int, terminated: Any, previous: bool) -> None:
        try:
            log = self.core.read_namespaced_pod_log(pod, self.namespace, container=container, previous=previous)
        except client.ApiException:
            return  # the pod went between the list and the read: what the last poll kept stays
        kept = self.runs.get((pod, container, run))
        if kept is not None and len(log) < len(kept.log):
            log = kept.log  # a restart between the list and the read: the longer text is this run's
        exit_code = None if terminated is None else terminated.exit_code
        reason = "" if terminated is None else (terminated.reason or "")
        self.runs[(pod, container, run)] = ContainerRun(pod, container, run, log, exit_code, reason)

    def report(self, last_lines: int = 60) -> str:
        """Each run kept, in order, with how it ended and its last `last_lines` lines."""
        parts = []
        for key in sorted(self.runs):
            kept = self.runs[key]
            ended = "still running" if kept.exit_code is None else f"exit code {kept.exit_code} {kept.reason}".rstrip()
            lines = kept.log.splitlines()[-last_lines:]
            parts.append(f"--- {kept.pod}/{kept.container}, run {kept.run + 1} ({ended}):\n" + "\n".join(lines))
        return "\n".join(parts) if parts else f"no container log kept for {self.selector} in {self.namespace}"
