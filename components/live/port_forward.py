"""One stream of the API server's port-forward to a pod's port (what `kubectl port-forward` opens),
for `tensorboard` (tensorboard_forward.py: one per browser connection) and `logs`
(log_archive_client.py: one per request to the log collector). The user needs `pods/portforward`
in the namespace (docs/rbac/tfk8s-experimenter.yaml).
"""

from __future__ import annotations

import socket
import threading
from dataclasses import dataclass
from typing import Any, Optional

from ..objects.api_errors import api_error_text

# The Kubernetes client opens a stream by swapping its API client's call_api for the call's length
# (kubernetes.stream.stream): one stream opened at a time in this process, or two openings (a
# browser's parallel requests, TensorBoard's and the archive's in one program) undo each other's swap.
_OPENING = threading.Lock()


class PortUnreachable(RuntimeError):
    """The pod's port could not be reached through the API server; the message says why in one line."""


@dataclass
class ForwardedPort:
    """An open stream to a pod's port: `socket` is its blocking end on this side."""

    socket: socket.socket
    port: int
    _stream: Any

    def refusal(self) -> Optional[str]:
        """Why the pod's side ended the stream (e.g. nothing listens on the port); None when it did not say."""
        error = self._stream.error(self.port)
        return str(error) if error else None

    def close(self) -> None:
        self.socket.close()
        self._stream.close()

    def __enter__(self) -> ForwardedPort:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def open_port(core: Any, pod: str, namespace: str, port: int) -> ForwardedPort:
    """A stream to `port` of `pod` through `core` (a CoreV1Api); PortUnreachable when the API server
    refuses it (the pod is gone, the user may not forward) or the connection fails."""
    from kubernetes.client.exceptions import ApiException
    from kubernetes.stream import portforward

    stream = None
    try:
        with _OPENING:
            stream = portforward(core.connect_get_namespaced_pod_portforward, pod, namespace, ports=str(port))
        remote = stream.socket(port)
        remote.setblocking(True)
    except (ApiException, OSError, RuntimeError) as error:
        if stream is not None:
            stream.close()
        why = api_error_text(error.status, error.reason, error.body) if isinstance(error, ApiException) else error
        raise PortUnreachable(str(why)) from None
    return ForwardedPort(remote, port, stream)
