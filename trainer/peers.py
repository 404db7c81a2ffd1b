"""Reaching the other tasks: wait until they serve, watch the PS, reconnect fast (no TensorFlow here).

In a cluster the tasks come up in any order: a PS may still be pulling its
image when the chief starts, and its DNS name does not exist until its pod
does. If the chief connected then, gRPC's reconnect backoff (up to 120 s by
default) left the whole experiment idle long after the PS was serving. So the
chief waits for every task first, polling cheaply, and the trainer's gRPC
channels retry within seconds and re-resolve DNS names often, so a replaced
pod's new IP is found quickly.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from typing import Callable, Mapping, MutableMapping, Sequence

# TensorFlow reads default gRPC channel arguments from this variable ("name=value,..."). The
# trainer sets them for itself (set_grpc_options); components/ gives a team's program the same
# value in its tasks' environment (components/objects/program_container.py), where the team's own
# `program.env` entry replaces it.
GRPC_OPTIONS_ENV = "TF_GRPC_DEFAULT_OPTIONS"
GRPC_OPTIONS = {
    # A task that was down is retried within half a second of coming back, not after 2 minutes:
    # a replaced worker waits for the chief's next attempt before it runs steps (with at most 2 s,
    # that wait was 2.3 s of the 16 s from a worker pod's deletion to its replacement's first
    # steps on real pods). An attempt is a TCP connect, cheap even to a peer that stays down.
    "grpc.initial_reconnect_backoff_ms": 500,
    # Also each connection attempt's deadline (gRPC's default: 20 s). A lost worker's channel
    # tries its old pod's address again, where nothing answers once the pod is gone: a team's TF2
    # chief waited those 20 s before its coordinator saw the worker lost (real pods, GRPC_TRACE).
    "grpc.min_reconnect_backoff_ms": 500,
    "grpc.max_reconnect_backoff_ms": 500,
    # A replaced pod keeps its DNS name and gets a new IP: look the name up again
    # within a second of a failure (gRPC's default waits 30 s between lookups).
    "grpc.dns_min_time_between_resolutions_ms": 1000,
    # A peer whose machine died in silence (power or network lost: no reset, no FIN) holds a call
    # open until the kernel gives up retransmitting, about 15 minutes: a chief stuck so on its lost
    # workers never saw their replacements (real pods, tests/realpods/test_faults.py). A ping
    # unanswered for 15 s, or data unacknowledged as long (gRPC sets TCP_USER_TIMEOUT with it),
    # fails the connection, and the coordinator treats the task as lost. 30 s between pings stays
    # within what a gRPC server accepts while it sends data (the PS and workers answer every step).
    "grpc.keepalive_time_ms": 30000,
    "grpc.keepalive_timeout_ms": 15000,
}
POLL_S = 0.25
WAIT_REPORT_EVERY_S = 15.0
# The chief's PS watchdog: one that was serving and then refuses connections this long is lost.
PS_WATCH_INTERVAL_S = 2.0
PS_WATCH_GRACE_S = 10.0


def set_grpc_options(environ: MutableMapping[str, str] = os.environ) -> None:
    """Set the trainer's gRPC options unless the operator set their own; before TensorFlow connects."""
    environ.setdefault(GRPC_OPTIONS_ENV, grpc_options_value())


def grpc_options_value() -> str:
    """GRPC_OPTIONS as TensorFlow reads them from GRPC_OPTIONS_ENV."""
    return ",".join(f"{name}={value}" for name, value in GRPC_OPTIONS.items())


def serving(address: str, timeout_s: float = 1.0) -> bool:
    """Something accepts connections at `host:port` (its name resolves and its server listens)."""
    host, port = address.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s):
            return True
    except OSError:
        return False


def wait_until_serving(
    tasks: Mapping[str, str],
    say: Callable[[str], None],
    poll_s: float = POLL_S,
    report_every_s: float = WAIT_REPORT_EVERY_S,
) -> float:
    """Block until every task (name -> address) serves; seconds waited.

    No time limit: a task whose pod is Pending or pulling its image is not
    lost, and the experiment cannot train without it. Says who it waits for.
    """
    started = time.monotonic()
    waiting = dict(tasks)
    next_report = started  # say at once whom it waits for, then every report_every_s
    while True:
        waiting = {name: address for name, address in waiting.items() if not serving(address, timeout_s=poll_s * 4)}
        if not waiting:
            return time.monotonic() - started
        now = time.monotonic()
        if now >= next_report:
            say(f"waiting {now - started:.0f} s for {len(waiting)} task(s) to serve: {', '.join(sorted(waiting))}")
            next_report = now + report_every_s
        time.sleep(poll_s)


def watch_parameter_servers(
    addresses: Sequence[str],
    on_lost: Callable[[int, str], None],
    stop: threading.Event,
    interval_s: float = PS_WATCH_INTERVAL_S,
    grace_s: float = PS_WATCH_GRACE_S,
) -> threading.Thread:
    """Call `on_lost(index, address)` once a PS that was serving has refused connections
    for `grace_s`, unless `stop` is set first (the chief is done).

    The coordinator can take a lost PS for a lost worker and retry its steps
    forever, so the chief watches the PS itself. A PS never seen serving (its
    pod still starting) is not lost.
    """

    def watch() -> None:
        seen_up: set[int] = set()
        down_since: dict[int, float] = {}
        while not stop.is_set():
            now = time.monotonic()
            for index, address in enumerate(addresses):
                if serving(address, timeout_s=interval_s):
                    seen_up.add(index)
                    down_since.pop(index, None)
                elif index in seen_up and now - down_since.setdefault(index, now) >= grace_s and not stop.is_set():
                    on_lost(index, address)
                    return
            stop.wait(interval_s)

    thread = threading.Thread(target=watch, name="ps-watchdog", daemon=True)
    thread.start()
    return thread
