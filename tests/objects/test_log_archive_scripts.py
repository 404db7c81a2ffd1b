"""The log archive's two scripts, run as the pods run them (trainer/log_shipper.py in front of each
task's program, trainer/log_collector.py in the experiment's collector pod, each a file beside
trainer/log_protocol.py), on 127.0.0.1: a task's output reaches its container's stdout unchanged and
the collector's archive, which keeps each task's last runs, bounded, and answers `list` and `read`
(a run by its task and pod) on its read port.

Nothing here waits a fixed time: each step polls for what it expects, for up to a minute."""

from __future__ import annotations

import ast
import glob
import json
import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Iterator, Optional, Sequence

import pytest

from components.plan.trainer_bundle import load_trainer_bundle
from components.spec.stack_files import PROJECT_ROOT
from trainer import log_protocol, log_shipper
from trainer.log_shipper import QUIET_S

SHIPPER = PROJECT_ROOT / "trainer" / log_protocol.SHIPPER
COLLECTOR = PROJECT_ROOT / "trainer" / log_protocol.COLLECTOR
PATIENCE_S = 60.0
START_LINE = re.compile(r"^tfk8s log collector: .*\(ingest port (\d+), read port (\d+)\)$")


def eventually(
    check: Callable[[], object], what: str, patience_s: float = PATIENCE_S, raise_late: bool = True
) -> object:
    """The first truthy result of `check`, polled until `patience_s` is over (then the last result, where
    not `raise_late`)."""
    deadline = time.monotonic() + patience_s
    while True:
        result = check()
        if result:
            return result
        if not raise_late and time.monotonic() >= deadline:
            return result
        assert time.monotonic() < deadline, f"still not {what} after {patience_s} s"
        time.sleep(0.05)


class Collector:
    def __init__(self, process: subprocess.Popen, ingest_port: int, read_port: int) -> None:
        self.process = process
        self.ingest_port = ingest_port
        self.read_port = read_port

    def ask(self, request: bytes) -> bytes:
        """The whole answer to one request on the read port."""
        with socket.create_connection(("127.0.0.1", self.read_port), timeout=PATIENCE_S) as sock:
            sock.sendall(request)
            return receive_all(sock)

    def tasks(self) -> dict[str, list[str]]:
        return json.loads(self.ask(log_protocol.list_request()))["tasks"]

    def read(self, task: str, pod: str) -> bytes:
        """The answer to a read of `task`'s run in `pod`: `ok <pod>` and the log, or why not."""
        return self.ask(log_protocol.read_request(task, pod))

    def latest(self, task: str) -> bytes:
        """The log of `task`'s latest run; b"" while it has none."""
        runs = self.tasks().get(task, [])
        if not runs:
            return b""
        head, _, text = self.read(task, runs[-1]).partition(b"\n")
        return text if head.startswith(b"ok ") else b""


def receive_all(sock: socket.socket) -> bytes:
    received = b""
    while True:
        try:
            data = sock.recv(65536)
        except ConnectionResetError:
            return received
        if not data:
            return received
        received += data


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen]]:
    """Every process a test starts, killed at its end whatever happened."""
    started: list[subprocess.Popen] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=PATIENCE_S)
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                stream.close()


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    return tmp_path / "archive"


@pytest.fixture
def start_collector(processes: list[subprocess.Popen], archive: Path) -> Callable[..., Collector]:
    def start(
        run_bytes: int = 1 << 20,
        keep_runs: int = 2,
        ingest_port: int = 0,
        host: str = "127.0.0.1",
        script: Path = COLLECTOR,
        python: Sequence[str] = (sys.executable,),
    ) -> Collector:
        command = [*python, str(script), "--dir", str(archive), "--ingest-host", host]
        command += ["--ingest-port", str(ingest_port), "--read-port", "0", "--run-bytes", str(run_bytes)]
        process = subprocess.Popen([*command, "--keep-runs", str(keep_runs)], stdout=subprocess.PIPE, text=True)
        processes.append(process)
        lines: queue.Queue[str] = queue.Queue()
        assert process.stdout is not None
        output = process.stdout

        def read_lines() -> None:
            for line in output:
                lines.put(line)
            lines.put("")  # the collector ended: no start line is coming

        threading.Thread(target=read_lines, daemon=True).start()
        first = lines.get(timeout=PATIENCE_S)
        assert first, "the collector ended before its start line (its stderr says why)"
        match = START_LINE.match(first.rstrip("\n"))
        assert match, "the collector's start line names its ports"
        return Collector(process, int(match[1]), int(match[2]))

    return start


def shipper_env(
    port: Optional[int], task_type: str = "ps", index: str = "0", pod: str = "pod-a", host: str = "127.0.0.1"
) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("TFK8S_")}
    env.update({"TFK8S_LOG_TASK_TYPE": task_type, "TFK8S_LOG_TASK_INDEX": index, "TFK8S_POD_NAME": pod})
    if port is not None:
        env["TFK8S_LOG_COLLECTOR"] = f"{host}:{port}"
    return env


def start_shipper(
    processes: list[subprocess.Popen],
    env: dict[str, str],
    stdin: object = subprocess.PIPE,
    script: Path = SHIPPER,
    python: Sequence[str] = (sys.executable,),
):
    process = subprocess.Popen(
        [*python, str(script)], stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    processes.append(process)
    return process


def ship(
    processes: list[subprocess.Popen],
    env: dict[str, str],
    log: bytes,
    script: Path = SHIPPER,
    python: Sequence[str] = (sys.executable,),
) -> tuple[bytes, bytes]:
    """A whole task's output through the shipper: its stdout and stderr; it must exit 0."""
    process = start_shipper(processes, env, script=script, python=python)
    stdout, stderr = process.communicate(log, timeout=PATIENCE_S)
    assert process.returncode == 0, stderr
    return stdout, stderr


def numbered_lines(name: str, count: int) -> bytes:
    return b"".join(f"{name} line {number:06d}\n".encode() for number in range(count))


def test_the_output_reaches_stdout_unchanged_and_the_archive_keeps_it(processes, start_collector):
    collector = start_collector()
    log = bytes(range(256)) * 300 + numbered_lines("ps-0", 2000) + b"a last line without its newline"
    stdout, stderr = ship(processes, shipper_env(collector.ingest_port), log)
    assert stdout == log
    assert stderr == b""
    eventually(lambda: collector.read("ps-0", "pod-a") == b"ok pod-a\n" + log, "archived")
    assert collector.tasks() == {"ps-0": ["pod-a"]}


def pod_folder(folder: Path, names: tuple[str, ...]) -> Path:
    """A folder holding only `names` of the archive's ConfigMap, as the bundle packs them."""
    files = load_trainer_bundle(PROJECT_ROOT).log_archive_files
    folder.mkdir()
    for name in names:
        (folder / name).write_text(files[name])
    return folder


def python_3_8() -> Optional[str]:
    """A Python 3.8 on this machine (the oldest python3 the pods run the scripts on); None without one."""
    found = [shutil.which("python3.8"), *sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.8.*/bin/python3.8")))]
    for candidate in filter(None, found):
        is_3_8 = "import sys; sys.exit(sys.version_info[:2] != (3, 8))"
        if subprocess.run([candidate, "-c", is_3_8], capture_output=True, timeout=PATIENCE_S).returncode == 0:
            return candidate  # (a pyenv shim of another version's fails the check)
    return None


# How a pod's python3 may start the scripts. A team's image, or its tfk8s:program.env, may set
# PYTHONSAFEPATH=1 (Python 3.11 and later), and an image's python3 may run isolated (-I): either
# leaves the script's own folder, where log_protocol.py lies, off sys.path.
STARTS: dict[str, Callable[[str], list[str]]] = {
    "as-is": lambda python: [python],
    "PYTHONSAFEPATH=1": lambda python: ["env", "PYTHONSAFEPATH=1", python],
    "-I": lambda python: [python, "-I"],
}


@pytest.mark.parametrize(
    "version, start",
    [*(("this", start) for start in STARTS), ("3.8", "as-is"), ("3.8", "-I")],  # 3.8 knows no PYTHONSAFEPATH
)
def test_each_pod_kind_runs_from_a_folder_holding_only_its_files_of_the_configmap(
    processes, start_collector, tmp_path, version, start
):
    """As in a pod: the script started by its path, the protocol it imports beside it, nothing else;
    so a task's shipper and the collector run exactly the files their hashes cover, also where
    Python leaves the script's folder off sys.path, and on the oldest python3 they run on."""
    interpreter = sys.executable if version == "this" else python_3_8()
    if interpreter is None:
        pytest.skip("no Python 3.8 is installed here (python3.8 on PATH or in ~/.pyenv/versions/3.8.*)")
    python = STARTS[start](interpreter)
    shipper = pod_folder(tmp_path / "task", log_protocol.SHIPPER_FILES) / log_protocol.SHIPPER
    collector_folder = pod_folder(tmp_path / "collector", log_protocol.COLLECTOR_FILES)
    collector = start_collector(script=collector_folder / log_protocol.COLLECTOR, python=python)
    log = numbered_lines("chief-0", 100)
    stdout, stderr = ship(processes, shipper_env(collector.ingest_port, "chief"), log, script=shipper, python=python)
    assert (stdout, stderr) == (log, b"")
    eventually(lambda: collector.read("chief-0", "pod-a") == b"ok pod-a\n" + log, "archived")


@pytest.mark.parametrize("name", log_protocol.ARCHIVE_FILES)
def test_the_archives_files_are_python_3_8(name):
    """Any team's image runs the shipper: its python3 may be as old as 3.8."""
    ast.parse((PROJECT_ROOT / "trainer" / name).read_text(), name, feature_version=(3, 8))


def test_on_ipv6_the_tasks_reach_the_collector_too(processes, start_collector):
    """An IPv6-only cluster gives pods IPv6 addresses only (by default the collector listens on every
    address of both families; here on the loopback, as every test does)."""
    collector = start_collector(host="::1")
    log = numbered_lines("ps-0", 100)
    stdout, _ = ship(processes, shipper_env(collector.ingest_port, host="[::1]"), log)
    assert stdout == log
    eventually(lambda: collector.read("ps-0", "pod-a") == b"ok pod-a\n" + log, "archived over IPv6")


def test_a_run_longer_than_run_bytes_keeps_its_newest_bytes_and_says_its_start_was_not_kept(
    processes, start_collector, archive
):
    collector = start_collector(run_bytes=1000)
    log = numbered_lines("worker-3", 500)
    ship(processes, shipper_env(collector.ingest_port, "worker", "3"), log)
    note = b"ok pod-a\n[tfk8s: the start of this run's log was not kept: more than 1000 bytes]\n"

    def kept_tail() -> Optional[bytes]:
        answer = collector.read("worker-3", "pod-a")
        return answer[len(note) :] if answer.startswith(note) and log.endswith(answer[len(note) :]) else None

    eventually(lambda: (kept_tail() or b"").endswith(log[-100:]), "the run's last bytes archived")
    kept = kept_tail()
    assert kept is not None and 500 <= len(kept) <= 1000
    on_disk = sum(path.stat().st_size for path in (archive / "worker-3").glob("pod-a.log*"))
    assert on_disk <= 1000


def test_a_task_keeps_its_last_runs_and_reads_each_by_its_pod(processes, start_collector, archive):
    collector = start_collector(keep_runs=2)
    logs = {pod: numbered_lines(pod, 50) for pod in ("pod-a", "pod-b", "pod-c")}
    for pod, log in logs.items():
        ship(processes, shipper_env(collector.ingest_port, pod=pod), log)
        latest = f"ok {pod}\n".encode() + log
        eventually(lambda pod=pod, latest=latest: collector.read("ps-0", pod) == latest, f"{pod} archived")
    assert collector.tasks() == {"ps-0": ["pod-b", "pod-c"]}
    assert collector.read("ps-0", "pod-b") == b"ok pod-b\n" + logs["pod-b"]
    assert not list((archive / "ps-0").glob("pod-a*")), "the oldest run's files are gone"
    assert collector.read("ps-0", "pod-a").startswith(b"missing "), "a dropped run is said to be missing"
    assert collector.read("worker-0", "pod-b").startswith(b"missing "), "runs are the task's own"
    for request in (b"read ps-0\n", b"read ../ps-0 pod-b\n", b"read ps-0 ../pod-b\n", b"delete ps-0\n", b"\n"):
        assert collector.ask(request).startswith(b"error "), request


def test_a_run_read_by_its_pod_is_that_run_whatever_began_since_the_list(processes, start_collector):
    """The reader lists the runs, then reads one: a run that began in between (a task retried) must
    not turn the answer into another run's log, as reading by position did."""
    collector = start_collector(keep_runs=3)
    logs = {pod: numbered_lines(pod, 20) for pod in ("pod-a", "pod-b", "pod-c")}
    for pod in ("pod-a", "pod-b"):
        ship(processes, shipper_env(collector.ingest_port, pod=pod), logs[pod])
        eventually(lambda pod=pod: collector.read("ps-0", pod) == b"ok " + pod.encode() + b"\n" + logs[pod], pod)
    assert collector.tasks() == {"ps-0": ["pod-a", "pod-b"]}  # what `logs ps-0 --previous` reads pod-a from
    ship(processes, shipper_env(collector.ingest_port, pod="pod-c"), logs["pod-c"])
    eventually(lambda: collector.tasks() == {"ps-0": ["pod-a", "pod-b", "pod-c"]}, "the new run listed")
    assert collector.read("ps-0", "pod-a") == b"ok pod-a\n" + logs["pod-a"]


BAD_HEADERS = [
    b"tfk8s-log 1 ../x pod-a\n",
    b"tfk8s-log 1 ps-0 ../x\n",
    b"tfk8s-log 1 ps-0 a..b\n",
    b"tfk8s-log 1 PS-0 pod-a\n",
    b"tfk8s-log 1 ps-0 Pod-A\n",
    b"tfk8s-log 3 ps-0 pod-a\n",
    b"tfk8s-log 1 ps-0 pod-a extra\n",
    b"tfk8s-log 1 ps-0 " + b"a" * 600 + b"\n",
    b"tfk8s-log 1 ps-0 pod-a",  # and then the sender closes its side
]


def test_a_bad_header_stores_nothing_anywhere(start_collector, archive, tmp_path):
    collector = start_collector()
    for header in BAD_HEADERS:
        with socket.create_connection(("127.0.0.1", collector.ingest_port), timeout=PATIENCE_S) as sock:
            try:
                sock.sendall(header + b"some log\n" if header.endswith(b"\n") else header)
                sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass  # the collector may have closed on the bytes it had already
            assert receive_all(sock) == b"", "the collector closes the connection"
    assert collector.tasks() == {}
    assert [path.name for path in tmp_path.iterdir()] == ["archive"]
    assert list(archive.rglob("*")) == []


def test_a_header_that_never_ends_is_given_up(start_collector, archive):
    collector = start_collector()
    with socket.create_connection(("127.0.0.1", collector.ingest_port), timeout=PATIENCE_S) as sock:
        sock.sendall(b"tfk8s-log 1 ps-0 pod-a")
        assert receive_all(sock) == b"", "the collector closes the connection by itself"
    assert list(archive.rglob("*")) == []


def refusing_port() -> socket.socket:
    """A port bound but not listening: connecting to it is refused, and no other test takes it."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    return sock


def test_without_a_collector_the_output_still_reaches_stdout(processes):
    with refusing_port() as reserved:
        log = numbered_lines("secret", 1000)
        stdout, stderr = ship(processes, shipper_env(reserved.getsockname()[1]), log)
    assert stdout == log
    lines = stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tfk8s: "), lines
    assert b"secret" not in stderr


BAD_SETTINGS = [{"TFK8S_POD_NAME": "../x"}, {"TFK8S_LOG_TASK_INDEX": "x"}, {"TFK8S_LOG_COLLECTOR": "collector"}]


@pytest.mark.parametrize("change", BAD_SETTINGS)
def test_without_its_settings_the_shipper_still_copies_the_output(processes, change):
    log = numbered_lines("ps-0", 100)
    stdout, stderr = ship(processes, {**shipper_env(9), **change}, log)
    assert stdout == log
    lines = stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tfk8s: "), lines


class Output:
    """A running process's stdout (or stderr), read as it comes."""

    def __init__(self, process: subprocess.Popen, stream: str = "stdout") -> None:
        self.received = b""
        pipe = getattr(process, stream)
        assert pipe is not None
        threading.Thread(target=self._read, args=(pipe.fileno(),), daemon=True).start()

    def _read(self, fd: int) -> None:
        while data := os.read(fd, 65536):
            self.received += data


def test_a_collector_started_late_or_restarted_gets_the_later_output(processes, start_collector):
    reserved = refusing_port()
    port = reserved.getsockname()[1]
    shipper = start_shipper(processes, shipper_env(port))
    stdout = Output(shipper)
    assert shipper.stdin is not None
    sent = b"before the collector\n"
    shipper.stdin.write(sent)
    shipper.stdin.flush()
    eventually(lambda: stdout.received == sent, "echoed")
    reserved.close()

    def send_until_archived(collector: Collector, name: str) -> None:
        nonlocal sent
        for number in range(int(PATIENCE_S * 10)):
            line = f"{name} {number}\n".encode()
            shipper.stdin.write(line)
            shipper.stdin.flush()
            sent += line
            if f"{name} ".encode() in collector.read("ps-0", "pod-a"):
                return
            time.sleep(0.1)
        pytest.fail(f"{name}: nothing archived")

    collector = start_collector(ingest_port=port)
    send_until_archived(collector, "after the start")
    assert collector.read("ps-0", "pod-a").startswith(b"ok pod-a\nbefore the collector\n")
    collector.process.terminate()
    assert collector.process.wait(timeout=PATIENCE_S) == 0
    restarted = start_collector(ingest_port=port)
    send_until_archived(restarted, "after the restart")
    assert restarted.tasks() == {"ps-0": ["pod-a"]}, "a pod that connects again goes on with its run"
    shipper.stdin.close()
    assert shipper.wait(timeout=PATIENCE_S) == 0
    eventually(lambda: stdout.received == sent, "everything echoed")
    assert shipper.stderr is not None
    said = shipper.stderr.read().decode().splitlines()
    assert said == [], "a collector that comes within a while (one starting beside the tasks) is no news"


def test_a_collector_away_past_the_quiet_time_is_said_once_and_so_is_its_return(processes, start_collector):
    """The one test that waits out QUIET_S (30 s): a collector still out of reach then is news, said
    once on stderr (never the log's content); once it is back, so is that, and the log is archived."""
    reserved = refusing_port()
    port = reserved.getsockname()[1]
    shipper = start_shipper(processes, shipper_env(port))
    stdout, stderr = Output(shipper), Output(shipper, "stderr")
    assert shipper.stdin is not None
    sent = b"secret line while the collector is away\n"
    shipper.stdin.write(sent)
    shipper.stdin.flush()
    started = time.monotonic()
    away = f"tfk8s: the log collector at 127.0.0.1:{port} cannot be reached ("
    eventually(lambda: away.encode() in stderr.received, "said on stderr", QUIET_S + PATIENCE_S)
    assert time.monotonic() - started >= QUIET_S, "said before the collector had its time to start"
    reserved.close()
    collector = start_collector(ingest_port=port)
    eventually(lambda: sent in collector.read("ps-0", "pod-a"), "archived once the collector is back")
    shipper.stdin.close()
    assert shipper.wait(timeout=PATIENCE_S) == 0
    assert stdout.received == sent
    said = stderr.received.decode().splitlines()
    assert len(said) == 2 and said[0].startswith(away), said
    assert said[1] == f"tfk8s: the log collector at 127.0.0.1:{port} is reached again; archiving this log", said
    assert b"secret" not in stderr.received


def test_what_the_shipper_could_not_hold_for_an_absent_collector_is_counted_in_the_archive(processes, start_collector):
    """The shipper holds 4 MiB for the collector; past that it drops the oldest bytes, never slowing the program."""
    reserved = refusing_port()
    port = reserved.getsockname()[1]
    shipper = start_shipper(processes, shipper_env(port))
    stdout = Output(shipper)
    assert shipper.stdin is not None
    log = numbered_lines("worker-0", 6 * 2**20 // 20) + b"the last line\n"
    shipper.stdin.write(log)
    shipper.stdin.flush()
    eventually(lambda: stdout.received == log, "echoed while the collector is away")
    reserved.close()
    collector = start_collector(run_bytes=16 * 2**20, ingest_port=port)

    def archived() -> bytes:
        answer = collector.read("ps-0", "pod-a")
        return answer if answer.endswith(b"the last line\n") else b""

    answer = eventually(archived, "archived")
    note = re.match(rb"ok pod-a\n\[tfk8s: (\d+) bytes of this log could not be archived\]\n", answer)
    assert note, answer[:200]
    dropped = int(note[1])
    assert answer[note.end() :] == log[dropped:]
    assert len(log) - dropped <= 4 * 2**20
    shipper.stdin.close()
    assert shipper.wait(timeout=PATIENCE_S) == 0


def test_after_sigusr1_the_shipper_ends_though_a_child_of_the_program_holds_its_input(processes, start_collector):
    collector = start_collector()
    read_end, write_end = os.pipe()
    # The program's child that lives on: it holds the FIFO's writing end, so the shipper sees no EOF.
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], stdout=write_end)
    processes.append(child)
    shipper = start_shipper(processes, shipper_env(collector.ingest_port), stdin=read_end)
    os.close(read_end)
    os.write(write_end, b"the program's last words\n")
    os.close(write_end)
    stdout = Output(shipper)
    eventually(lambda: stdout.received == b"the program's last words\n", "echoed")
    shipper.send_signal(signal.SIGUSR1)
    assert shipper.wait(timeout=PATIENCE_S) == 0
    assert child.poll() is None, "the child still holds the shipper's input"
    eventually(lambda: collector.read("ps-0", "pod-a") == b"ok pod-a\nthe program's last words\n", "archived")


def test_sigterm_sigint_and_sighup_do_not_stop_the_shipper(processes):
    shipper = start_shipper(processes, shipper_env(None))
    stdout = Output(shipper)
    assert shipper.stdin is not None
    shipper.stdin.write(b"before\n")
    shipper.stdin.flush()
    eventually(lambda: stdout.received == b"before\n", "echoed")
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        shipper.send_signal(signum)
    shipper.stdin.write(b"the program saves a checkpoint\n")
    shipper.stdin.flush()
    eventually(lambda: stdout.received == b"before\nthe program saves a checkpoint\n", "echoed after the signals")
    shipper.stdin.close()
    assert shipper.wait(timeout=PATIENCE_S) == 0


def test_the_collector_ends_on_sigterm_with_status_0(start_collector):
    collector = start_collector()
    collector.process.terminate()
    assert collector.process.wait(timeout=PATIENCE_S) == 0


def test_the_collector_keeps_as_many_runs_as_it_is_told_having_no_number_of_its_own(tmp_path):
    """How many runs a task keeps is components/spec/logs.py KEPT_RUNS, passed on its command line
    (tests/objects/test_log_archive.py): a collector started without it refuses to start."""
    command = [sys.executable, str(COLLECTOR), "--dir", str(tmp_path), "--ingest-port", "0", "--read-port", "0"]
    done = subprocess.run([*command, "--run-bytes", "1000"], capture_output=True, text=True, timeout=PATIENCE_S)
    assert done.returncode == 2 and "--keep-runs" in done.stderr, done.stderr


def test_a_collector_killed_mid_stream_and_started_again_loses_no_byte(processes, start_collector, archive):
    """The collector's pod deleted while tasks write (its process killed outright, the bytes in flight
    with it): started again on its volume, it says how much of each run it holds and the shipper sends
    the rest again, from what it has sent and keeps: the archive is the whole log, once."""
    collector = start_collector(run_bytes=64 * 2**20)
    port = collector.ingest_port
    shipper = start_shipper(processes, shipper_env(port))
    stdout = Output(shipper)
    assert shipper.stdin is not None
    written = bytearray()
    numbers = iter(range(10**6))

    def write_lines(count: int) -> None:
        lines = b"".join(f"worker-0 line {next(numbers):06d}\n".encode() for _ in range(count))
        shipper.stdin.write(lines)
        shipper.stdin.flush()
        written.extend(lines)

    for _ in range(3):
        write_lines(80000)  # 1.6 MB a round: the collector is killed with bytes in flight
        collector.process.kill()
        collector.process.wait(timeout=PATIENCE_S)
        write_lines(2000)
        collector = start_collector(run_bytes=64 * 2**20, ingest_port=port)
    write_lines(1000)
    shipper.stdin.close()
    assert shipper.wait(timeout=PATIENCE_S) == 0
    sent = bytes(written)
    assert stdout.received == sent

    def whole() -> bool:
        return collector.read("ps-0", "pod-a") == b"ok pod-a\n" + sent

    if not eventually(whole, "the whole log archived, once", raise_late=False):
        archived = collector.read("ps-0", "pod-a").partition(b"\n")[2]
        first = next((i for i, (a, b) in enumerate(zip(archived, sent)) if a != b), min(len(archived), len(sent)))
        pytest.fail(
            f"archived {len(archived)} of {len(sent)} bytes, apart from byte {first}: {archived[first : first + 200]!r}"
        )


def test_a_collector_started_again_without_its_volume_is_told_how_many_bytes_are_lost(
    processes, start_collector, tmp_path
):
    """A collector that comes back holding less than the shipper still keeps of what it sent (its
    volume lost): the shipper sends what it keeps after a note of how many bytes came before it."""
    collector = start_collector(run_bytes=64 * 2**20)
    port = collector.ingest_port
    shipper = start_shipper(processes, shipper_env(port))
    Output(shipper)  # its stdout read, or the shipper waits on it
    assert shipper.stdin is not None
    before = numbered_lines("worker-0", 6 * 2**20 // 21)  # more than the shipper keeps of what it sent
    shipper.stdin.write(before)
    shipper.stdin.flush()
    eventually(lambda: collector.latest("ps-0") == before, "archived")
    collector.process.kill()
    collector.process.wait(timeout=PATIENCE_S)
    shutil.rmtree(tmp_path / "archive")
    restarted = start_collector(run_bytes=64 * 2**20, ingest_port=port)
    after = b"the first line the new collector is sent\n"
    shipper.stdin.write(after)
    shipper.stdin.close()
    assert shipper.wait(timeout=PATIENCE_S) == 0
    answer = eventually(lambda: restarted.latest("ps-0").endswith(after) and restarted.latest("ps-0"), "archived again")
    note = re.match(rb"\[tfk8s: (\d+) bytes of this log could not be archived\]\n", answer)
    assert note, answer[:200]
    lost = int(note[1])
    assert answer[note.end() :] == before[lost:] + after, "what the shipper kept, from where the loss ends"
    # What it kept: the newest bytes it sent, `after` among them where it went before the shipper saw
    # the collector gone.
    assert len(before) - lost in (log_shipper.SENT_KEPT_BYTES, log_shipper.SENT_KEPT_BYTES - len(after))


def test_a_shipper_of_protocol_1_is_answered_nothing_and_appended(start_collector):
    """During a `pulumi up` that updates the archive's code, a task may still run the shipper before."""
    collector = start_collector()
    with socket.create_connection(("127.0.0.1", collector.ingest_port), timeout=PATIENCE_S) as sock:
        sock.sendall(b"tfk8s-log 1 ps-0 pod-a\nan older shipper's line\n")
        sock.shutdown(socket.SHUT_WR)
        assert receive_all(sock) == b"", "no count for a shipper that reads none"
    eventually(lambda: collector.latest("ps-0") == b"an older shipper's line\n", "archived")
