"""Loopback ports for the servers tfk8s starts on one machine: trainer.local's tasks, the local control plane."""

from __future__ import annotations

import random
import socket
from pathlib import Path

# Listening ports come from below the kernel's ephemeral range. A port the kernel hands out
# (bind to 0) is one it may also give a process's next outgoing connection as its source port:
# between choosing the ports and starting the last process, the API server's connections to
# etcd took one, and the controller-manager then failed with "address already in use".
# Ports are never given twice in one process: two servers picked one after the other must not
# share a port that neither has bound yet (two in-process PS on one port never started).
# The range is halved: the local cluster's servers take the lower half, trainer.local's tasks the
# upper one. The two often start in separate processes at once (make test runs the real-pod stage
# beside the trainer's tests), where `_given` cannot see the other's picks: a port the cluster had
# picked and not bound yet was a task's, and Kueue's controller failed "address already in use".
EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
LOWEST_LISTEN_PORT = 10_000
TASKS, CLUSTER = "tasks", "cluster"
_given: set[int] = set()


class NoFreePort(RuntimeError):
    pass


def free_port(band: str = TASKS) -> int:
    """A loopback port nothing listens on, outside the ephemeral range, not given before, in the
    half of the range of `band` (TASKS or CLUSTER)."""
    first_ephemeral = int(EPHEMERAL_RANGE.read_text().split()[0]) if EPHEMERAL_RANGE.exists() else 32_768
    middle = (LOWEST_LISTEN_PORT + first_ephemeral) // 2
    candidates = list(range(LOWEST_LISTEN_PORT, middle) if band == CLUSTER else range(middle, first_ephemeral))
    random.shuffle(candidates)
    for port in candidates:
        if port in _given:
            continue
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        _given.add(port)
        return port
    raise NoFreePort(f"no free loopback port in {candidates[0]}..{candidates[-1] if candidates else '?'}")


def free_ports(count: int) -> list[int]:
    return [free_port() for _ in range(count)]
