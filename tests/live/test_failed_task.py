"""Which task `status` blames for a failed experiment, and the last lines it quotes (components/live/status.py)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Optional

from components.live.status import failed_task
from components.plan import labels as L

FIRST_INDEX = {"tf-chief": 0, "tf-worker": 0}


def terminated(code: int, finished: str, message: Optional[str] = None) -> SimpleNamespace:
    return SimpleNamespace(terminated=SimpleNamespace(exit_code=code, finished_at=finished, message=message))


def pod(name: str, role: str, index: int, state: SimpleNamespace, last_state: Optional[SimpleNamespace] = None):
    labels = {L.COMPONENT: role, L.WORKLOAD: f"tf-{role}", L.COMPLETION_INDEX: str(index)}
    container = SimpleNamespace(state=state, last_state=last_state)
    return SimpleNamespace(
        metadata=SimpleNamespace(name=name, namespace="tf", labels=labels),
        status=SimpleNamespace(container_statuses=[container]),
    )


class Logs:
    """The pod log API: the newest run's log of each pod."""

    def __init__(self, logs: dict[str, str]):
        self.logs = logs
        self.read: list[str] = []

    def read_namespaced_pod_log(self, name: str, namespace: str, tail_lines: int) -> str:
        self.read.append(name)
        return self.logs[name]


def test_the_failed_task_is_named_with_its_last_lines_from_its_termination_message_in_either_stream_order():
    # stdout and stderr reach the log through two pipes: the error may land before the line printed first.
    message = "Traceback (most recent call last):\ncannot open /data/vocabulary.txt\nloading the model\n"
    failed = pod("tf-chief-0-abc", "chief", 0, terminated(1, "2026-11-25T10:00:05Z", message))
    logs = Logs({})
    said = failed_task(logs, [failed], FIRST_INDEX)
    assert said.startswith("chief-0 exited 1: ")
    assert "cannot open /data/vocabulary.txt" in said and "loading the model" in said
    assert logs.read == [], "the termination message is enough: no log read"


def test_a_restarted_container_is_quoted_from_its_failed_run_not_from_its_new_one():
    restarted = pod(
        "tf-worker-2-xyz", "worker", 2,
        SimpleNamespace(terminated=None),
        terminated(3, "2026-11-25T10:00:05Z", "trainer: checkpoint 500 could not be written: NOT_FOUND"),
    )
    said = failed_task(Logs({"tf-worker-2-xyz": "starting again\n"}), [restarted], FIRST_INDEX)
    assert said == "worker-2 exited 3: trainer: checkpoint 500 could not be written: NOT_FOUND"


def test_without_a_termination_message_the_pods_log_is_quoted():
    failed = pod("tf-worker-1-xyz", "worker", 1, terminated(2, "2026-11-25T10:00:05Z"))
    assert failed_task(Logs({"tf-worker-1-xyz": "one\ntwo\nthree\nfour\n"}), [failed], FIRST_INDEX) == (
        "worker-1 exited 2: two | three | four"
    )


def test_a_task_stopped_by_a_signal_after_the_failure_is_not_taken_for_its_cause():
    cause = pod("tf-worker-0-a", "worker", 0, terminated(1, "2026-11-25T10:00:05Z", "out of memory in the input"))
    stopped = pod("tf-chief-0-b", "chief", 0, terminated(143, "2026-11-25T10:00:09Z", "stopping"))
    assert failed_task(Logs({}), [stopped, cause], FIRST_INDEX) == "worker-0 exited 1: out of memory in the input"


def test_no_failed_container_names_no_task():
    running = pod("tf-worker-0-a", "worker", 0, SimpleNamespace(terminated=None))
    assert failed_task(Logs({}), [running], FIRST_INDEX) == ""
