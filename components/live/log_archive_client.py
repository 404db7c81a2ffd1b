"""The log archive (tfk8s:logs) as `python -m components logs` reads it: one request a port-forward
(port_forward.py) to the collector's read port, which listens on its pod's loopback only. Both ends
speak trainer/log_protocol.py: `list`, and `read <task> <pod>`, a run asked for by its pod's name,
so a run that begins or goes between the two changes nothing of the answer but that run's own."""

from __future__ import annotations

import json
import shlex
from typing import Any, Sequence

from ..plan import labels as L
from ..plan.experiment import Experiment
from ..spec.logs import READ_PORT
from ..spec.trainer_contract import log_protocol
from .port_forward import PortUnreachable, open_port
from .ready_pods import ready_pod

CHUNK = 65536


class ArchiveUnreadable(RuntimeError):
    """The archive cannot be read; the message says why and what to do, and `kubectl` the arguments of
    a kubectl command that says more, where there is one (said())."""

    def __init__(self, message: str, kubectl: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.kubectl = tuple(kubectl)

    def said(self, cluster_flags: Sequence[str] = ()) -> str:
        """The message with its kubectl command runnable as printed: pointed at the cluster the command
        read (`cluster_flags`: the --kubeconfig and --context it was given), each word quoted for a shell."""
        if not self.kubectl:
            return str(self)
        return f"{self}; `{shlex.join(['kubectl', *cluster_flags, *self.kubectl])}` says why"


class LogArchive:
    def __init__(self, core: Any, experiment: Experiment) -> None:
        self._core = core
        self._experiment = experiment

    def runs(self) -> dict[str, list[str]]:
        """Each task's archived runs (pod names), oldest first."""
        answer = self._request(log_protocol.list_request())
        head, _, _ = answer.partition(b"\n")
        try:
            tasks = json.loads(head)["tasks"]
            return {task: list(pods) for task, pods in tasks.items()}
        except (ValueError, KeyError, TypeError, AttributeError):
            raise ArchiveUnreadable(f"the log collector answered `list` with {head[:80]!r}") from None

    def read(self, task: str, pod: str) -> bytes:
        """The archived log of `task`'s run in `pod`."""
        found = log_protocol.run_found(pod)
        answer = self._request(log_protocol.read_request(task, pod))
        if answer.startswith(found):
            return answer[len(found) :]
        said = answer.partition(b"\n")[0].decode(errors="replace")
        if said.startswith(f"{log_protocol.MISSING} "):
            # The collector dropped it for a newer run since `list`.
            raise ArchiveUnreadable(
                f"the log archive no longer holds run {pod} of {task} (it answered {said}); run again"
            )
        if said.startswith(f"{log_protocol.ERROR} "):
            # Its answer to a request it does not know; this request is well-formed, so the collector
            # knows no read by a pod's name: an earlier tfk8s's, which read runs by their position.
            raise ArchiveUnreadable(
                f"the log collector answered {said} to a read of run {pod} of {task}: it runs an earlier "
                "tfk8s's code, which reads runs by their position; `pulumi up` replaces it"
            )
        # Nothing (the collector could not open the run's files: they went meanwhile) or a broken answer.
        what = f"an unexpected answer ({said[:80]!r})" if said else "no answer"
        raise ArchiveUnreadable(f"the log archive gave {what} for run {pod} of {task}; run again")

    def _request(self, line: bytes) -> bytes:
        pod = self._collector_pod()
        try:
            with open_port(self._core, pod, self._experiment.namespace, READ_PORT) as forwarded:
                forwarded.socket.sendall(line)
                received = []
                while chunk := forwarded.socket.recv(CHUNK):
                    received.append(chunk)
                refused = forwarded.refusal() if not received else None
        except (PortUnreachable, OSError, RuntimeError) as error:
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
            f"the log collector (Deployment {deployment} in {namespace}) has no ready pod ({state})",
            kubectl=("-n", namespace, "describe", "deployment", deployment),
        )
