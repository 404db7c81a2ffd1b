"""The two sides of bench-vs-tfjob: one program as a TFJob (kubectl apply, Kubeflow's training
operator) and as its import-tfjob stack (the Pulumi engine, as `make up`), each applied, read and
deleted the same way by the measurements (benchmarks/vs_tfjob_measure.py)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, Any, Optional, cast

import yaml
from kubernetes import client
from vs_tfjob_programs import NAMESPACE, PROJECT_ROOT, Program

from components.live.status import read_jobset
from components.migrate.carry import ImportOptions, carry
from components.migrate.stack_yaml import stack_yaml
from components.migrate.tfjob import read_tfjob
from components.objects.loading import load_experiment
from components.plan import labels as L
from components.plan.task_roles import TRAINING_CLUSTER
from tools.localcluster import paths
from tools.localcluster.client import is_not_found
from tools.localcluster.worker_loss import task_pod

SERVERS = ("srv-00", "srv-01")
ROLES = TRAINING_CLUSTER  # chief, ps, worker: TFJob labels its replica types by the same names
TFJOB_ROLE_LABEL = "training.kubeflow.org/replica-type"
TFJOB_INDEX_LABEL = "training.kubeflow.org/replica-index"
TFJOB_NAME_LABEL = "training.kubeflow.org/job-name"
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
ENGINE_WAIT_S = 600.0
# The engine's own timeline, from the lines `pulumi up` prints: (stage, the words of its first line).
ENGINE_MARKS = (
    ("engine: update started", ("Updating (",)),
    ("engine: policy pack loaded", ("Loading policy packs...: done",)),
    ("engine: first object requested", ("kubernetes:", " creating (")),
    ("engine: JobSet requested", (":JobSet ", " creating (")),
    ("engine: JobSet created", (":JobSet ", " created (")),
)


class ExperimentFailed(RuntimeError):
    """The experiment failed where it was meant to go on (a lost task ended it)."""


def stamp(value: Any) -> Optional[float]:
    """Seconds since the epoch of an API timestamp (a datetime from a typed object, RFC 3339 text
    from a custom one); None where it is unset."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.timestamp()
    return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()


@dataclass
class Side:
    """How one side applies, reads and deletes the same experiment."""

    name: str
    program: Program
    api: client.ApiClient
    kubeconfig: Path
    work: Path

    def __post_init__(self) -> None:
        self.core = client.CoreV1Api(self.api)

    def apply(self, steps: int) -> None:
        raise NotImplementedError

    def applied(self) -> bool:
        """The client that applied has returned (kubectl at once; `pulumi up` when its engine has)."""
        return True

    def workload(self) -> Optional[dict[str, Any]]:
        """The object the cluster works from (the TFJob; the JobSet), None before it exists."""
        raise NotImplementedError

    def succeeded(self) -> bool:
        if (why := self.failed()) is not None:
            raise ExperimentFailed(why)
        return self._succeeded()

    def _succeeded(self) -> bool:
        raise NotImplementedError

    def failed(self) -> Optional[str]:
        """Why the experiment failed; None while it has not."""
        raise NotImplementedError

    def delete(self) -> None:
        raise NotImplementedError

    def task_pod(self, role: str, index: int) -> Optional[Any]:
        """Task `<role>-<index>`'s current pod, not one being deleted."""
        raise NotImplementedError

    def pods(self, *roles: str) -> list[Any]:
        """The pods of these roles (of the chief, PS and workers where none is named), in one request."""
        raise NotImplementedError

    def namespace(self) -> str:
        raise NotImplementedError

    def client_stages(self) -> dict[str, float]:
        """Stages of the applying client's own work, from what it printed."""
        return {}

    def controllers_done(self) -> bool:
        """The side's own controllers made what the workload asks before any pod (JobSet's Jobs);
        False where there is no such stage (the training operator makes the pods itself)."""
        return False

    def client_log(self) -> list[tuple[float, str]]:
        """What the applying client printed, each line with its seconds after the apply."""
        return []

    def all_pods(self) -> list[Any]:
        return self.pods(*ROLES)

    def placement(self) -> dict[str, dict[str, int]]:
        table: dict[str, Counter] = {}
        for role in ROLES:
            for pod in self.pods(role):
                if pod.spec.node_name:
                    table.setdefault(pod.spec.node_name, Counter())[role] += 1
        return {node: dict(counts) for node, counts in sorted(table.items())}


class KubeflowTFJob(Side):
    restart_policy: Optional[str] = None  # the manifest's own

    def _kubectl(self, *args: str) -> None:
        command = [str(paths.binary("kubectl")), "--kubeconfig", str(self.kubeconfig), *args]
        result = subprocess.run(command, capture_output=True, text=True, timeout=300)
        if result.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)}: {result.stderr.strip()}")

    def _manifest_file(self) -> Path:
        return self.work / f"{self.program.name}-tfjob.yaml"

    def apply(self, steps: int) -> None:
        self._manifest_file().write_text(yaml.safe_dump(self.program.manifest(steps, self.restart_policy)))
        self._kubectl("apply", "-f", str(self._manifest_file()))

    def workload(self) -> Optional[dict[str, Any]]:
        try:
            found = client.CustomObjectsApi(self.api).get_namespaced_custom_object(
                "kubeflow.org", "v1", NAMESPACE, "tfjobs", self.program.tfjob_name
            )
        except client.ApiException as error:
            if is_not_found(error):
                return None
            raise
        return cast(dict[str, Any], found)  # a custom object is answered as decoded JSON

    def _conditions(self) -> dict[str, dict[str, Any]]:
        tfjob = self.workload() or {}
        return {c["type"]: c for c in tfjob.get("status", {}).get("conditions", []) if c["status"] == "True"}

    def _succeeded(self) -> bool:
        return "Succeeded" in self._conditions()

    def failed(self) -> Optional[str]:
        failed = self._conditions().get("Failed")
        return None if failed is None else str(failed.get("message", failed.get("reason", "Failed")))

    def delete(self) -> None:
        self._kubectl("delete", "-f", str(self._manifest_file()), "--ignore-not-found", "--wait=true")

    def pods(self, *roles: str) -> list[Any]:
        selector = f"{TFJOB_NAME_LABEL}={self.program.tfjob_name},{TFJOB_ROLE_LABEL} in ({','.join(roles or ROLES)})"
        return list(self.core.list_namespaced_pod(NAMESPACE, label_selector=selector).items)

    def task_pod(self, role: str, index: int) -> Optional[Any]:
        for pod in self.pods(role):
            if pod.metadata.labels.get(TFJOB_INDEX_LABEL) == str(index) and pod.metadata.deletion_timestamp is None:
                return pod
        return None

    def namespace(self) -> str:
        return NAMESPACE


class Tfk8sStack(Side):
    """The same TFJob through import-tfjob, brought up and destroyed by the Pulumi engine."""

    def _stack_file(self, steps: int) -> Path:
        text = yaml.safe_dump(self.program.manifest(steps))
        job = read_tfjob(text, "tfjob.yaml")
        imported = carry(job, ImportOptions(stack=self.program.stack, nodes=SERVERS))
        target = self.work / f"Pulumi.{self.program.stack}.yaml"
        header = f"Imported from TFJob '{job.name}' by benchmarks/vs_tfjob.py, as import-tfjob does."
        target.write_text(stack_yaml(imported.values, header, imported.comments))
        return target

    def _engine(self, command: str) -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, "-m", "tools.engine", command, str(self.stack_file), "--kubeconfig", str(self.kubeconfig)],
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

    def workload(self) -> Optional[dict[str, Any]]:
        return read_jobset(self.api, self.experiment)

    def _terminal_state(self) -> Optional[str]:
        return ((self.workload() or {}).get("status") or {}).get("terminalState")

    def _succeeded(self) -> bool:
        return self._terminal_state() == "Completed"

    def failed(self) -> Optional[str]:
        return "its JobSet Failed" if self._terminal_state() == "Failed" else None

    def delete(self) -> None:
        self.engine_run.wait(timeout=ENGINE_WAIT_S)
        self.engine_reader.join(timeout=ENGINE_WAIT_S)
        if self.engine_run.returncode != 0:
            raise RuntimeError("pulumi up: " + "\n".join(line for _, line in self.engine_lines[-40:]))
        destroy = self._engine("destroy")
        output, _ = destroy.communicate(timeout=ENGINE_WAIT_S)
        if destroy.returncode != 0:
            raise RuntimeError(f"pulumi destroy: {output[-3000:]}")

    def pods(self, *roles: str) -> list[Any]:
        selector = L.selector_text(self.experiment.stack, roles or ROLES)
        try:
            return list(self.core.list_namespaced_pod(self.experiment.namespace, label_selector=selector).items)
        except client.ApiException as error:
            if is_not_found(error):
                return []
            raise

    def task_pod(self, role: str, index: int) -> Optional[Any]:
        return task_pod(self.core, self.experiment, role, index)

    def namespace(self) -> str:
        return self.experiment.namespace

    def controllers_done(self) -> bool:
        jobset = self.workload() or {}
        jobs = client.BatchV1Api(self.api).list_namespaced_job(
            self.namespace(), label_selector=f"{JOBSET_NAME_LABEL}={self.experiment.names.jobset}"
        )
        return len(jobs.items) == sum(job["replicas"] for job in jobset.get("spec", {}).get("replicatedJobs", []))

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


def sides_of(program: Program, api: client.ApiClient, kubeconfig: Path, work: Path) -> dict[str, Side]:
    """The TFJob as written, the TFJob with restartPolicy ExitCode, and the tfk8s stack."""
    tfjob = KubeflowTFJob("tfjob", program, api, kubeconfig, work)
    # The restart policy TFJob documents for retrying a replica that was killed (exit 128+).
    exit_code = KubeflowTFJob("tfjob_exitcode", program, api, kubeconfig, work)
    exit_code.restart_policy = "ExitCode"
    return {"tfjob": tfjob, "tfjob_exitcode": exit_code, "tfk8s": Tfk8sStack("tfk8s", program, api, kubeconfig, work)}
