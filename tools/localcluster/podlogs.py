"""A container's log with the kubelet's timestamps, to time what a pod did (tests, benchmarks)."""

from __future__ import annotations

from datetime import datetime

from kubernetes import client


def timestamped_log(
    core: client.CoreV1Api, namespace: str, pod: str, previous: bool = False
) -> list[tuple[float, str]]:
    """(seconds since the epoch, line) for each line of the pod's container log."""
    text = core.read_namespaced_pod_log(pod, namespace, timestamps=True, previous=previous)
    lines = []
    for raw in text.splitlines():
        stamp, _, line = raw.partition(" ")
        lines.append((_epoch_seconds(stamp), line))
    return lines


def _epoch_seconds(stamp: str) -> float:
    # RFC 3339 with nanoseconds, which datetime does not parse: the fraction separately.
    seconds, _, fraction = stamp.rstrip("Z").partition(".")
    return datetime.fromisoformat(seconds + "+00:00").timestamp() + float(f"0.{fraction or 0}")
