"""The one port-forward module (components/live/port_forward.py) that `tensorboard` and `logs` open
their streams to a pod through: every opening under its lock (the Kubernetes client swaps its API
client's call_api while it opens one), a refusal said in one line, and TensorBoard's relay carrying
a local connection's bytes both ways through it. The API server's own port-forward, on real nodes:
tests/realpods/test_tensorboard.py and tests/realpods/test_logs.py."""

from __future__ import annotations

import json
import socket
import threading
from typing import Callable, Optional

import pytest
from kubernetes.client.exceptions import ApiException

from components.live import port_forward, tensorboard_forward
from components.objects.api_errors import api_error_text
from components.spec.stack_files import PROJECT_ROOT

NAMESPACE = "tf-scene1-case1"


class LocalStream:
    """What kubernetes.stream.portforward returns, its socket connected to a port on 127.0.0.1
    rather than to the pod's."""

    def __init__(self, port: int, local_port: int) -> None:
        self._port = port
        self._socket = socket.create_connection(("127.0.0.1", local_port), timeout=30)
        self.closed = False

    def socket(self, port: int) -> socket.socket:
        assert port == self._port
        return self._socket

    def error(self, port: int) -> Optional[str]:
        return None

    def close(self) -> None:
        self.closed = True


class FakePortForward:
    """kubernetes.stream.portforward for tests: each stream goes to `local_port` on 127.0.0.1, or
    the call raises `refusal`; `before_opening(n)` runs as the n-th stream (from 1) is opened."""

    def __init__(self, local_port: int = 0, refusal: Optional[Exception] = None) -> None:
        self.local_port = local_port
        self.refusal = refusal
        self.opened: list[tuple[str, str, str]] = []
        self.held_the_lock: list[bool] = []
        self.streams: list[LocalStream] = []
        self.before_opening: Callable[[int], None] = lambda n: None

    def __call__(self, api_method: object, name: str, namespace: str, ports: str) -> LocalStream:
        # The lock is the module's: held by this opening, it cannot be taken by another.
        taken = port_forward._OPENING.acquire(blocking=False)
        if taken:
            port_forward._OPENING.release()
        self.held_the_lock.append(not taken)
        self.opened.append((name, namespace, ports))
        self.before_opening(len(self.opened))
        if self.refusal is not None:
            raise self.refusal
        self.streams.append(LocalStream(int(ports), self.local_port))
        return self.streams[-1]


class Core:
    """The CoreV1Api methods the module names (the fake port-forward never calls it)."""

    def connect_get_namespaced_pod_portforward(self, *args: object, **kwargs: object) -> None:
        raise AssertionError("the port-forward is faked")


@pytest.fixture
def echo_port() -> int:
    """A server on 127.0.0.1 that sends back what each connection sends, until it closes."""
    server = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        while True:
            try:
                connection, _ = server.accept()
            except OSError:
                return
            threading.Thread(target=echo, args=(connection,), daemon=True).start()

    def echo(connection: socket.socket) -> None:
        with connection:
            while data := connection.recv(65536):
                connection.sendall(data)

    threading.Thread(target=serve, daemon=True).start()
    yield server.getsockname()[1]
    server.close()


def test_every_opening_holds_the_lock_from_any_thread(monkeypatch, echo_port):
    fake = FakePortForward(echo_port)
    monkeypatch.setattr("kubernetes.stream.portforward", fake)
    opened: list[port_forward.ForwardedPort] = []
    threads = [
        threading.Thread(target=lambda: opened.append(port_forward.open_port(Core(), "pod", NAMESPACE, 6006)))
        for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert len(opened) == 8 and fake.held_the_lock == [True] * 8
    for forwarded in opened:
        forwarded.close()
    assert all(stream.closed for stream in fake.streams)


def test_no_other_module_opens_a_stream_to_a_pod():
    """A stream opened elsewhere would not hold the lock."""
    opening = [
        str(path.relative_to(PROJECT_ROOT))
        for path in (PROJECT_ROOT / "components").rglob("*.py")
        if "kubernetes.stream" in path.read_text()
    ]
    assert opening == ["components/live/port_forward.py"]


def test_a_refused_stream_is_said_in_one_line(monkeypatch):
    message = 'pods "tb" is forbidden: cannot create resource "pods/portforward"'
    body = json.dumps({"kind": "Status", "message": message})
    refusal = ApiException(status=403, reason="Forbidden")
    refusal.body = body
    monkeypatch.setattr("kubernetes.stream.portforward", FakePortForward(refusal=refusal))
    with pytest.raises(port_forward.PortUnreachable) as unreachable:
        port_forward.open_port(Core(), "tb", NAMESPACE, 6006)
    assert str(unreachable.value) == api_error_text(403, "Forbidden", body)
    assert "\n" not in str(unreachable.value)


def test_tensorboards_relay_carries_a_connection_both_ways_through_it(monkeypatch, echo_port):
    fake = FakePortForward(echo_port)
    monkeypatch.setattr("kubernetes.stream.portforward", fake)
    browser, local = socket.socketpair()
    browser.settimeout(30)
    stop, lost = threading.Event(), threading.Event()
    relay = threading.Thread(target=tensorboard_forward._relay, args=(Core(), "tb", NAMESPACE, local, stop, lost))
    relay.start()
    browser.sendall(b"GET / HTTP/1.1\r\n\r\n")
    received = b""
    while len(received) < 18:
        received += browser.recv(65536)
    assert received == b"GET / HTTP/1.1\r\n\r\n"
    browser.close()
    relay.join(timeout=30)
    assert not relay.is_alive() and not lost.is_set()
    assert fake.opened == [("tb", NAMESPACE, str(tensorboard_forward.TENSORBOARD_PORT))]
    assert fake.streams[0].closed


def test_tensorboards_relay_says_a_pod_out_of_reach_and_looks_for_it_again(monkeypatch, capsys):
    monkeypatch.setattr("kubernetes.stream.portforward", FakePortForward(refusal=OSError("connection refused")))
    browser, local = socket.socketpair()
    lost = threading.Event()
    tensorboard_forward._relay(Core(), "tb", NAMESPACE, local, threading.Event(), lost)
    assert lost.is_set()
    assert browser.recv(1) == b"", "the browser's connection is closed"
    assert capsys.readouterr().err == "cannot reach tb: connection refused; looking for TensorBoard's pod again\n"
