"""The two sides of bench-vs-tfjob as it runs them: the TFJob (tools/localcluster/tfjob_sides.py)
and its import-tfjob stack brought up and destroyed by the Pulumi engine, as `make up` does, the
engine's output timed line by line; each applied, read and deleted the same way by the
measurements (benchmarks/vs_tfjob_measure.py, tools/localcluster/task_loss_timing.py)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import engine_start
import yaml
from kubernetes import client
from vs_tfjob_programs import PROJECT_ROOT, Program

from components.migrate.carry import ImportOptions, carry
from components.migrate.stack_yaml import stack_yaml
from components.migrate.tfjob import read_tfjob
from components.objects.loading import load_experiment
from tools.localcluster.tfjob_sides import KubeflowTFJob, Side, Tfk8sExperiment

SERVERS = ("srv-00", "srv-01")
ENGINE_WAIT_S = 600.0
# The engine's own timeline, as `make bench-engine-start` reads it from `pulumi up`'s lines.
ENGINE_MARKS = tuple((f"engine: {stage}", words) for stage, words in engine_start.ENGINE_MARKS)


@dataclass
class Tfk8sStack(Tfk8sExperiment):
    """The same TFJob through import-tfjob, brought up and destroyed by the Pulumi engine."""

    kubeconfig: Path
    work: Path  # where the stack file is written

    def _stack_file(self, steps: int) -> Path:
        text = yaml.safe_dump(self.program.manifest(steps))
        job = read_tfjob(text, "tfjob.yaml")
        imported = carry(job, ImportOptions(stack=self.program.stack, nodes=SERVERS))
        target = self.work / f"Pulumi.{self.program.stack}.yaml"
        header = f"Imported from TFJob '{job.name}' by benchmarks/vs_tfjob.py, as import-tfjob does."
        target.write_text(stack_yaml(imported.values, header, imported.comments))
        return target

    # The client that brings the stack up and down: `make up` and `make destroy`'s.
    client = ("tools.engine", {"up": "up", "destroy": "destroy"})

    def _engine(self, command: str) -> subprocess.Popen:
        module, commands = self.client
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                module,
                commands[command],
                str(self.stack_file),
                "--kubeconfig",
                str(self.kubeconfig),
            ],
            cwd=PROJECT_ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )

    def apply(self, steps: int) -> None:
        self.stack_file = self._stack_file(steps)
        self.experiment = load_experiment(str(self.stack_file))
        # `pulumi up` returns once the JobSet controller made the Jobs; the clock started before it,
        # as with kubectl, and the pods are watched while it runs. Its output is read as it comes,
        # each line timed, to tell where the engine's seconds go.
        started = time.monotonic()
        self.engine_run = self._engine("up")
        self.engine_lines: list[tuple[float, str]] = []

        def read(stream: IO[str]) -> None:
            for line in stream:
                self.engine_lines.append((time.monotonic() - started, line.rstrip()))

        self.engine_reader = threading.Thread(target=read, args=(self.engine_run.stdout,), daemon=True)
        self.engine_reader.start()

    def applied(self) -> bool:
        return self.engine_run.poll() is not None

    def delete(self) -> None:
        self.engine_run.wait(timeout=ENGINE_WAIT_S)
        self.engine_reader.join(timeout=ENGINE_WAIT_S)
        if self.engine_run.returncode != 0:
            raise RuntimeError(f"{self.name} up: " + "\n".join(line for _, line in self.engine_lines[-40:]))
        destroy = self._engine("destroy")
        output, _ = destroy.communicate(timeout=ENGINE_WAIT_S)
        if destroy.returncode != 0:
            raise RuntimeError(f"{self.name} destroy: {output[-3000:]}")

    def client_log(self) -> list[tuple[float, str]]:
        self.engine_reader.join(timeout=ENGINE_WAIT_S)
        return list(self.engine_lines)

    def client_stages(self) -> dict[str, float]:
        """When `pulumi up` printed each of ENGINE_MARKS, in seconds after the apply."""
        stages: dict[str, float] = {}
        for stage, words in ENGINE_MARKS:
            for seconds, line in self.client_log():
                if all(word in line for word in words):
                    stages[stage] = seconds
                    break
        return stages


class Tfk8sApplied(Tfk8sStack):
    """The same stack through tfk8s's own server-side applier, as `make apply` and `make delete` do: no
    Pulumi engine (its command returns once every pod runs)."""

    client = ("tools.localcluster", {"up": "apply", "destroy": "delete"})


def sides_of(program: Program, api: client.ApiClient, kubeconfig: Path, work: Path) -> dict[str, Side]:
    """The TFJob as written, the TFJob with restartPolicy ExitCode, and the tfk8s stack by the engine
    and by tfk8s's applier."""
    return {
        "tfjob": KubeflowTFJob("tfjob", program, api, kubeconfig, work),
        # The restart policy TFJob documents for retrying a replica that was killed (exit 128+).
        "tfjob_exitcode": KubeflowTFJob("tfjob_exitcode", program, api, kubeconfig, work, restart_policy="ExitCode"),
        "tfk8s": Tfk8sStack("tfk8s", program, api, kubeconfig, work),
        "tfk8s_apply": Tfk8sApplied("tfk8s_apply", program, api, kubeconfig, work),
    }
