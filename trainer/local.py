"""`python -m trainer.local`: the same TF_CONFIG topology as processes on one machine.

    python -m trainer.local --ps 2 --workers 2 --steps 200 [--partition auto|range|none] ...
    python -m trainer.local --stack scene1-case3     # the stack's trainer settings and PS:worker ratio

Starts PS and workers, then the chief, on loopback; shows the chief's
progress; prints as its last line one JSON object (the chief's summary plus
`ps_cpu_seconds` and `ps_imbalance`, measured from /proc from the first
finished call to the end of training). Every process it starts runs in its own process group and is stopped
on success, failure, Ctrl-C or SIGTERM. Workers that die are restarted, as
Kubernetes would; `--kill TASK@STEP` kills a task on purpose (a fault drill).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from .lifeline import LAUNCHER_PID_ENV
from .settings import SETTINGS_ENV, TrainerSettings, to_camel

STARTUP_TIMEOUT = 90.0
STOP_GRACE = 5.0
WORKER_RESTARTS = 5
CHIEF_RESTARTS = 3  # after a fault drill kills it (the Job's backoffLimit in a cluster)
# A stack's experiment scaled down to one machine: TensorFlow processes of a few hundred MB each.
MAX_LOCAL_PS = 3
MAX_LOCAL_WORKERS = 6
PROJECT_ROOT = Path(__file__).resolve().parent.parent
# The Pulumi program's environment (`make setup`): it validates stack files.
PROGRAM_PYTHON = PROJECT_ROOT / ".venv" / "bin" / "python"


class LaunchError(RuntimeError):
    pass


class PortClash(LaunchError):
    """A task could not listen on the port picked for it: another process took it first."""


# What a task's log says when its gRPC port was taken between our pick and its bind.
PORT_CLASH_SIGNS = ("Could not start gRPC server", "Address already in use")
PORT_ATTEMPTS = 3


# -- settings from flags and stack files ---------------------------------------


def add_setting_flags(parser: argparse.ArgumentParser, skip: tuple[str, ...] = ()) -> None:
    """A flag per trainer setting (`--embedding-rows`, ...), but those named in `skip`."""
    group = parser.add_argument_group("trainer settings (tfk8s:trainer; defaults as in the schema)")
    for spec in dataclasses.fields(TrainerSettings):
        if spec.name in skip:
            continue
        flag = "--" + spec.name.replace("_", "-")
        help_text = spec.metadata.get("help", "")
        choices = spec.metadata.get("choices") or None
        if isinstance(spec.default, bool):
            group.add_argument(flag, type=_parse_bool, metavar="true|false", help=help_text, dest=spec.name)
        elif isinstance(spec.default, tuple):
            group.add_argument(flag, type=_parse_ints, metavar="N,N", help=help_text, dest=spec.name)
        else:
            group.add_argument(flag, type=type(spec.default), choices=choices, help=help_text, dest=spec.name)


def _parse_bool(text: str) -> bool:
    if text.lower() in ("true", "1", "yes"):
        return True
    if text.lower() in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def _parse_ints(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in text.split(",") if part)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated whole numbers, got {text!r}") from None


@dataclass(frozen=True)
class StackExperiment:
    """A stack as `python -m components export` prints it: validated by the project's one schema."""

    stack: str
    placement: str
    ps: int
    workers: int
    trainer: dict[str, Any]


def read_stack(stack: str) -> StackExperiment:
    """Validate a stack (name or file) in the program's environment, or read such an export (.json).

    The stack schema (pydantic) lives with the Pulumi program, whose
    environment cannot hold TensorFlow; asking it keeps one schema.
    """
    if stack.endswith(".json") and Path(stack).is_file():
        return StackExperiment(**json.loads(Path(stack).read_text(encoding="utf-8")))
    if not PROGRAM_PYTHON.exists():
        raise LaunchError(f"validating stack '{stack}' needs the program's environment {PROGRAM_PYTHON}: run `make setup`")
    result = subprocess.run(
        [str(PROGRAM_PYTHON), "-m", "components", "export", stack],
        cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120,
    )
    if result.returncode != 0:
        raise LaunchError(result.stderr.strip() or f"python -m components export {stack} failed")
    return StackExperiment(**json.loads(result.stdout))


@dataclass(frozen=True)
class LocalScale:
    ps: int
    workers: int
    notes: tuple[str, ...]  # what was scaled and why


def scale_to_machine(
    ps: int, workers: int, max_ps: int = MAX_LOCAL_PS, max_workers: int = MAX_LOCAL_WORKERS
) -> LocalScale:
    """The most PS (at least 2 when the stack has 2 or more) whose workers at the stack's
    PS:worker ratio fit this machine; when no such count exists, the fewest PS and as
    many workers as fit, and the ratio changes."""
    per_ps = workers / ps
    fewest_ps = min(2, ps)
    fitting = [n for n in range(fewest_ps, min(ps, max_ps) + 1) if round(n * per_ps) <= max_workers]
    local_ps = max(fitting) if fitting else fewest_ps
    local_workers = max(1, min(round(local_ps * per_ps), max_workers, workers))
    notes = []
    if local_ps != ps:
        notes.append(f"{ps} PS -> {local_ps}")
    if local_workers != workers:
        notes.append(f"{workers} workers -> {local_workers}")
    if fitting:
        notes.append(f"PS:worker ratio 1:{per_ps:g} kept")
    else:
        notes.append(
            f"PS:worker ratio 1:{per_ps:g} would need {round(fewest_ps * per_ps)} workers for {fewest_ps} PS, "
            f"at most {max_workers} run here: 1:{local_workers / local_ps:g} instead"
        )
    return LocalScale(local_ps, local_workers, tuple(notes))


def resolve(args: argparse.Namespace, out=sys.stderr) -> tuple[TrainerSettings, int, int]:
    base: dict[str, Any] = {}
    ps, workers = 2, 2
    if args.stack:
        experiment = read_stack(args.stack)
        scale = scale_to_machine(experiment.ps, experiment.workers)
        base, ps, workers = experiment.trainer, scale.ps, scale.workers
        print(f"stack {experiment.stack} on this machine: {'; '.join(scale.notes)}; placement "
              f"{experiment.placement} is not reproduced (every task runs here)", file=out, flush=True)
    overrides = {
        to_camel(spec.name): getattr(args, spec.name)
        for spec in dataclasses.fields(TrainerSettings)
        if getattr(args, spec.name) is not None
    }
    settings = TrainerSettings.from_config({**base, **overrides})
    return settings, args.ps or ps, args.workers or workers


# -- processes ------------------------------------------------------------------


def free_ports(count: int) -> list[int]:
    sockets, ports = [], []
    for _ in range(count):
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sockets.append(sock)
        ports.append(sock.getsockname()[1])
    for sock in sockets:
        sock.close()
    return ports


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process, from /proc (Linux)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


TRAINER_COMMAND = (sys.executable, "-m", "trainer")


@dataclass
class Task:
    name: str
    env: dict[str, str]
    directory: Path
    process: Optional[subprocess.Popen] = None
    restarts: int = 0
    log: Any = None
    command: tuple[str, ...] = TRAINER_COMMAND
    log_offset: int = 0  # where this start's output begins in the (appended) log

    def start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        if self.log is None:
            self.log = open(self.directory / "task.log", "ab")
        self.log.flush()
        self.log_offset = self.log.seek(0, os.SEEK_END)
        self.process = subprocess.Popen(
            list(self.command),
            cwd=self.directory,
            env=self.env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: stopped as a whole
        )

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def output_since_start(self) -> str:
        try:
            with open(self.directory / "task.log", "rb") as handle:
                handle.seek(self.log_offset)
                return handle.read().decode(errors="replace")
        except OSError:
            return ""

    def signal(self, signum: int) -> None:
        """Signal the task's whole process group, also when its leader has already exited
        (what it started may still run); a group with no process left is skipped."""
        if self.process is None:
            return
        try:
            os.killpg(self.process.pid, signum)
        except ProcessLookupError:
            pass

    def close_log(self) -> None:
        if self.log is not None:
            self.log.close()
            self.log = None


@dataclass
class LocalCluster:
    settings: TrainerSettings
    ps: int
    workers: int
    workdir: Path
    progress_every: int = 50
    restart_workers: bool = True
    kills: dict[str, int] = field(default_factory=dict)  # task -> step at which to kill it
    tasks: dict[str, Task] = field(default_factory=dict)
    chief: Optional[subprocess.Popen] = None
    chief_log: Any = None
    chief_killed: bool = False  # by a fault drill: restarted, as its Job would
    abort_reason: Optional[str] = None  # why the launcher stopped the chief itself
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stopping: bool = False

    def topology(self) -> dict[str, list[str]]:
        ports = free_ports(1 + self.ps + self.workers)
        addresses = [f"127.0.0.1:{port}" for port in ports]
        return {"chief": addresses[:1], "ps": addresses[1 : 1 + self.ps], "worker": addresses[1 + self.ps :]}

    def task_env(self, cluster: dict[str, list[str]], task_type: str, index: int) -> dict[str, str]:
        env = dict(os.environ)
        env["TF_CONFIG"] = json.dumps({"cluster": cluster, "task": {"type": task_type, "index": index}})
        env[SETTINGS_ENV] = self.settings.to_json()
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT_ROOT), env.get("PYTHONPATH")]))
        env["PYTHONUNBUFFERED"] = "1"
        # TensorFlow writes generated code to TMPDIR: keep it in the work folder.
        env["TMPDIR"] = str(self.workdir / "tmp")
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        env[LAUNCHER_PID_ENV] = str(os.getpid())  # the task dies with this process
        return env

    def start_servers(self, out=sys.stdout) -> dict[str, list[str]]:
        """Start PS and workers on fresh ports; pick new ones if another process took one first.

        A port is only known free when it is picked, and a TensorFlow server
        cannot share it with a socket held open for it, so a clash is retried.
        """
        for attempt in range(1, PORT_ATTEMPTS + 1):
            cluster = self.topology()
            for task_type in ("ps", "worker"):
                for index in range(len(cluster[task_type])):
                    name = f"{task_type}-{index}"
                    task = Task(name, self.task_env(cluster, task_type, index), self.workdir / name)
                    self.tasks[name] = task
                    task.start()
            try:
                self._wait_listening(cluster)
                return cluster
            except PortClash as clash:
                _stop_all(list(self.tasks.values()))
                self.tasks.clear()
                if attempt == PORT_ATTEMPTS:
                    raise LaunchError(f"{clash} (after {PORT_ATTEMPTS} sets of ports)") from None
                print(f"{clash}; starting again on other ports", file=out, flush=True)
        raise AssertionError("unreachable")

    def run(self, out=sys.stdout) -> dict[str, Any]:
        (self.workdir / "tmp").mkdir(parents=True, exist_ok=True)
        cluster = self.start_servers(out)

        chief_env = self.task_env(cluster, "chief", 0)
        chief_env["TFK8S_CHECKPOINT_DIR"] = str(self.workdir / "checkpoints")
        chief_env["TFK8S_METRICS_FILE"] = str(self.workdir / "metrics.jsonl")
        chief_env["TFK8S_PROGRESS_EVERY"] = str(self.progress_every)
        chief_dir = self.workdir / "chief-0"
        chief_dir.mkdir(parents=True, exist_ok=True)
        self.chief_log = open(chief_dir / "task.log", "ab")
        threading.Thread(target=self._supervise, daemon=True).start()
        chief_restarts = 0
        while True:
            self.chief_killed = False
            with self._lock:
                self.chief = subprocess.Popen(
                    list(TRAINER_COMMAND),
                    cwd=chief_dir,
                    env=chief_env,
                    stdout=subprocess.PIPE,
                    stderr=self.chief_log,
                    text=True,
                    start_new_session=True,
                )
            summary, failure = self._follow_chief(out)
            code = self.chief.wait()
            if self.abort_reason is not None:
                raise LaunchError(self.abort_reason)
            if code == 0 and summary is not None:
                break
            if self.chief_killed and chief_restarts < CHIEF_RESTARTS:
                # A new chief on the same checkpoint folder: what the chief's Job does with a new pod.
                chief_restarts += 1
                print(f"restarting chief-0 from its last checkpoint (restart {chief_restarts})", file=out, flush=True)
                continue
            message = failure or _last_lines(chief_dir / "task.log")
            raise LaunchError(f"chief exited with code {code}: {message}")
        cpu = summary["ps_cpu_seconds"]
        mean = sum(cpu) / len(cpu) if cpu else 0.0
        summary["ps_imbalance"] = round(max(cpu) / mean, 3) if mean > 0 else None
        summary["worker_restarts"] = sum(t.restarts for t in self.tasks.values())
        summary["chief_restarts"] = chief_restarts
        return summary

    def _follow_chief(self, out) -> tuple[Optional[dict[str, Any]], Optional[str]]:
        """Show the chief's progress until it exits; its summary and failure message, if any."""
        summary: Optional[dict[str, Any]] = None
        failure: Optional[str] = None
        cpu_at_start: Optional[list[float]] = None
        for line in self.chief.stdout:
            event = _event(line)
            if event is None:
                print(line.rstrip(), file=out, flush=True)
                if line.startswith("step "):
                    self._drill(int(line.split()[1]))
                continue
            if event["event"] == "start":
                print(f"training: {event['ps']} PS, {event['workers']} workers, from step {event['step']}", file=out, flush=True)
            elif event["event"] == "worker_joined" and cpu_at_start is None:
                # The first finished call: PS CPU counts from here, not from the processes' start
                # (TensorFlow's import, variable creation and tracing would mute the hot PS).
                cpu_at_start = self._ps_cpu()
            elif event["event"] == "summary":
                summary = {key: value for key, value in event.items() if key != "event"}
                summary["ps_cpu_seconds"] = _cpu_delta(cpu_at_start, self._ps_cpu())
            elif event["event"] == "failed":
                failure = event["error"]
            elif event["event"] in ("restored", "checkpoint"):
                print(f"{event['event']} at step {event['step']}", file=out, flush=True)
            if "step" in event:
                self._drill(int(event["step"]))
        return summary, failure

    def _ps_cpu(self) -> list[float]:
        values = []
        for index in range(self.ps):
            task = self.tasks[f"ps-{index}"]
            try:
                values.append(cpu_seconds(task.process.pid))
            except (OSError, AttributeError):
                values.append(float("nan"))
        return values

    def _wait_listening(self, cluster: dict[str, list[str]]) -> None:
        """Wait until every PS and worker says it serves on its address.

        The task's own word, not a connection test: if another process took a
        port, a connection would reach that process instead.
        """
        deadline = time.monotonic() + STARTUP_TIMEOUT
        pending = {f"{t}-{i}": address for t in ("ps", "worker") for i, address in enumerate(cluster[t])}
        while pending:
            for name, address in list(pending.items()):
                task = self.tasks[name]
                if f"{name}: serving on {address}" in task.output_since_start():
                    del pending[name]
                elif not task.alive():
                    output = task.output_since_start()
                    error = PortClash if any(sign in output for sign in PORT_CLASH_SIGNS) else LaunchError
                    raise error(f"{name} exited during start-up: {_last_lines(task.directory / 'task.log')}")
            if time.monotonic() > deadline:
                raise LaunchError(f"not serving after {STARTUP_TIMEOUT:.0f} s: {', '.join(pending)}")
            time.sleep(0.2)

    def _drill(self, step: int) -> None:
        for name, at_step in list(self.kills.items()):
            if step < at_step:
                continue
            print(f"fault drill: killing {name} at step {step}", file=sys.stderr, flush=True)
            del self.kills[name]
            if name == "chief-0":
                self.chief_killed = True
                try:
                    os.killpg(self.chief.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            elif name in self.tasks:
                self.tasks[name].signal(signal.SIGKILL)

    def _supervise(self) -> None:
        """Restart workers that die, as Kubernetes restarts a pod.

        Without restarts, once every worker is gone nothing can run a step and
        the chief would wait for them forever: stop it, saying why.
        """
        while not self._stopping:
            with self._lock:
                workers = [t for t in self.tasks.values() if t.name.startswith("worker-")]
                for task in workers:
                    if not task.alive() and not self._stopping:
                        if self.restart_workers and task.restarts < WORKER_RESTARTS:
                            task.restarts += 1
                            print(f"restarting {task.name} (restart {task.restarts})", file=sys.stderr, flush=True)
                            task.start()
                if workers and not any(t.alive() for t in workers) and not self._stopping and self.chief is not None:
                    self.abort_reason = (
                        "every worker has exited and none is restarted "
                        f"({'--no-restart' if not self.restart_workers else f'{WORKER_RESTARTS} restarts used'}); "
                        "no task is left to run training steps"
                    )
                    try:
                        os.killpg(self.chief.pid, signal.SIGTERM)
                    except ProcessLookupError:
                        pass
                    return
            time.sleep(0.5)

    def stop(self) -> None:
        """Stop every process started, by process group: TERM, then KILL."""
        self._stopping = True
        with self._lock:
            _stop_all(list(self.tasks.values()), self.chief)
            if self.chief_log is not None:
                self.chief_log.close()
                self.chief_log = None


def _stop_all(tasks: list[Task], chief: Optional[subprocess.Popen] = None) -> None:
    """TERM each process group, KILL what is left after STOP_GRACE; close the task logs."""
    if chief is not None and chief.poll() is None:
        try:
            os.killpg(chief.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    for task in tasks:
        task.signal(signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE
    for process in [chief] + [t.process for t in tasks]:
        if process is None:
            continue
        try:
            process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait()
    for task in tasks:
        task.close_log()


def _event(line: str) -> Optional[dict[str, Any]]:
    if not line.startswith("{"):
        return None
    try:
        parsed = json.loads(line)
    except json.JSONDecodeError:
        return None
    return parsed if isinstance(parsed, dict) and "event" in parsed else None


def _cpu_delta(before: Optional[list[float]], after: list[float]) -> list[float]:
    if before is None:
        before = [0.0] * len(after)
    return [round(b - a, 3) for a, b in zip(before, after)]


def _last_lines(path: Path, count: int = 5) -> str:
    try:
        lines = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return "(no log)"
    return " | ".join(lines[-count:])


def parse_kill(text: str) -> tuple[str, int]:
    try:
        name, step = text.split("@")
        task_type, index = name.rsplit("-", 1)
        if task_type not in ("ps", "worker", "chief") or int(index) < 0 or (task_type == "chief" and index != "0"):
            raise ValueError
        return name, int(step)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected TASK@STEP such as worker-1@100 or chief-0@100, got {text!r}") from None


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m trainer.local", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--ps", type=int, help="parameter servers (default 2, or from --stack)")
    parser.add_argument("--workers", type=int, help="workers (default 2, or from --stack)")
    parser.add_argument("--stack", help="take trainer settings and the PS:worker ratio from this stack")
    parser.add_argument("--workdir", help="checkpoints, metrics and logs (kept; default: a temporary folder, removed)")
    parser.add_argument("--progress-every", type=int, default=50, help="steps between progress lines")
    parser.add_argument("--kill", type=parse_kill, action="append", default=[], metavar="TASK@STEP",
                        help="fault drill: SIGKILL a task (ps-N, worker-N, chief-0) once the chief reports this step; "
                             "a killed chief is started again on the same checkpoints")
    parser.add_argument("--no-restart", action="store_true", help="do not restart workers that die")
    add_setting_flags(parser)
    args = parser.parse_args(argv)

    try:
        settings, ps, workers = resolve(args)
    except Exception as error:  # SettingsError, LaunchError, YAML errors: one clear line
        print(f"trainer.local: {error}", file=sys.stderr)
        return 2
    if ps < 1 or workers < 1:
        print("trainer.local: --ps and --workers must be at least 1", file=sys.stderr)
        return 2

    workdir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="tfk8s-local-"))
    workdir.mkdir(parents=True, exist_ok=True)
    cluster = LocalCluster(
        settings, ps, workers, workdir, progress_every=args.progress_every,
        restart_workers=not args.no_restart, kills=dict(args.kill),
    )

    def on_term(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_term)
    code = 0
    try:
        summary = cluster.run()
        print(json.dumps(summary), flush=True)
    except KeyboardInterrupt:
        print("trainer.local: interrupted; stopping every task", file=sys.stderr)
        code = 130
    except LaunchError as error:
        print(f"trainer.local: {error}", file=sys.stderr)
        print(json.dumps({"error": str(error)}), flush=True)
        code = 1
    finally:
        cluster.stop()
        signal.signal(signal.SIGTERM, previous)
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
