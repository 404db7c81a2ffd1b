"""The log archive's protocol (tfk8s:logs), written once: what the log shipper (log_shipper.py, in
every task's pod), the log collector (log_collector.py, in the experiment's collector pod) and
components/ (which starts both and reads the archive: components/objects/log_shipping.py,
log_archive.py, task_shell.py, components/live/log_archive_client.py) must agree on.

The three files ship together, flat, in the archive's ConfigMap, and the pods run the shipper and
the collector as scripts from it (`python3 /opt/tfk8s-logs/log_shipper.py`): each puts its own folder
first on sys.path (Python leaves it off with PYTHONSAFEPATH=1 or -I), so there this module is the
top-level `log_protocol`; in a checkout and in the wheel it is `trainer.log_protocol`.

Ingest (the collector's ingest port, which every task of the experiment reaches): a header line
`tfk8s-log 2 <task> <pod>\\n`, which the collector answers `at <bytes>\\n`, how much of the pod's run it
holds (counting what it no longer keeps of a long run); then the task's output until the shipper
closes. A pod that connects again appends to its run: its shipper sends again, from that count,
what it sent before and the collector did not keep (a collector killed with bytes in flight, its
volume kept), and says how many bytes are lost where it no longer holds them. Version 1, from a
shipper of the release before, gets no answer and appends. Read (the read port, on the collector pod's loopback, reached
through a port-forward): `list\\n` answers `{"tasks": {task: [pods, oldest first]}}\\n`;
`read <task> <pod>\\n` answers `ok <pod>\\n` and that run's log, or `missing <why>\\n` (the run is
not kept: never sent, or dropped for newer ones), or `error <why>\\n` (not a request).

Standard library only, Python 3.8+: it runs in any team's image.
"""

from __future__ import annotations

import re
from typing import Optional

# The archive's ConfigMap holds these files; each pod kind runs its script and what it imports.
PROTOCOL = "log_protocol.py"
SHIPPER = "log_shipper.py"
COLLECTOR = "log_collector.py"
SHIPPER_FILES = (SHIPPER, PROTOCOL)
COLLECTOR_FILES = (COLLECTOR, PROTOCOL)
ARCHIVE_FILES = tuple(sorted({*SHIPPER_FILES, *COLLECTOR_FILES}))

# A task's environment, which components/objects/log_shipping.py sets and the shipper reads.
COLLECTOR_ENV = "TFK8S_LOG_COLLECTOR"  # host:port of the collector's ingest port
TASK_TYPE_ENV = "TFK8S_LOG_TASK_TYPE"
TASK_INDEX_ENV = "TFK8S_LOG_TASK_INDEX"
POD_NAME_ENV = "TFK8S_POD_NAME"

# Once told that the program ended, the shipper copies what a child the program left behind still
# writes for at most this long; the task's shell (components/objects/task_shell.py SHIPPER_WAIT_S)
# waits for it longer than that.
SHIPPER_DRAIN_S = 10.0

HEADER_WORD = "tfk8s-log"
VERSION = "2"
VERSIONS = ("1", VERSION)  # what a collector takes: a shipper of the release before says 1
AT = "at"
# The longest line either port reads (a header, a request), its newline included: a pod's name (at
# most 253 characters) and a task's fit with room to spare.
MAX_LINE_BYTES = 512

LIST = "list"
READ = "read"
OK = "ok"
MISSING = "missing"
ERROR = "error"

TASK_INDEX = re.compile(r"[0-9]{1,6}")
TASK_NAME = re.compile(r"[a-z]+-[0-9]{1,6}")
POD_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")


def is_task_name(name: str) -> bool:
    return TASK_NAME.fullmatch(name) is not None


def is_pod_name(name: str) -> bool:
    # `..` would still be a name inside the task's folder, but no Kubernetes name has it: refuse it anyway.
    return POD_NAME.fullmatch(name) is not None and ".." not in name


def task_name(task_type: str, index: str) -> str:
    """The task `status` names `<type>-<index>`, from a pod's environment; "" when they name none."""
    name = f"{task_type}-{int(index)}" if TASK_INDEX.fullmatch(index) else ""
    return name if is_task_name(name) else ""


def header(task: str, pod: str) -> bytes:
    """The line a shipper starts each connection with."""
    return f"{HEADER_WORD} {VERSION} {task} {pod}\n".encode("ascii")


def parse_header(line: bytes) -> Optional[tuple[str, str, str]]:
    """(version, task, pod) of a shipper's header line without its newline; None unless it is exactly
    right."""
    words = _words(line)
    if len(words) != 4 or words[0] != HEADER_WORD or words[1] not in VERSIONS:
        return None
    version, task, pod = words[1:]
    return (version, task, pod) if is_task_name(task) and is_pod_name(pod) else None


def at_line(held: int) -> bytes:
    """The collector's answer to a version 2 header: how many bytes of the run it holds."""
    return f"{AT} {held}\n".encode("ascii")


def parse_at_line(line: bytes) -> Optional[int]:
    """The count of an answer line without its newline; None unless it is one."""
    words = _words(line)
    if len(words) != 2 or words[0] != AT or not words[1].isdigit() or len(words[1]) > 18:
        return None
    return int(words[1])


def list_request() -> bytes:
    return f"{LIST}\n".encode("ascii")


def read_request(task: str, pod: str) -> bytes:
    """The request for the run of `task` in `pod`."""
    return f"{READ} {task} {pod}\n".encode("ascii")


def parse_read_request(line: bytes) -> Optional[tuple[str, str]]:
    """(task, pod) of a read request without its newline; None unless it is one."""
    words = _words(line)
    if len(words) != 3 or words[0] != READ or not (is_task_name(words[1]) and is_pod_name(words[2])):
        return None
    return words[1], words[2]


def run_found(pod: str) -> bytes:
    """The first line of the answer that carries the run of `pod`."""
    return f"{OK} {pod}\n".encode("ascii")


def _words(line: bytes) -> list[str]:
    try:
        return line.decode("ascii").split(" ")
    except UnicodeDecodeError:
        return []
