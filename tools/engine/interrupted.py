"""What an engine run stopped half-way leaves in the local backend, put right by the next run.

A run stopped with Ctrl-C cancels itself: it lets the operations in flight finish, saves its
state and lets go of the stack, and the next run simply goes on. A run killed outright (SIGKILL,
a closed laptop, a CI job's timeout) leaves two things behind:

- its lock file, on which every later `make up`, `make destroy` or `make preview` of the stack
  fails ("the stack is currently locked by 1 lock(s)"). A lock written on this machine by a
  process that no longer runs holds nothing back: it is removed, and said. A lock held by a
  running process, or written on another machine, is left, and the run is refused naming who
  holds it.
- the operations it had started and not seen end (pending operations): an object whose create was
  in flight may or may not exist. `up` creates it again, and since the provider applies objects
  server-side an object that exists is taken over as it is: the operation ends there. `destroy`
  knows only the objects in the state: one that a killed create left is deleted here, where it
  carries the stack's labels, and the operation is dropped from the state.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import socket
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional
from urllib.parse import urlparse

from pulumi import automation as auto

from components.plan import labels as L

if TYPE_CHECKING:
    from kubernetes.dynamic import DynamicClient

Say = Callable[[str], None]


class StackHeld(Exception):
    """The stack is locked by an engine run that may still be running."""


@dataclass(frozen=True)
class EngineLock:
    """One lock file of the file backend: which process on which machine took the stack, and when."""

    path: Path
    pid: int
    user: str
    host: str
    since: str

    def left_by_a_run_that_ended(self) -> bool:
        """Written on this machine by a process that no longer runs (a killed `make up`)."""
        return self.host == socket.gethostname() and not _running(self.pid, _lock_time(self.since))

    def holder(self) -> str:
        return f"pid {self.pid} of {self.user}@{self.host}, since {self.since}"


def _running(pid: int, locked_at: Optional[datetime]) -> bool:
    """Whether the process that wrote a lock at `locked_at` still runs as `pid`.

    A process killed outright stays a zombie until its parent reaps it, and a killed engine's
    CLI is reaped by whatever adopted it (a container's first process may never do so): a zombie
    holds nothing. A pid given to a process that started after the lock was written is another
    process: the lock's writer is gone.
    """
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process: it runs
    state, started = _process_state(pid)
    if state in ("Z", "X"):
        return False
    if started is not None and locked_at is not None:
        return started <= locked_at + PID_CLOCK_SLACK
    return True


# /proc counts a start in clock ticks since boot: allow for the tick and the boot time's rounding.
PID_CLOCK_SLACK = timedelta(seconds=2)


def _process_state(pid: int) -> tuple[str, Optional[datetime]]:
    """A process's state letter and start time, from /proc (`?`, None where it cannot be read)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
        boot = next(line for line in Path("/proc/stat").read_text().splitlines() if line.startswith("btime "))
    except (OSError, StopIteration):
        return "?", None
    fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (command) ": state is field 3, start field 22
    ticks_since_boot = int(fields[19]) / os.sysconf("SC_CLK_TCK")
    started = datetime.fromtimestamp(int(boot.split()[1]) + ticks_since_boot, timezone.utc)
    return fields[0], started


def _lock_time(written: str) -> Optional[datetime]:
    """The lock's timestamp (RFC 3339 with nanoseconds, as the CLI writes it), or None."""
    match = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)", written)
    if match is None:
        return None
    fraction = (match.group(2) or ".0")[:7]
    offset = "+00:00" if match.group(3) == "Z" else match.group(3)
    return datetime.fromisoformat(match.group(1) + fraction + offset)


def stack_locks(state: Path, project: str, stack: str) -> list[EngineLock]:
    """The file backend's locks on `stack` (.pulumi/locks/organization/<project>/<stack>/<id>.json)."""
    folder = state / ".pulumi" / "locks" / "organization" / project / stack
    locks = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            held = json.loads(path.read_text(encoding="utf-8"))
            locks.append(
                EngineLock(path, int(held["pid"]), str(held["username"]), str(held["hostname"]), str(held["timestamp"]))
            )
        except (OSError, ValueError, KeyError, TypeError):
            # Unreadable: whoever wrote it cannot be told; it is treated as held.
            locks.append(EngineLock(path, -1, "?", "an unknown machine", "an unknown time"))
    return locks


@dataclass(frozen=True)
class PendingOperation:
    """An operation a killed run started and did not see end: the object it was acting on."""

    urn: str
    operation: str  # creating, updating, deleting, importing
    api_version: str
    kind: str
    name: str
    namespace: Optional[str]

    @property
    def is_create(self) -> bool:
        return self.operation == "creating"

    def describe(self) -> str:
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.kind} {where} (interrupted while {self.operation})"


def pending_operations(deployment: Optional[Mapping[str, Any]]) -> list[PendingOperation]:
    """The Kubernetes objects whose operations the state holds as started and unfinished."""
    found = []
    for pending in (deployment or {}).get("pending_operations") or []:
        resource = pending.get("resource") or {}
        inputs = resource.get("inputs") or {}
        metadata = inputs.get("metadata") or {}
        if not str(resource.get("type", "")).startswith("kubernetes:"):
            continue
        found.append(
            PendingOperation(
                urn=str(resource.get("urn")),
                operation=str(pending.get("type")),
                api_version=str(inputs.get("apiVersion", "")),
                kind=str(inputs.get("kind", "")),
                name=str(metadata.get("name", "")),
                namespace=metadata.get("namespace"),
            )
        )
    return found


def backend_folder(stack: auto.Stack) -> Optional[Path]:
    """The file backend's folder the stack's workspace runs against; None for another backend."""
    url = urlparse(stack.workspace.env_vars.get("PULUMI_BACKEND_URL", ""))
    return Path(url.path) if url.scheme == "file" else None


def release_a_killed_runs_lock(stack: auto.Stack, project: str, say: Say) -> None:
    """Remove the stack's lock where the run that took it no longer runs; StackHeld where it may."""
    state = backend_folder(stack)
    locks = stack_locks(state, project, stack.name) if state is not None else []
    if not locks:
        return
    held = [lock for lock in locks if not lock.left_by_a_run_that_ended()]
    if held:
        holders = "; ".join(lock.holder() for lock in held)
        raise StackHeld(
            f"stack '{stack.name}' is being changed by another engine run ({holders}): "
            f"wait for it to end. If that run is gone for good (its machine is), remove its lock: {held[0].path}"
        )
    stack.cancel()  # `pulumi cancel`: the file backend's way of removing a stack's locks
    for lock in locks:
        say(
            f"stack '{stack.name}': the engine run that locked it ({lock.holder()}) was stopped before it "
            "finished; its lock is removed"
        )


def saved_deployment(stack: auto.Stack, project: str) -> Optional[Mapping[str, Any]]:
    """The stack's deployment as the last run saved it, as `pulumi stack export` prints it: read from
    the file backend's checkpoint (.pulumi/stacks/<project>/<stack>.json, or .json.gz where the backend
    compresses it) without starting the CLI, a tenth of a second of every run's start; from the CLI
    for another backend, or where no checkpoint is found there."""
    state = backend_folder(stack)
    folder = state / ".pulumi" / "stacks" / project if state is not None else None
    if folder is not None and (folder / f"{stack.name}.json").is_file():
        data = (folder / f"{stack.name}.json").read_bytes()
    elif folder is not None and (folder / f"{stack.name}.json.gz").is_file():
        data = gzip.decompress((folder / f"{stack.name}.json.gz").read_bytes())
    else:
        return stack.export_stack().deployment
    return (json.loads(data).get("checkpoint") or {}).get("latest")


def say_what_is_pending(stack: auto.Stack, project: str, command: str, say: Say) -> list[PendingOperation]:
    """Say which objects a killed run left half-done and what this run does about them."""
    pending = pending_operations(saved_deployment(stack, project))
    if pending:
        what = (
            "applies them again, taking over those that exist"
            if command == "up"
            else ("deletes those that exist" if command == "destroy" else "leaves them to `make up` or `make destroy`")
        )
        say(
            f"stack '{stack.name}': the stopped run left {len(pending)} operation(s) unfinished: "
            f"{', '.join(p.describe() for p in pending)}; this {command} {what} (the engine's advice to run "
            "`pulumi refresh` below is taken care of)"
        )
    return pending


def settle_pending_creates(stack: auto.Stack, command: str, pending: list[PendingOperation], say: Say) -> None:
    """After a successful `command`, end the creates a killed run left: the engine keeps them in the
    state, and warns of them on every later run, even once the object is in the state.

    After `up`, those whose object is now in the state are done. After `destroy`, the objects they
    may have made (the state did not know them) are deleted where they carry this stack's labels,
    and every one is done. The state is edited as Pulumi's own advice for interrupted updates has it
    (export, drop the finished operations, import)."""
    creates = [p for p in pending if p.is_create]
    if not creates or command not in ("up", "destroy"):
        return
    if command == "destroy":
        _delete_objects_of(stack, creates, say)
    exported = stack.export_stack()
    deployment = dict(exported.deployment or {})
    in_state = {resource.get("urn") for resource in deployment.get("resources") or []}
    done = {create.urn for create in creates if command == "destroy" or create.urn in in_state}
    deployment["pending_operations"] = [
        operation
        for operation in deployment.get("pending_operations") or []
        if not (operation.get("type") == "creating" and (operation.get("resource") or {}).get("urn") in done)
    ]
    stack.import_stack(auto.Deployment(version=exported.version, deployment=deployment))


def _delete_objects_of(stack: auto.Stack, creates: list[PendingOperation], say: Say) -> None:
    # Imported here: the Kubernetes client's import cost every engine run's start 0.05 s (more on a
    # busy machine), and only a destroy after a killed run's creates needs it.
    from kubernetes.dynamic import DynamicClient

    from tools.localcluster.client import api_client

    kubeconfig = stack.workspace.env_vars.get("KUBECONFIG")
    dynamic = DynamicClient(api_client(Path(kubeconfig) if kubeconfig else None))
    for create in creates:
        if create.kind.endswith("Patch"):
            # A patch of an object tfk8s does not own (a node's labels): the object stays.
            say(
                f"stack '{stack.name}': {create.describe()} may have left its labels on {create.name}; "
                f"`make delete STACK={stack.name}` removes exactly the stack's node labels"
            )
        elif _delete_if_ours(dynamic, create, stack.name):
            say(f"stack '{stack.name}': deleted {create.kind} {create.name}, made by the stopped run's create")


def _delete_if_ours(dynamic: DynamicClient, create: PendingOperation, stack: str) -> bool:
    from kubernetes import client
    from kubernetes.dynamic.exceptions import NotFoundError, ResourceNotFoundError

    try:
        resource = dynamic.resources.get(api_version=create.api_version, kind=create.kind)
        found = resource.get(name=create.name, namespace=create.namespace)
    except (NotFoundError, ResourceNotFoundError):
        return False
    labels = (found.metadata.labels or {}) if found.metadata else {}
    if labels.get(L.INSTANCE) != stack or labels.get(L.PART_OF_KEY) != L.PART_OF:
        return False  # not written by this stack: never deleted here
    try:
        resource.delete(
            name=create.name, namespace=create.namespace, body=client.V1DeleteOptions(propagation_policy="Background")
        )
    except NotFoundError:
        return False
    return True
