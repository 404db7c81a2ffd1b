"""The log archive (tfk8s:logs) as `python -m components logs` reads it: one request a port-forward
to the collector's read port, which listens on its pod's loopback only (trainer/log_collector.py
speaks the other end: `list`, `read <task> <n>`)."""

from __future__ import annotations

import json
from typing import Any

from ..objects.api_errors import api_error_text
from ..plan import labels as L
from ..plan.experiment import Experiment
from ..spec.logs import READ_PORT
from .ready_pods import ready_pod

CHUNK = 65536


class ArchiveUnreadable(RuntimeError):
    """The archive cannot be read; the message says why and what to do."""


class LogArchive:
    def __init__(self, core: Any, experiment: Experiment) -> None:
        self._core = core
        self._experiment = experiment
        self._listed: dict[str, list[str]] = {}

    def runs(self) -> dict[str, list[str]]:
        """Each task's archived runs (pod names), oldest first."""
        answer = self._request("list")
        head, _, _ = answer.partition(b"\n")
        try:
            tasks = json.loads(head)["tasks"]
        except (ValueError, KeyError, TypeError):
            raise ArchiveUnreadable(f"the log collector answered `list` with {head[:80]!r}") from None
        self._listed = {task: list(pods) for task, pods in tasks.items()}
        return self._listed

    def read(self, task: str, pod: str) -> bytes:
        """The archived log of `task`'s run in `pod` (one runs() listed)."""
        pods = self._listed.get(task, [])
        assert pod in pods, "read a run runs() listed"
        answer = self._request(f"read {task} {len(pods) - 1 - pods.index(pod)}")
        head, _, text = answer.partition(b"\n")
        if head == f"ok {pod}".encode():
            return text
        # Another run: one began since `list`, and the collector dropped this one for it.
        said = head.decode(errors="replace") or "nothing"
        raise ArchiveUnreadable(f"the log archive no longer holds run {pod} of {task} (it answered {said}); run again")

    def _request(self, line: str) -> bytes:
        from kubernetes.client.exceptions import ApiException
        from kubernetes.stream import portforward

        pod = self._collector_pod()
        try:
            forwarded = portforward(
                self._core.connect_get_namespaced_pod_portforward,
                pod,
                self._experiment.namespace,
                ports=str(READ_PORT),
            )
            remote = forwarded.socket(READ_PORT)
            remote.setblocking(True)
            remote.sendall(f"{line}\n".encode())
            received = []
            while chunk := remote.recv(CHUNK):
                received.append(chunk)
            remote.close()
            refused = forwarded.error(READ_PORT) if not received else None
        except ApiException as error:
            why = api_error_text(error.status, error.reason, error.body)
            raise ArchiveUnreadable(f"cannot reach the log collector {pod}: {why}") from None
        except (OSError, RuntimeError) as error:
            raise ArchiveUnreadable(f"cannot reach the log collector {pod}: {error}") from None
        if refused:
            raise ArchiveUnreadable(f"the log collector {pod} did not answer on its port {READ_PORT}: {refused}")
        return b"".join(received)

    def _collector_pod(self) -> str:
        experiment = self._experiment
        labels = L.side_pod_labels(experiment.stack, L.LOG_COLLECTOR)
        pod, state = ready_pod(self._core, experiment.namespace, labels)
        if pod is not None:
            return pod
        namespace, deployment = experiment.namespace, experiment.names.log_archive
        raise ArchiveUnreadable(
            f"the log collector (Deployment {deployment} in {namespace}) has no ready pod ({state}); "
            f"`kubectl -n {namespace} describe deployment {deployment}` says why"
        )
