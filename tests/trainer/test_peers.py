"""Reaching the other tasks: waiting for late ones, watching the PS, gRPC options (no TensorFlow needed)."""

from __future__ import annotations

import socket
import threading
import time

from trainer.peers import GRPC_OPTIONS_ENV, set_grpc_options, wait_until_serving, watch_parameter_servers


def _listener() -> socket.socket:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    return server


def _free_address() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{probe.getsockname()[1]}"


def test_the_chief_waits_for_a_task_that_comes_up_late_and_says_whom_it_waits_for():
    early = _listener()
    late_address = _free_address()
    said: list[str] = []
    late: list[socket.socket] = []

    def come_up() -> None:
        time.sleep(1.5)
        server = socket.socket()
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        host, port = late_address.rsplit(":", 1)
        server.bind((host, int(port)))
        server.listen()
        late.append(server)

    starter = threading.Thread(target=come_up)
    starter.start()
    started = time.monotonic()
    tasks = {"ps-0": f"127.0.0.1:{early.getsockname()[1]}", "ps-1": late_address}
    waited = wait_until_serving(tasks, said.append, poll_s=0.05, report_every_s=0.5)
    elapsed = time.monotonic() - started
    starter.join()
    try:
        assert 1.4 <= waited <= elapsed < 3.0, "returns soon after the last task serves"
        assert said and all("ps-1" in line and "ps-0" not in line for line in said), said
    finally:
        early.close()
        for server in late:
            server.close()


def test_a_ps_that_never_served_is_not_lost_one_that_stopped_is():
    up = _listener()
    never = _free_address()
    lost: list[tuple[int, str]] = []
    reported = threading.Event()
    done = threading.Event()
    addresses = [f"127.0.0.1:{up.getsockname()[1]}", never]
    watch_parameter_servers(addresses, lambda i, a: (lost.append((i, a)), reported.set()), done, interval_s=0.1, grace_s=0.4)
    try:
        time.sleep(1.0)
        assert lost == [], "a PS still starting (never seen serving) is not lost"
        up.close()
        assert reported.wait(5)
        assert lost == [(0, addresses[0])]
    finally:
        done.set()


def test_grpc_options_retry_fast_and_respect_the_operators_own():
    environ: dict[str, str] = {}
    set_grpc_options(environ)
    options = dict(pair.split("=") for pair in environ[GRPC_OPTIONS_ENV].split(","))
    assert int(options["grpc.max_reconnect_backoff_ms"]) <= 500
    assert int(options["grpc.dns_min_time_between_resolutions_ms"]) <= 1000
    # A silent peer (its machine dead) fails the connection within a minute, not the kernel's ~15.
    assert int(options["grpc.keepalive_time_ms"]) + int(options["grpc.keepalive_timeout_ms"]) <= 60000
    own = {GRPC_OPTIONS_ENV: "grpc.max_reconnect_backoff_ms=5000"}
    set_grpc_options(own)
    assert own[GRPC_OPTIONS_ENV] == "grpc.max_reconnect_backoff_ms=5000"
