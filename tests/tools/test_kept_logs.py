"""A run's container logs kept as it goes: a container restarted in place twice, then its pod deleted
by the controller that failed the run (Kubeflow's training operator at its backoff limit), still
shows what each of its runs printed and how each ended. The kubelet alone keeps one previous run,
and nothing once the pod is gone."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from kubernetes import client
from kubernetes.client import (
    V1ContainerState,
    V1ContainerStateRunning,
    V1ContainerStateTerminated,
    V1ContainerStatus,
    V1ObjectMeta,
    V1Pod,
    V1PodStatus,
)

from tools.localcluster.podlogs import KeptLogs, timestamped_log


@dataclass
class Container:
    """One container as the kubelet holds it: its runs' logs, the last run's end."""

    logs: list[str] = field(default_factory=lambda: [""])
    exit_codes: list[int] = field(default_factory=list)  # of the runs that ended

    def status(self) -> V1ContainerStatus:
        ended = [
            V1ContainerState(terminated=V1ContainerStateTerminated(exit_code=code, reason="Error"))
            for code in self.exit_codes
        ]
        running = len(self.exit_codes) < len(self.logs)
        current = V1ContainerState(running=V1ContainerStateRunning()) if running else ended[-1]
        restarts = len(self.logs) - 1
        last = ended[restarts - 1] if restarts > 0 else V1ContainerState()
        return V1ContainerStatus(
            name="tensorflow",
            image="i",
            image_id="",
            ready=running,
            restart_count=restarts,
            state=current,
            last_state=last,
        )


@dataclass
class FakeCore:
    """The two calls KeptLogs makes, answered as the API server does."""

    pods: dict[str, Container] = field(default_factory=dict)

    def list_namespaced_pod(self, namespace: str, label_selector: str):
        assert (namespace, label_selector) == ("ml-team", "training.kubeflow.org/job-name=ctr-model")
        return client.V1PodList(
            items=[
                V1Pod(metadata=V1ObjectMeta(name=name), status=V1PodStatus(container_statuses=[c.status()]))
                for name, c in self.pods.items()
            ]
        )

    def read_namespaced_pod_log(self, pod: str, namespace: str, container: str, previous: bool) -> str:
        found: Optional[Container] = self.pods.get(pod)
        if found is None or (previous and len(found.logs) < 2):
            raise client.ApiException(status=404 if found is None else 400)
        return found.logs[-2] if previous else found.logs[-1]


def test_every_run_of_a_restarted_container_is_kept_after_its_pod_is_deleted():
    chief = Container()
    core = FakeCore({"ctr-model-chief-0": chief, "ctr-model-ps-0": Container(["ps-0: serving\n"])})
    kept = KeptLogs(core, "ml-team", "training.kubeflow.org/job-name=ctr-model")  # type: ignore[arg-type]
    chief.logs[-1] = "first run\nTraceback: UnavailableError\n"
    kept.poll()
    # Exits 1, restarted in place; exits 1 again and is restarted: the kubelet now holds only the
    # second run's log as "previous".
    chief.exit_codes.append(1)
    chief.logs.append("second run\nPSUnavailableError\n")
    kept.poll()
    chief.exit_codes.append(1)
    chief.logs.append("third run\n")
    kept.poll()
    chief.exit_codes.append(1)
    kept.poll()
    del core.pods["ctr-model-chief-0"]  # the operator fails the TFJob and deletes its pods
    kept.poll()

    report = kept.report()
    runs = [run for run in kept.runs.values() if run.pod == "ctr-model-chief-0"]
    assert [(run.run, run.exit_code) for run in sorted(runs, key=lambda run: run.run)] == [(0, 1), (1, 1), (2, 1)]
    for text in ("first run", "Traceback: UnavailableError", "PSUnavailableError", "third run", "ps-0: serving"):
        assert text in report
    assert "ctr-model-chief-0/tensorflow, run 1 (exit code 1 Error)" in report
    assert "ctr-model-ps-0/tensorflow, run 1 (still running)" in report
    assert report.index("first run") < report.index("second run") < report.index("third run")


def test_nothing_kept_says_so():
    kept = KeptLogs(FakeCore(), "ml-team", "training.kubeflow.org/job-name=ctr-model")  # type: ignore[arg-type]
    kept.poll()
    assert kept.report() == "no container log kept for training.kubeflow.org/job-name=ctr-model in ml-team"


class StampedLog:
    def __init__(self, text: str) -> None:
        self.text = text

    def read_namespaced_pod_log(self, pod: str, namespace: str, timestamps: bool, previous: bool) -> str:
        assert timestamps
        return self.text


def test_a_line_is_what_the_kubelet_stamped_carriage_returns_and_all():
    """Keras' progress bar redraws itself with carriage returns and backspaces inside one line."""
    text = (
        "2026-12-07T21:50:01.250000000Z Epoch 1/1\n"
        "2026-12-07T21:50:02.500000000Z \r 1/400 loss: 2.3\x08\x08\r400/400 loss: 0.4 - val_loss: 0.3\n"
    )
    lines = timestamped_log(StampedLog(text), "ns", "pod")  # type: ignore[arg-type]
    assert [line for _, line in lines] == ["Epoch 1/1", "\r 1/400 loss: 2.3\x08\x08\r400/400 loss: 0.4 - val_loss: 0.3"]
    assert lines[1][0] - lines[0][0] == 1.25
    assert timestamped_log(StampedLog(""), "ns", "pod") == []  # type: ignore[arg-type]
