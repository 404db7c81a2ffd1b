"""The local cluster: PS and workers as processes on loopback, then the chief, followed to its summary.

It restarts workers that die (as Kubernetes restarts a pod), restarts a chief
a fault drill killed (as its Job would), and stops every process it started.
With an evaluator, it runs beside them, outside the training cluster, on the
chief's checkpoints (trainer/local/evaluator.py).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from ..lifeline import LAUNCHER_PID_ENV
from ..log_lines import SUMMARY, read_event, read_progress_line
from ..ports import free_ports
from ..settings import SETTINGS_ENV, TrainerSettings
from ..shared_names import CHECKPOINT_DIR_ENV, EVALUATOR, SERVING_ROLES, role_of_task
from .cpu_sampling import CpuSampler
from .drills import FaultDrills
from .errors import LaunchError, PortClash
from .evaluator import EVALUATOR_TASK, LocalEvaluator
from .procstat import cpu_delta, cpu_seconds
from .stacks import PROJECT_ROOT
from .tasks import TRAINER_COMMAND, Task, last_lines, stop_all

if TYPE_CHECKING:
    from .tasks import TextOut


# A PS's or worker's start (importing TensorFlow, starting its server) takes it 6 to 9 CPU-seconds.
# It is judged by the CPU time the task itself got, not by the clock: on a busy machine (the tests at
# nice 19 beside a benchmark) a task waits longer for the CPU, and that is no failure. The clock's
# ceiling catches a task that hangs using none.
STARTUP_CPU_S = 60.0
STARTUP_CEILING_S = 900.0

WORKER_RESTARTS = 5

CHIEF_RESTARTS = 3  # after a fault drill kills it (the Job's backoffLimit in a cluster)

# What a task's log says when its gRPC port was taken between our pick and its bind.
PORT_CLASH_SIGNS = ("Could not start gRPC server", "Address already in use")

PORT_ATTEMPTS = 3


@dataclass
class LocalCluster:
    settings: TrainerSettings
    ps: int
    workers: int
    workdir: Path
    progress_every: int = 50
    restart_workers: bool = True
    drills: FaultDrills = field(default_factory=FaultDrills)
    evaluator: int = 0  # 1: TensorFlow's side-car evaluator beside the cluster
    tasks: dict[str, Task] = field(default_factory=dict)
    local_evaluator: Optional[LocalEvaluator] = None
    cpu_sampler: Optional[CpuSampler] = None  # each task's CPU while the chief trains
    chief: Optional[subprocess.Popen] = None
    chief_log: Any = None
    chief_killed: bool = False  # by a fault drill: restarted, as its Job would
    abort_reason: Optional[str] = None  # why the launcher stopped the chief itself
    finish_requested: bool = False  # the chief is to finish where it stands (SIGUSR1 to the launcher)
    _chief_listening: bool = False  # the running chief has said something: its signal handling is set
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

    def start_servers(self, out: TextOut = sys.stdout) -> dict[str, list[str]]:
        """Start PS and workers on fresh ports; pick new ones if another process took one first.

        A port is only known free when it is picked, and a TensorFlow server
        cannot share it with a socket held open for it, so a clash is retried.
        """
        for attempt in range(1, PORT_ATTEMPTS + 1):
            cluster = self.topology()
            for task_type in SERVING_ROLES:
                for index in range(len(cluster[task_type])):
                    name = f"{task_type}-{index}"
                    task = Task(name, self.task_env(cluster, task_type, index), self.workdir / name)
                    self.tasks[name] = task
                    task.start()
            try:
                self._wait_listening(cluster)
                return cluster
            except PortClash as clash:
                stop_all(list(self.tasks.values()))
                self.tasks.clear()
                if attempt == PORT_ATTEMPTS:
                    raise LaunchError(f"{clash} (after {PORT_ATTEMPTS} sets of ports)") from None
                print(f"{clash}; starting again on other ports", file=out, flush=True)
        raise AssertionError("unreachable")

    def run(self, out: TextOut = sys.stdout) -> dict[str, Any]:
        (self.workdir / "tmp").mkdir(parents=True, exist_ok=True)
        cluster = self.start_servers(out)
        checkpoint_dir = str(self.workdir / "checkpoints")
        if self.evaluator:
            # The chief's settings and checkpoint folder; a TF_CONFIG whose cluster does not hold it.
            env = {**self.task_env(cluster, EVALUATOR, 0), CHECKPOINT_DIR_ENV: checkpoint_dir}
            self.local_evaluator = LocalEvaluator(Task(EVALUATOR_TASK, env, self.workdir / EVALUATOR_TASK), out)
            self.local_evaluator.start()

        chief_env = self.task_env(cluster, "chief", 0)
        chief_env[CHECKPOINT_DIR_ENV] = checkpoint_dir
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
        if self.local_evaluator is not None:
            # It exits by itself once it has evaluated the final step; a chief that finished early has not reached it.
            early = summary["steps"] if summary["steps"] < self.settings.steps else None
            summary["evaluator"] = self.local_evaluator.finish(until_evaluated=early)
        return summary

    def _follow_chief(self, out: TextOut) -> tuple[Optional[dict[str, Any]], Optional[str]]:
        """Show the chief's progress until it exits; its summary and failure message, if any."""
        summary: Optional[dict[str, Any]] = None
        failure: Optional[str] = None
        cpu_at_start: Optional[list[float]] = None
        self._chief_listening = False
        assert self.chief is not None and self.chief.stdout is not None, "the chief is started before it is followed"
        for line in self.chief.stdout:
            if not self._chief_listening:
                self._chief_listening = True  # its first line comes after its signal handling is set
                self._forward_finish()
            event = read_event(line)
            if event is None:
                print(line.rstrip(), file=out, flush=True)
                progress = read_progress_line(line)
                if progress is not None:
                    if self.cpu_sampler is not None:
                        self.cpu_sampler.step(progress.step)
                    self._drill(progress.step)
                continue
            if event["event"] == "start":
                print(
                    f"training: {event['ps']} PS, {event['workers']} workers, from step {event['step']}",
                    file=out,
                    flush=True,
                )
            elif event["event"] == "worker_joined":
                print(f"worker joined at step {event['step']}: {event['worker']}", file=out, flush=True)
                if cpu_at_start is None:
                    # The first finished call: PS CPU counts from here, not from the processes' start
                    # (TensorFlow's import, variable creation and tracing would mute the hot PS).
                    cpu_at_start = self._ps_cpu()
                    self._sample_cpu()
            elif event["event"] == "finishing":
                print(f"finishing early at step {event['step']} of {event['steps']}", file=out, flush=True)
            elif event["event"] == SUMMARY:
                summary = {key: value for key, value in event.items() if key != "event"}
                summary["ps_cpu_seconds"] = cpu_delta(cpu_at_start, self._ps_cpu())
                summary["task_cpu"] = self.cpu_sampler.stop() if self.cpu_sampler is not None else None
            elif event["event"] == "failed":
                failure = event["error"]
            elif event["event"] in ("restored", "checkpoint"):
                print(f"{event['event']} at step {event['step']}", file=out, flush=True)
            if "step" in event:
                self._drill(int(event["step"]))
        return summary, failure

    def _sample_cpu(self) -> None:
        """Each task's CPU from now on (a restarted chief's window starts again)."""
        if self.cpu_sampler is not None:
            self.cpu_sampler.stop()
        self.cpu_sampler = CpuSampler(self._pids)
        self.cpu_sampler.start()

    def _pids(self) -> dict[str, Optional[int]]:
        pids = {name: task.process.pid if task.alive() and task.process else None for name, task in self.tasks.items()}
        chief = self.chief
        return {**pids, "chief-0": chief.pid if chief is not None and chief.poll() is None else None}

    def _ps_cpu(self) -> list[float]:
        values = []
        for index in range(self.ps):
            task = self.tasks[f"ps-{index}"]
            try:
                values.append(cpu_seconds(task.process.pid) if task.process is not None else float("nan"))
            except OSError:
                values.append(float("nan"))
        return values

    def _wait_listening(self, cluster: dict[str, list[str]]) -> None:
        """Wait until every PS and worker says it serves on its address.

        The task's own word, not a connection test: if another process took a
        port, a connection would reach that process instead.
        """
        started = time.monotonic()
        pending = {f"{t}-{i}": address for t in SERVING_ROLES for i, address in enumerate(cluster[t])}
        while pending:
            for name, address in list(pending.items()):
                task = self.tasks[name]
                if f"{name}: serving on {address}" in task.output_since_start():
                    del pending[name]
                elif not task.alive():
                    output = task.output_since_start()
                    error = PortClash if any(sign in output for sign in PORT_CLASH_SIGNS) else LaunchError
                    raise error(f"{name} exited during start-up: {_last_lines(task.directory / 'task.log')}")
            spent = {name: self._start_cpu(name) for name in pending}
            over = [f"{name} ({cpu:.0f} CPU-seconds)" for name, cpu in spent.items() if cpu > STARTUP_CPU_S]
            waited = time.monotonic() - started
            if over or (pending and waited > STARTUP_CEILING_S):
                raise LaunchError(f"not serving after {waited:.0f} s: {', '.join(over or pending)}")
            time.sleep(0.2)

    def _start_cpu(self, name: str) -> float:
        """The CPU-seconds a task has had since it started (0 once it is gone: its exit is said above)."""
        process = self.tasks[name].process
        try:
            return cpu_seconds(process.pid) if process is not None else 0.0
        except OSError:
            return 0.0

    def finish(self) -> None:
        """Ask the chief to finish now instead of at `steps` (SIGUSR1): it checkpoints, reports its
        summary and exits 0. A chief still starting is told once it listens for the signal."""
        self.finish_requested = True
        self._forward_finish()

    def _forward_finish(self) -> None:
        # Told twice is told once: the chief only sets an event.
        chief = self.chief
        if self.finish_requested and self._chief_listening and chief is not None and chief.poll() is None:
            os.kill(chief.pid, signal.SIGUSR1)

    def _drill(self, step: int) -> None:
        for name in self.drills.due(step):
            print(f"fault drill: killing {name} at step {step}", file=sys.stderr, flush=True)
            if name == "chief-0":
                assert self.chief is not None, "drills are due only at the steps the chief reports"
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
                workers = [t for t in self.tasks.values() if role_of_task(t.name).runs_steps]
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
        if self.cpu_sampler is not None:
            self.cpu_sampler.stop()
        if self.local_evaluator is not None:
            self.local_evaluator.stop()
        with self._lock:
            stop_all(list(self.tasks.values()), self.chief)
            if self.chief_log is not None:
                self.chief_log.close()
                self.chief_log = None


def _last_lines(path: Path, count: int = 5) -> str:
    try:
        return last_lines(path.read_text(errors="replace"), count, none="")
    except OSError:
        return "(no log)"
