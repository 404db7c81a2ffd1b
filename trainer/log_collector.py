"""The log collector: one pod per experiment that keeps every task's log after the task's pod is gone.

A task's pod is deleted when it ends or is retried, and `kubectl logs` with it; each task's shipper
(log_shipper.py) also streams its output here, so the archive still says why a task ended. Bounded:
each task keeps its last `--keep-runs` runs (pods), each run its newest `--run-bytes` bytes.

Ingest (every task reaches it) and read (127.0.0.1 only, through a port-forward) speak
log_protocol.py: a run is read by its task and pod, so a run that began or went since `list` changes
nothing of another's answer. On disk: `<task>/runs` lists the pods oldest first, `<task>/<pod>.log`
is a run's current part, `.log.1` the one before, `.truncated` says older bytes went (and holds how
many: what a run holds, told to a shipper that connects again, counts them).

Standard library only, Python 3.8+: it runs in a stock image, a file beside log_protocol.py.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import socketserver
import sys
import threading
import time
from typing import TYPE_CHECKING, BinaryIO, Optional

if TYPE_CHECKING or __package__:
    from . import log_protocol as protocol
else:  # as its pod runs it: a file beside log_protocol.py, in the archive's ConfigMap
    # Python puts a script's folder on sys.path, but not with PYTHONSAFEPATH=1 (3.11+: a team's image
    # or tfk8s:program.env may set it) nor with -I: put it first, or the import below fails.
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import log_protocol as protocol

HEADER_TIMEOUT_S = 10.0
CHUNK_BYTES = 65536
# A pod that connects again while its earlier connection still appends: how long the new one waits for
# it to end, so that the count it is told is final (a shipper closes the old one before it connects).
EARLIER_CONNECTION_WAIT_S = 10.0


def read_line(sock: socket.socket, limit: int, timeout_s: float) -> Optional[tuple[bytes, bytes]]:
    """The first line (without its newline) and what came after it; None when the peer sends no
    newline within `limit` bytes and `timeout_s` seconds, or closes first."""
    deadline = time.monotonic() + timeout_s
    received = b""
    while True:
        end = received.find(b"\n")
        if end >= 0:
            return (received[:end], received[end + 1 :]) if end < limit else None
        remaining = deadline - time.monotonic()
        if len(received) >= limit or remaining <= 0:
            return None
        sock.settimeout(remaining)
        try:
            data = sock.recv(limit)
        except OSError:
            return None
        if not data:
            return None
        received += data


class Archive:
    """The runs on disk. One lock guards the `runs` lists (taken first), one per pod its files, so that
    two connections of a pod never interleave a rotation and a reader sees whole parts."""

    def __init__(self, root: str, run_bytes: int, keep_runs: int) -> None:
        self.root = root
        self.run_bytes = run_bytes
        self.keep_runs = keep_runs
        self._runs_lock = threading.Lock()
        self._guard = threading.Lock()
        self._pod_locks: dict[tuple[str, str], threading.Lock] = {}
        self._connection_locks: dict[tuple[str, str], threading.Lock] = {}
        # Runs dropped for newer ones while their pod may still be sending: their bytes are discarded,
        # or the archive would outgrow its bound. Changed only under the pod's lock.
        self._dropped: set[tuple[str, str]] = set()

    def _pod_lock(self, task: str, pod: str) -> threading.Lock:
        with self._guard:
            return self._pod_locks.setdefault((task, pod), threading.Lock())

    def connection_lock(self, task: str, pod: str) -> threading.Lock:
        """Held by the connection that appends to a run."""
        with self._guard:
            return self._connection_locks.setdefault((task, pod), threading.Lock())

    def _path(self, task: str, name: str) -> str:
        return os.path.join(self.root, task, name)

    def runs(self, task: str) -> list[str]:
        try:
            with open(self._path(task, "runs"), encoding="ascii") as listed:
                return [pod for pod in listed.read().split("\n") if protocol.is_pod_name(pod)]
        except (OSError, UnicodeDecodeError):
            return []

    def tasks(self) -> dict[str, list[str]]:
        try:
            names = sorted(name for name in os.listdir(self.root) if protocol.is_task_name(name))
        except OSError:
            names = []
        listed = {task: self.runs(task) for task in names}
        return {task: runs for task, runs in listed.items() if runs}

    def open_run(self, task: str, pod: str) -> bool:
        """Registers a pod's run; True when the pod is new to its task (the oldest run may make room)."""
        with self._runs_lock:
            runs = self.runs(task)
            if pod in runs:
                return False
            os.makedirs(os.path.join(self.root, task), exist_ok=True)
            while len(runs) >= self.keep_runs:
                self._drop(task, runs.pop(0))
            runs.append(pod)
            temporary = self._path(task, "runs.tmp")
            with open(temporary, "w", encoding="ascii") as listed:
                listed.write("".join(run + "\n" for run in runs))
            os.replace(temporary, self._path(task, "runs"))
            with self._pod_lock(task, pod):
                self._dropped.discard((task, pod))
            return True

    def _drop(self, task: str, pod: str) -> None:
        with self._pod_lock(task, pod):
            self._dropped.add((task, pod))
            for suffix in (".log", ".log.1", ".truncated"):
                with contextlib.suppress(FileNotFoundError):
                    os.remove(self._path(task, pod + suffix))

    def append(self, task: str, pod: str, data: bytes) -> None:
        """Adds bytes to a run, starting a new part when the current one would pass half the run's
        bytes: the run then holds its newest bytes, between half of `run_bytes` and all of it."""
        half = max(self.run_bytes // 2, 1)
        current = self._path(task, pod + ".log")
        with self._pod_lock(task, pod):
            if (task, pod) in self._dropped:
                return
            while data:
                size = os.path.getsize(current) if os.path.exists(current) else 0
                if size >= half:
                    self._rotate(task, pod)
                    size = 0
                part, data = data[: half - size], data[half - size :]
                with open(current, "ab") as log:
                    log.write(part)

    def _rotate(self, task: str, pod: str) -> None:
        previous = self._path(task, pod + ".log.1")
        if os.path.exists(previous):
            self._write_count(self._path(task, pod + ".truncated"), self._gone(task, pod) + os.path.getsize(previous))
        os.replace(self._path(task, pod + ".log"), previous)

    def _gone(self, task: str, pod: str) -> int:
        """The bytes of a run no longer kept (0 for a `.truncated` of an earlier release, which is empty)."""
        try:
            with open(self._path(task, pod + ".truncated"), "rb") as count:
                text = count.read()
        except OSError:
            return 0
        return int(text) if text.isdigit() else 0

    @staticmethod
    def _write_count(path: str, count: int) -> None:
        temporary = path + ".tmp"
        with open(temporary, "wb") as written:
            written.write(str(count).encode("ascii"))
        os.replace(temporary, path)

    def held(self, task: str, pod: str) -> int:
        """The bytes of a run received so far: those kept and those no longer kept."""
        with self._pod_lock(task, pod):
            parts = [self._path(task, pod + suffix) for suffix in (".log.1", ".log")]
            return self._gone(task, pod) + sum(os.path.getsize(path) for path in parts if os.path.exists(path))

    def open_parts(self, task: str, pod: str) -> Optional[tuple[bool, list[BinaryIO]]]:
        """Whether the run's start was dropped and its parts oldest first, opened together so that a
        rotation or a drop after this returns changes nothing of what the reader gets; None when the
        task keeps no run of `pod`."""
        paths = [self._path(task, pod + suffix) for suffix in (".log.1", ".log")]
        with self._pod_lock(task, pod):
            # A dropped run is marked under this lock before its files go; its name leaves `runs` after.
            if (task, pod) in self._dropped or pod not in self.runs(task):
                return None
            parts: list[BinaryIO] = [open(path, "rb") for path in paths if os.path.exists(path)]
            return os.path.exists(self._path(task, pod + ".truncated")), parts


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    # Every task of an experiment connects at its start: a queue of 5 would turn most away for a while.
    request_queue_size = 1024
    archive: Archive


class IngestHandler(socketserver.BaseRequestHandler):
    server: Server

    def handle(self) -> None:
        sock: socket.socket = self.request
        first = read_line(sock, protocol.MAX_LINE_BYTES, HEADER_TIMEOUT_S)
        names = protocol.parse_header(first[0]) if first else None
        if first is None or names is None:
            return
        version, task, pod = names
        # A pod whose node died never closes: keepalive ends its connection and thread.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        archive = self.server.archive
        connection = archive.connection_lock(task, pod)
        ours = connection.acquire(timeout=EARLIER_CONNECTION_WAIT_S)
        try:
            if archive.open_run(task, pod):
                print(f"{task}: pod {pod}", flush=True)
            if version != "1":
                sock.settimeout(HEADER_TIMEOUT_S)
                sock.sendall(protocol.at_line(archive.held(task, pod)))
            sock.settimeout(None)
            if self._keep(sock, task, pod, first[1]) and version != "1":
                # The shipper's output ended: what the run holds now confirms it was all kept.
                sock.sendall(protocol.at_line(archive.held(task, pod)))
        except OSError as error:
            # Closing tells the shipper, which connects again a second later.
            print(f"{task}: pod {pod}: cannot keep its log: {error.strerror or error}", flush=True)
        finally:
            if ours:
                connection.release()

    def _keep(self, sock: socket.socket, task: str, pod: str, data: bytes) -> bool:
        """Appends what the connection brings; True when the shipper ended it, False when it broke."""
        archive = self.server.archive
        while True:
            archive.append(task, pod, data)
            try:
                data = sock.recv(CHUNK_BYTES)
            except OSError:
                return False
            if not data:
                return True


class ReadHandler(socketserver.BaseRequestHandler):
    server: Server

    def handle(self) -> None:
        sock: socket.socket = self.request
        request = read_line(sock, protocol.MAX_LINE_BYTES, HEADER_TIMEOUT_S)
        sock.settimeout(None)
        try:
            self._answer(sock, request[0] if request else b"")
        except OSError:
            pass  # the reader went away

    def _answer(self, sock: socket.socket, line: bytes) -> None:
        archive = self.server.archive
        run = protocol.parse_read_request(line)
        if line == protocol.LIST.encode("ascii"):
            sock.sendall(json.dumps({"tasks": archive.tasks()}).encode() + b"\n")
        elif run is not None:
            self._send_run(sock, *run)
        else:
            sock.sendall(f"{protocol.ERROR} expected '{protocol.LIST}' or '{protocol.READ} <task> <pod>'\n".encode())

    def _send_run(self, sock: socket.socket, task: str, pod: str) -> None:
        archive = self.server.archive
        opened = archive.open_parts(task, pod)
        if opened is None:
            sock.sendall(f"{protocol.MISSING} {task} keeps no run of pod {pod}\n".encode())
            return
        truncated, parts = opened
        try:
            sock.sendall(protocol.run_found(pod))
            if truncated:
                note = f"[tfk8s: the start of this run's log was not kept: more than {archive.run_bytes} bytes]\n"
                sock.sendall(note.encode())
            for part in parts:
                data = part.read(CHUNK_BYTES)
                while data:
                    sock.sendall(data)
                    data = part.read(CHUNK_BYTES)
        finally:
            for part in parts:
                part.close()


class IPv6Server(Server):
    address_family = socket.AF_INET6


class DualStackServer(IPv6Server):
    """Every address of the pod's, IPv6 and IPv4 alike: on an IPv6-only cluster a pod's address is IPv6."""

    def server_bind(self) -> None:
        self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        super().server_bind()


def every_address_server(port: int, handler: type[socketserver.BaseRequestHandler]) -> Server:
    """Both families where the pod has IPv6, else IPv4's."""
    if socket.has_dualstack_ipv6():
        try:
            return DualStackServer(("::", port), handler)
        except OSError:  # Python's check says such a socket can be made; a kernel may still refuse its bind
            pass
    return Server(("0.0.0.0", port), handler)


def serve(host: str, port: int, handler: type[socketserver.BaseRequestHandler], archive: Archive) -> Server:
    """Listens on `host` ("" for every address)."""
    if host == "":
        server = every_address_server(port, handler)
    else:
        server = (IPv6Server if ":" in host else Server)((host, port), handler)
    server.archive = archive
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description="Keeps every task's log after its pod is gone (ports 0: any).")
    parser.add_argument("--dir", required=True)
    parser.add_argument("--ingest-port", type=int, required=True)
    parser.add_argument("--read-port", type=int, required=True)
    parser.add_argument("--run-bytes", type=int, required=True)
    # No default: how many runs a task keeps is components/'s decision (components/spec/logs.py KEPT_RUNS).
    parser.add_argument("--keep-runs", type=int, required=True)
    parser.add_argument("--ingest-host", default="", help="the tasks' side (default: every address)")
    args = parser.parse_args(argv)
    if args.run_bytes < 2 or args.keep_runs < 1:
        parser.error("--run-bytes must be at least 2 and --keep-runs at least 1")
    os.makedirs(args.dir, exist_ok=True)
    archive = Archive(args.dir, args.run_bytes, args.keep_runs)
    stopping = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stopping.set())
    servers = [
        serve(args.ingest_host, args.ingest_port, IngestHandler, archive),
        serve("127.0.0.1", args.read_port, ReadHandler, archive),
    ]
    ingest_port, read_port = (server.server_address[1] for server in servers)
    print(
        f"tfk8s log collector: keeping logs in {args.dir}, at most {args.run_bytes} bytes a run and "
        f"{args.keep_runs} runs a task; tasks send to :{ingest_port} "
        f"(ingest port {ingest_port}, read port {read_port})",
        flush=True,
    )
    # Waiting in slices: the signal handler runs between them even where a plain wait would not wake.
    # Each chunk is on disk once appended, so nothing is left to save: the threads end with the process.
    while not stopping.wait(0.5):
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
