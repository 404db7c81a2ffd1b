"""One team's TFJob run two ways on the local cluster's real nodes, read the same way on both.

A side is the TFJob under Kubeflow's training operator (`kubectl apply`; the cluster needs
`TFJOB=1`), or its `import-tfjob` stack under tfk8s. Each names its pods, its task `<role>-<index>`'s
current pod, and whether the experiment failed, so that what is timed on one side
(tools/localcluster/task_loss_timing.py) is timed alike on the other: by `make bench-vs-tfjob`
(benchmarks/vs_tfjob.py, which also brings the stack up through the Pulumi engine) and by the
migration's real-pod test (tests/realpods/test_import_tfjob.py).
"""

from __future__ import annotations

import subprocess
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Optional, cast

import yaml
from kubernetes import client

from components.live.status import read_jobset
from components.plan import labels as L
from components.plan.experiment import Experiment
from components.spec.task_roles import TRAINING_CLUSTER

from . import paths
from .client import is_not_found
from .worker_loss import task_pod

ROLES = TRAINING_CLUSTER  # chief, ps, worker: TFJob labels its replica types by the same names
TFJOB_ROLE_LABEL = "training.kubeflow.org/replica-type"
TFJOB_INDEX_LABEL = "training.kubeflow.org/replica-index"
TFJOB_NAME_LABEL = "training.kubeflow.org/job-name"
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
# What the team programs of tests/team_programs print for each step a worker runs, given --log-steps.
STEP_LINE = "worker: step"
KUBECTL_WAIT_S = 300


@dataclass(frozen=True)
class TeamTFJob:
    """A team's TFJob manifest, run for a chosen number of steps, and the stack its import makes."""

    name: str  # what the measurements call it
    tfjob_file: Path
    stack: str  # its import-tfjob stack's name
    namespace: str  # where the TFJob runs

    def manifest(self, steps: int, restart_policy: Optional[str] = None) -> dict[str, Any]:
        """The team's TFJob with `steps`, each worker logging its steps, in `namespace`; every
        replica's restartPolicy replaced by `restart_policy` where one is given. The steps and
        --log-steps replace the containers' args: the team programs take the rest from their command."""
        manifest = self._as_written()
        manifest["metadata"]["namespace"] = self.namespace
        for replica in self.replicas(manifest).values():
            if restart_policy:
                replica["restartPolicy"] = restart_policy
            for container in replica["template"]["spec"]["containers"]:
                container["args"] = ["--steps", str(steps), "--log-steps"]
        return manifest

    def _as_written(self) -> dict[str, Any]:
        return cast(dict[str, Any], yaml.safe_load(self.tfjob_file.read_text()))

    @staticmethod
    def replicas(manifest: dict[str, Any]) -> dict[str, Any]:
        replicas: dict[str, Any] = manifest["spec"]["tfReplicaSpecs"]
        return replicas

    @property
    def tfjob_name(self) -> str:
        return str(self._as_written()["metadata"]["name"])

    @property
    def tasks(self) -> int:
        """Every PS, worker and chief the TFJob runs."""
        return sum(int(replica["replicas"]) for replica in self.replicas(self._as_written()).values())

    @property
    def image(self) -> str:
        """The team's image, as every replica of its TFJob names it."""
        [image] = {
            container["image"]
            for replica in self.replicas(self._as_written()).values()
            for container in replica["template"]["spec"]["containers"]
        }
        return str(image)


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
    program: TeamTFJob
    api: client.ApiClient

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
        table: dict[str, Counter[str]] = {}
        for role in ROLES:
            for pod in self.pods(role):
                if pod.spec.node_name:
                    table.setdefault(pod.spec.node_name, Counter())[role] += 1
        return {node: dict(counts) for node, counts in sorted(table.items())}


@dataclass
class KubeflowTFJob(Side):
    """The TFJob as a team runs it today: `kubectl apply`, Kubeflow's training operator."""

    kubeconfig: Path
    work: Path  # where the applied manifest is written
    restart_policy: Optional[str] = None  # None: the manifest's own

    def _kubectl(self, *args: str) -> None:
        command = [str(paths.binary("kubectl")), "--kubeconfig", str(self.kubeconfig), *args]
        result = subprocess.run(command, capture_output=True, text=True, timeout=KUBECTL_WAIT_S)
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
                "kubeflow.org", "v1", self.namespace(), "tfjobs", self.program.tfjob_name
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
        return list(self.core.list_namespaced_pod(self.namespace(), label_selector=selector).items)

    def task_pod(self, role: str, index: int) -> Optional[Any]:
        for pod in self.pods(role):
            if pod.metadata.labels.get(TFJOB_INDEX_LABEL) == str(index) and pod.metadata.deletion_timestamp is None:
                return pod
        return None

    def namespace(self) -> str:
        return self.program.namespace


@dataclass
class Tfk8sExperiment(Side):
    """The same TFJob's import under tfk8s, read through its experiment: its JobSet and task pods.
    Whoever brings the stack up sets `experiment` (the benchmark's engine side as it applies; a
    test from the stack file it applied: `of_experiment`)."""

    experiment: Experiment = field(init=False, repr=False, compare=False)

    @classmethod
    def of_experiment(
        cls, name: str, program: TeamTFJob, api: client.ApiClient, experiment: Experiment
    ) -> Tfk8sExperiment:
        side = cls(name, program, api)
        side.experiment = experiment
        return side

    def workload(self) -> Optional[dict[str, Any]]:
        return read_jobset(self.api, self.experiment)

    def _terminal_state(self) -> Optional[str]:
        return ((self.workload() or {}).get("status") or {}).get("terminalState")

    def _succeeded(self) -> bool:
        return self._terminal_state() == "Completed"

    def failed(self) -> Optional[str]:
        return "its JobSet Failed" if self._terminal_state() == "Failed" else None

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
