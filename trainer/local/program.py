"""A team's own program (tfk8s:program) as local processes: the tasks a cluster would run, on loopback.

Each task runs the program's command for its role, in the program's source folder, with the
environment a pod gives it: TF_CONFIG (`environment: cloud`), PS_HOSTS, WORKER_HOSTS, JOB_NAME,
TASK_INDEX, PS_REPLICAS, WORKER_REPLICAS and the program's own env; `$(NAME)` in the command
is expanded as the kubelet does. `python` is the trainer's environment's (TensorFlow). As in a
cluster: a failed worker is started again, a failed PS or chief ends the run, and the run
succeeds when the chief exits 0 (done: chief), every worker has (done: workers) or N workers have
(done: {workers: N}; the others are stopped). An evaluator (JOB_NAME=evaluator, TF_CONFIG task
`evaluator` with a cluster without it) runs roles.evaluator's command, else the workers'; it never
decides the outcome and is stopped at the end (trainer/local/evaluator.py). Every
process runs in its own process group and is stopped at the end, on failure and on Ctrl-C.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, TextIO

from ..kubelet_expansion import expand
from ..lifeline import LAUNCHER_PID_ENV
from ..ports import free_ports
from ..shared_names import EVALUATOR, TRAINER_ROLES, role_of_task
from ..stack_export import DONE_BY_WORKER_0, ProgramExport
from .errors import LaunchError
from .evaluator import EVALUATOR_TASK, LocalEvaluator
from .tasks import Task, last_lines, stop_all

WORKER_RESTARTS = 5
POLL_S = 0.2


@dataclass
class LocalProgram:
    program: ProgramExport
    ps: int
    workers: int
    workdir: Path
    evaluator: int = 0  # 1: an evaluator task beside the cluster
    tasks: dict[str, Task] = field(default_factory=dict)
    local_evaluator: Optional[LocalEvaluator] = None

    def roles(self) -> dict[str, int]:
        chief = {"chief": 1} if self.program.has_chief else {}
        ps = {"ps": self.ps} if self.ps else {}  # workers only: no ps job at all, as in a pod's TF_CONFIG
        return {**chief, **ps, "worker": self.workers}

    def check(self) -> None:
        """What cannot run here is said before anything starts."""
        needed = self.program.workers_to_finish(self.workers)
        if not self.program.has_chief and needed > self.workers:
            raise LaunchError(
                f"tfk8s:program.done: {needed} workers must exit 0, and {self.workers} run here; "
                f"run at least {needed} (--workers)"
            )
        for role in [*self.roles(), *([EVALUATOR] if self.evaluator else [])]:
            if self.program.argv_of(role) is None:
                raise LaunchError(
                    f"tfk8s:program gives {role} no command: the image's entrypoint cannot run as a local "
                    "process; give command (or roles.<role>.command)"
                )
        missing = sorted(
            name for name, value in self.program.env.items() if isinstance(value, dict) and name not in os.environ
        )
        if missing:
            raise LaunchError(
                f"tfk8s:program.env: {', '.join(missing)} come from Secrets, which the cluster holds; "
                "set them in your shell to run here (their values are passed on)"
            )

    def cluster(self) -> dict[str, list[str]]:
        counts = self.roles()
        ports = iter(free_ports(sum(counts.values())))
        return {role: [f"127.0.0.1:{next(ports)}" for _ in range(count)] for role, count in counts.items()}

    def task_env(self, cluster: dict[str, list[str]], role: str, index: int) -> dict[str, str]:
        env = dict(os.environ)
        # `python` in the program's command is the trainer environment's, which has TensorFlow.
        env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
        env.update(
            {
                "TF_CONFIG": json.dumps(
                    {"cluster": cluster, "task": {"type": role, "index": index}, "environment": "cloud"}
                ),
                "JOB_NAME": role,
                "TASK_INDEX": str(index),
                "PS_REPLICAS": str(len(cluster.get("ps", ()))),
                "WORKER_REPLICAS": str(len(cluster["worker"])),
                "PS_HOSTS": ",".join(cluster.get("ps", ())),
                "WORKER_HOSTS": ",".join(cluster["worker"]),
                "PYTHONUNBUFFERED": "1",
                "TMPDIR": str(self.workdir / "tmp"),
                LAUNCHER_PID_ENV: str(os.getpid()),
            }
        )
        for name, value in self.program.env.items():
            if not isinstance(value, dict):  # a Secret's: the shell's own value, passed on as it is
                env[name], _ = expand(str(value), env)
        return env

    def run(self, out: TextIO = sys.stdout) -> dict[str, Any]:
        self.check()
        (self.workdir / "tmp").mkdir(parents=True, exist_ok=True)
        cluster = self.cluster()
        for role, addresses in cluster.items():
            for index in range(len(addresses)):
                env = self.task_env(cluster, role, index)
                name = f"{role}-{index}"
                argv = tuple(expand(word, env)[0] for word in self.program.argv[role] or ())
                cwd = Path(self.program.source) if self.program.source else self.workdir / name
                task = Task(name, env, self.workdir / name, command=argv, cwd=cwd, tie_to_launcher=True)
                self.tasks[name] = task
                task.start()
        if self.evaluator:
            self.local_evaluator = LocalEvaluator(self._evaluator_task(cluster), out, prints_events=False)
            self.local_evaluator.start()
        print(
            f"started {', '.join([*self.tasks, *([EVALUATOR_TASK] if self.evaluator else [])])} on loopback; done when "
            f"{'the chief exits 0' if self.program.has_chief else self._workers_done_text()}",
            file=out,
            flush=True,
        )
        return self._follow(out)

    def _evaluator_task(self, cluster: dict[str, list[str]]) -> Task:
        env = self.task_env(cluster, EVALUATOR, 0)
        argv = tuple(expand(word, env)[0] for word in self.program.argv_of(EVALUATOR) or ())
        cwd = Path(self.program.source) if self.program.source else self.workdir / EVALUATOR_TASK
        return Task(EVALUATOR_TASK, env, self.workdir / EVALUATOR_TASK, command=argv, cwd=cwd, tie_to_launcher=True)

    def _workers_done_text(self) -> str:
        if self.program.done == DONE_BY_WORKER_0:
            return "worker-0 exits 0"
        needed = self.program.workers_to_finish(self.workers)
        return "every worker exits 0" if needed == self.workers else f"{needed} of {self.workers} workers exit 0"

    def _follow(self, out: TextIO) -> dict[str, Any]:
        started = time.monotonic()
        # Whose exit ends the run: the first role in the table's order that may decide it and runs here
        # (the chief, else the workers: done: workers).
        deciding = next(role for role in TRAINER_ROLES if role.may_decide_outcome and role.name in self.roles())
        done: set[str] = set()
        restarts = 0
        while True:
            for name, task in self.tasks.items():
                if name in done or task.alive():
                    continue
                code = task.process.returncode if task.process is not None else None
                role = role_of_task(name)
                if code == 0 and role.may_decide_outcome:
                    done.add(name)
                    print(f"{name} exited 0", file=out, flush=True)
                    continue
                said = last_lines(task.output_since_start())
                if role.restarted_when_lost and task.restarts < WORKER_RESTARTS:
                    print(f"{name} exited {code}: {said}; starting it again", file=out, flush=True)
                    task.restarts += 1
                    restarts += 1
                    task.start()
                    continue
                raise LaunchError(f"{name} exited {code}: {said} (logs in {task.directory})")
            finished = sorted(name for name in done if role_of_task(name) is deciding)
            if finished if self.program.has_chief else self.program.workers_decide(finished, self.workers):
                summary = {
                    "phase": "Succeeded",
                    "done": self.program.done,
                    "seconds": round(time.monotonic() - started, 1),
                    "worker_restarts": restarts,
                    "log": last_lines(self.tasks[finished[0]].output_since_start()),
                }
                if self.local_evaluator is not None:
                    summary["evaluator"] = self.local_evaluator.finish()
                return summary
            time.sleep(POLL_S)

    def stop(self) -> None:
        if self.local_evaluator is not None:
            self.local_evaluator.stop()
        stop_all(list(self.tasks.values()))
