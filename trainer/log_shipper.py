"""The log shipper: copies a task's output to the container's stdout and to the experiment's log collector.

A task's pod is deleted when it ends or is retried, and `kubectl logs` with it. Every task's program
writes into a FIFO this reads (`python3 log_shipper.py < FIFO`): each chunk goes to stdout as it came,
so `kubectl logs` is unchanged, and to the collector (log_collector.py), which keeps the log after the
pod is gone. The program must never wait for the archive: sending runs in a thread from a bounded
buffer that drops its oldest bytes when full, and says how many in the archive once it sends again.
What it sent stays kept (as many bytes again) until the collector has told, at a later connection,
that it holds them: a collector killed with bytes in flight, started again on its volume, gets them
again, and where they are no longer kept it is told how many are lost, where.

Environment: the collector's host:port, the task's type and index and the pod's name, as named in
log_protocol.py (which also writes the header each connection starts with); without them the output
still goes to stdout. The wrapper shell forwards SIGTERM to the program, so this ignores it (and
SIGINT, SIGHUP) to copy the program's last words; SIGUSR1 says the program ended: whatever a
left-behind child still writes is copied for at most DRAIN_S more. Nothing but status lines
(`tfk8s: ...` on stderr) is ever added, and the log's content never appears in them.

Standard library only, Python 3.8+: it runs in any team's image, a file beside log_protocol.py.
"""

from __future__ import annotations

import collections
import os
import select
import signal
import socket
import sys
import threading
import time
from typing import TYPE_CHECKING, Mapping, Optional

if TYPE_CHECKING or __package__:
    from . import log_protocol as protocol
else:  # as a pod runs it: a file beside log_protocol.py, in the archive's ConfigMap
    # Python puts a script's folder on sys.path, but not with PYTHONSAFEPATH=1 (3.11+: a team's image
    # or tfk8s:program.env may set it) nor with -I: put it first, or the import below fails.
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import log_protocol as protocol

DRAIN_S = protocol.SHIPPER_DRAIN_S
BUFFER_BYTES = 4 * 2**20
# What was sent, kept to send again: the socket buffers' bytes in flight (a few MiB at most).
SENT_KEPT_BYTES = 4 * 2**20
CHUNK_BYTES = 65536
POLL_S = 0.5
CONNECT_TIMEOUT_S = 5.0
# A collector that takes no bytes for this long is treated as gone: connect again.
SEND_TIMEOUT_S = 60.0
FIRST_RETRY_S = 1.0
LAST_RETRY_S = 5.0
# A collector out of reach for this long is said on stderr (before, it is most likely starting).
QUIET_S = 30.0


def say(line: str) -> None:
    """A status line on the container's stderr (the program's own output goes to stdout only)."""
    try:
        os.write(2, f"tfk8s: {line}\n".encode("utf-8", "replace"))
    except OSError:
        pass


def write_all(fd: int, data: bytes) -> bool:
    """Writes every byte; False when the file cannot take them (e.g. EPIPE)."""
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            select.select([], [fd], [])
        except OSError:
            return False
    return True


class Outbox:
    """The bytes still to send, at most `limit`: when the collector is away or slower than the program,
    the oldest are dropped and counted, so the program never waits."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._chunks: collections.deque[bytes] = collections.deque()
        self._size = 0
        self._dropped = 0
        self._closed = False  # the program's output ended: nothing more comes
        self._changed = threading.Condition()

    def put(self, data: bytes) -> None:
        with self._changed:
            self._chunks.append(data)
            self._size += len(data)
            self._keep_limit()

    def _keep_limit(self) -> None:
        while self._size > self._limit:
            cut = min(len(self._chunks[0]), self._size - self._limit)
            self._chunks[0] = self._chunks[0][cut:]
            if not self._chunks[0]:
                self._chunks.popleft()
            self._size -= cut
            self._dropped += cut
        self._changed.notify_all()

    def take(self, timeout_s: float) -> tuple[int, bytes]:
        """The count of bytes dropped since the last take and the next bytes to send; (0, b"") if none
        came, or once the outbox is closed and empty."""
        with self._changed:
            self._changed.wait_for(lambda: self._chunks or self._dropped or self._closed, timeout_s)
            dropped, self._dropped = self._dropped, 0
            taken, size = [], 0
            while self._chunks and size < CHUNK_BYTES:
                taken.append(self._chunks.popleft())
                size += len(taken[-1])
            data = b"".join(taken)
            self._size -= size
            return dropped, data

    def close(self) -> None:
        with self._changed:
            self._closed = True
            self._changed.notify_all()

    def drained(self) -> bool:
        """Closed, and every byte taken."""
        with self._changed:
            return self._closed and not (self._chunks or self._dropped)

    def pending(self) -> int:
        """Bytes not sent (yet), dropped ones included."""
        with self._changed:
            return self._size + self._dropped


class Sender:
    """Sends the outbox to the collector, connecting again (and sending the header again) whenever the
    connection breaks; says once when the collector cannot be reached and once when it is again. Once
    the outbox is closed and sent, ends the connection and waits for the collector's count of the run
    to be all it was sent (`archived`): its process may have ended with bytes in flight."""

    def __init__(self, outbox: Outbox, host: str, port: int, header: bytes) -> None:
        self.outbox = outbox
        self.address = (host, port)
        self.header = header
        self.sent = SentBytes(SENT_KEPT_BYTES)
        self.archived = threading.Event()
        self.away = False
        self.failed = False
        self.unreached = ""  # why the collector could not be reached, while it cannot

    def run(self) -> None:
        while not self.archived.is_set():
            try:
                self._connect_and_send()
            except Exception as error:  # a fault of this script's: the archive stops a while, never the output
                if not self.failed:
                    say(f"archiving this log failed ({type(error).__name__}); trying again")
                self.failed = True
            if not self.archived.is_set():
                time.sleep(FIRST_RETRY_S)

    def finish(self, timeout_s: float) -> bool:
        """Whether the collector holds the whole log, once the output ended, within `timeout_s`."""
        self.outbox.close()
        return self.archived.wait(max(timeout_s, 0))

    def _connect_and_send(self) -> None:
        retry_s = FIRST_RETRY_S
        since = time.monotonic()
        while True:
            try:
                sock = socket.create_connection(self.address, timeout=CONNECT_TIMEOUT_S)
                break
            except OSError as error:
                reason = self.unreached = str(error) or type(error).__name__
                # The collector starting beside the tasks, its name not published yet: the outbox
                # holds the first lines meanwhile, and the task's log says nothing of it.
                if not self.away and time.monotonic() - since >= QUIET_S:
                    say(
                        f"the log collector at {self.address[0]}:{self.address[1]} cannot be reached ({reason}); "
                        "this log is kept only in the pod meanwhile"
                    )
                    self.away = True
                time.sleep(retry_s)
                retry_s = min(retry_s * 2, LAST_RETRY_S)
        if self.away:
            say(f"the log collector at {self.address[0]}:{self.address[1]} is reached again; archiving this log")
            self.away = False
        self.unreached = ""
        with sock:
            sock.settimeout(SEND_TIMEOUT_S)
            try:
                sock.sendall(self.header)
                held = protocol.parse_at_line(read_answer(sock))
                if held is None:
                    return  # not a collector of this release: connect again
                sock.sendall(self.sent.again(held))
            except OSError:
                return
            self._send_until_broken(sock)

    def _send_until_broken(self, sock: socket.socket) -> None:
        while not self._closed(sock):
            dropped, data = self.outbox.take(FIRST_RETRY_S)
            if not (dropped or data):
                if self.outbox.drained():
                    self._end(sock)
                    return
                continue
            sending = (dropped_note(dropped) if dropped else b"") + data
            # Kept before it goes: whatever of it the collector does not get is sent again at the next
            # connection.
            self.sent.add(sending)
            try:
                sock.sendall(sending)
            except OSError:
                return

    def _end(self, sock: socket.socket) -> None:
        """The output ended and is sent: the collector, told so, answers with its count of the run."""
        try:
            sock.shutdown(socket.SHUT_WR)
            held = protocol.parse_at_line(read_answer(sock))
        except OSError:
            return  # connect again: what the collector lacks is sent again
        if held is not None and held >= self.sent.end:
            self.archived.set()

    @staticmethod
    def _closed(sock: socket.socket) -> bool:
        """Whether the collector went away: past its answer it never sends, so anything readable is its
        end."""
        try:
            readable, _, _ = select.select([sock], [], [], 0)
            return bool(readable) and not sock.recv(CHUNK_BYTES)
        except OSError:
            return True


def dropped_note(count: int) -> bytes:
    return f"[tfk8s: {count} bytes of this log could not be archived]\n".encode()


def read_answer(sock: socket.socket) -> bytes:
    """The collector's answer line, without its newline, read byte by byte: what follows is not its."""
    line = b""
    while len(line) < protocol.MAX_LINE_BYTES:
        byte = sock.recv(1)
        if not byte:
            raise ConnectionError("the collector closed before its answer")
        if byte == b"\n":
            return line
        line += byte
    raise ConnectionError("the collector's answer is too long")


class SentBytes:
    """The newest bytes sent on this pod's run, at most `limit`, and where they end in the run: what a
    collector that connects again and holds less is sent again."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._kept = bytearray()
        self._end: Optional[int] = None  # in the collector's count of the run; None before it was told

    @property
    def end(self) -> int:
        return self._end or 0

    def add(self, data: bytes) -> None:
        self._kept += data
        del self._kept[: max(len(self._kept) - self._limit, 0)]
        self._end = (self._end or 0) + len(data)

    def again(self, held: int) -> bytes:
        """What to send first on a connection whose collector holds `held` bytes of the run: what it
        lacks of what was sent, after a note of how many bytes are lost where it lacks more than is
        kept. Ends where the collector's count will, once they are sent."""
        if self._end is None or held >= self._end:
            # The run's first connection (a shipper started again in its pod: after what is there),
            # or a collector that holds everything (or more: bytes not this shipper's, before its own).
            if self._end is not None and held > self._end:
                self._kept = bytearray()
            self._end = held
            return b""
        start = self._end - len(self._kept)
        if held >= start:
            return bytes(self._kept[held - start :])
        resent = dropped_note(start - held) + bytes(self._kept)
        self._kept = bytearray()
        self._end = held
        self.add(resent)
        return resent


def start_archive(environ: Mapping[str, str]) -> Optional[Sender]:
    """The sender that empties its outbox in the background; None (said on stderr) when the environment
    names no collector."""
    host, _, port = environ.get(protocol.COLLECTOR_ENV, "").rpartition(":")
    host = host.strip("[]")
    task = protocol.task_name(environ.get(protocol.TASK_TYPE_ENV, ""), environ.get(protocol.TASK_INDEX_ENV, ""))
    pod = environ.get(protocol.POD_NAME_ENV, "")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        problem = f"{protocol.COLLECTOR_ENV} is not host:port"
    elif not task:
        problem = f"{protocol.TASK_TYPE_ENV} and {protocol.TASK_INDEX_ENV} name no task"
    elif not protocol.is_pod_name(pod):
        problem = f"{protocol.POD_NAME_ENV} is not a pod's name"
    else:
        outbox = Outbox(BUFFER_BYTES)
        sender = Sender(outbox, host, int(port), protocol.header(task, pod))
        threading.Thread(target=sender.run, name="log-sender", daemon=True).start()
        return sender
    say(f"{problem}: this log is not archived, only kept in the pod")
    return None


def copy_output(outbox: Optional[Outbox], program_ended: list[float]) -> None:
    """Copies stdin to stdout and the outbox until EOF, or DRAIN_S after the program ended."""
    stdout_open = True
    while True:
        timeout_s = POLL_S
        if program_ended:
            timeout_s = min(POLL_S, program_ended[0] + DRAIN_S - time.monotonic())
            if timeout_s <= 0:
                return
        try:
            readable, _, _ = select.select([0], [], [], timeout_s)
            data = os.read(0, CHUNK_BYTES) if readable else None
        except BlockingIOError:
            continue
        except OSError:
            return
        if data == b"":
            return
        if data is None:
            continue
        if stdout_open and not write_all(1, data):
            stdout_open = False
            say("the container's stdout is closed: this log goes to the archive only")
        if outbox is not None:
            try:
                outbox.put(data)
            except Exception as error:  # the archive may fail, the copy to stdout must not
                say(f"archiving this log failed ({type(error).__name__}); it is kept only in the pod")
                outbox = None


def main() -> None:
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)
    program_ended: list[float] = []
    signal.signal(signal.SIGUSR1, lambda *_: program_ended.append(time.monotonic()))
    try:
        sender = start_archive(os.environ)
    except Exception as error:
        say(f"archiving this log failed ({type(error).__name__}); it is kept only in the pod")
        sender = None
    try:
        copy_output(sender.outbox if sender is not None else None, program_ended)
        if sender is not None:
            deadline = time.monotonic() + DRAIN_S
            if program_ended:
                deadline = min(deadline, program_ended[0] + DRAIN_S)
            archived = sender.finish(deadline - time.monotonic())
            left, why = sender.outbox.pending(), sender.unreached
            if not archived and why:
                where = f"{sender.address[0]}:{sender.address[1]}"
                lost = (
                    f"{left} bytes of this log are not archived" if left else "the end of this log may not be archived"
                )
                say(f"{lost}: the log collector at {where} cannot be reached ({why})")
    finally:
        # Always 0, and not sys.exit: the sender may be blocked in a send, and the pod waits on nothing of it.
        os._exit(0)


if __name__ == "__main__":
    main()
