"""`python -m components tensorboard <stack>`: the experiment's TensorBoard on this machine's
127.0.0.1, through the API server's port-forward to its pod (port_forward.py; the user needs
`pods/portforward` in the namespace, docs/rbac/tfk8s-experimenter.yaml).

Each connection to the local port is one port-forward stream to the pod, so a browser's parallel
requests each get their own. It waits for a ready pod (saying why it waits), then serves until
Ctrl-C, or until `stop` is set when run from a test or a program of one's own.
"""

from __future__ import annotations

import socket
import sys
import threading
import time
from typing import Any, Callable, Optional

from ..plan.experiment import Experiment
from ..spec.tensorboard import TENSORBOARD_PORT
from .cluster_access import with_cluster
from .port_forward import PortUnreachable, open_port
from .ready_pods import ready_pod

POLL_S = 2.0
CHUNK = 65536


def serve_tensorboard(
    experiment: Experiment,
    kubeconfig: Optional[str],
    context: Optional[str],
    port: int,
    stop: Optional[threading.Event] = None,
    on_url: Callable[[str], None] = lambda url: None,
    stack_given: Optional[str] = None,
) -> int:
    """0 once `stop` is set (Ctrl-C is the command line's 130); 2 when the stack has no TensorBoard,
    the cluster cannot be read or the local port is taken."""
    if experiment.config.tensorboard is None:
        print(
            f"stack '{experiment.stack}': has no tfk8s:tensorboard; add tfk8s:tensorboard: {{image: ...}} to the "
            "stack (docs/lifecycle.md) and run `pulumi up`",
            file=sys.stderr,
        )
        return 2
    stopping = stop or threading.Event()

    def forward(api: Any) -> int:
        from kubernetes import client

        core = client.CoreV1Api(api)
        pod = _wait_for_ready_pod(core, experiment, stopping)
        if pod is None:
            return 0
        # Set by a connection that could not reach the pod: a replaced pod is looked up again.
        lost = threading.Event()
        try:
            listener = socket.create_server(("127.0.0.1", port))
        except OSError as error:
            print(
                f"stack '{experiment.stack}': cannot listen on 127.0.0.1:{port} ({error.strerror}); "
                "pick another --port (0: any free one)",
                file=sys.stderr,
            )
            return 2
        with listener:
            listener.settimeout(0.5)
            url = f"http://127.0.0.1:{listener.getsockname()[1]}/"
            print(f"TensorBoard of stack '{experiment.stack}' ({pod}): {url}  (Ctrl-C to stop)", flush=True)
            on_url(url)
            while not stopping.is_set():
                try:
                    local, _ = listener.accept()
                except socket.timeout:
                    continue
                if lost.is_set():
                    lost.clear()
                    pod = _wait_for_ready_pod(core, experiment, stopping)
                    if pod is None:
                        local.close()
                        break
                threading.Thread(
                    target=_relay, args=(core, pod, experiment.namespace, local, stopping, lost), daemon=True
                ).start()
        return 0

    return with_cluster(experiment, kubeconfig, context, forward, stack_given)


def _wait_for_ready_pod(core: Any, experiment: Experiment, stop: threading.Event) -> Optional[str]:
    """The name of TensorBoard's ready pod, saying what it waits for while there is none."""
    from ..objects.tensorboard import pod_labels

    said = ""
    while not stop.is_set():
        pod, state = ready_pod(core, experiment.namespace, pod_labels(experiment))
        if pod is not None:
            return pod
        if state != said:
            print(f"waiting for TensorBoard's pod in {experiment.namespace} to be ready: {state}", flush=True)
            said = state
        time.sleep(POLL_S)
    return None


def _relay(
    core: Any, pod: str, namespace: str, local: socket.socket, stop: threading.Event, lost: threading.Event
) -> None:
    """One local connection to the pod's port, both ways, until either side closes; one line, and
    `lost` set, when the pod cannot be reached (gone, replaced, or the port-forward refused)."""
    try:
        forwarded = open_port(core, pod, namespace, TENSORBOARD_PORT)
    except PortUnreachable as why:
        print(f"cannot reach {pod}: {why}; looking for TensorBoard's pod again", file=sys.stderr, flush=True)
        lost.set()
        local.close()
        return
    remote = forwarded.socket

    def pump(source: Any, target: Any) -> None:
        try:
            while not stop.is_set():
                data = source.recv(CHUNK)
                if not data:
                    break
                target.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, target):
                try:
                    end.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    back = threading.Thread(target=pump, args=(remote, local), daemon=True)
    back.start()
    pump(local, remote)
    back.join(timeout=5)
    local.close()
    forwarded.close()
