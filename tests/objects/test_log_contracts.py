"""What the log archive's separately running pieces agree on (tfk8s:logs), held by tests: the
protocol is written in trainer/log_protocol.py alone, which the shipper, the collector and
components/ all import; the tasks it names are the tasks the plan makes; and the number of runs a
task keeps is what the user is told."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from components.cli.main import main
from components.objects.loading import load_experiment
from components.spec.logs import KEPT_RUNS
from components.spec.stack_files import PROJECT_ROOT
from tests.runs import SHIPPED_STACKS
from trainer import log_protocol

# A definition of the protocol: its environment's names, its header, the task name's pattern.
PROTOCOL_TEXT = re.compile(r"TFK8S_LOG_|TFK8S_POD_NAME|\"tfk8s-log\"|tfk8s-log \d|\[a-z\]\+-\[0-9\]")
NUMBER_WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five"}


def _sources() -> list[Path]:
    return sorted(path for folder in ("components", "trainer") for path in (PROJECT_ROOT / folder).rglob("*.py"))


def test_the_protocol_is_written_in_its_module_alone():
    protocol = PROJECT_ROOT / "trainer" / log_protocol.PROTOCOL
    written = {
        f"{path.relative_to(PROJECT_ROOT)}:{number}"
        for path in _sources()
        if path != protocol
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if PROTOCOL_TEXT.search(line)
    }
    assert written == set()
    assert PROTOCOL_TEXT.search(protocol.read_text()), "the pattern finds the protocol where it is"


@pytest.mark.parametrize("stack", SHIPPED_STACKS)
def test_every_task_a_plan_makes_is_a_task_of_the_protocol(stack):
    tasks = [placement.task.name for placement in load_experiment(stack).plan.placements]
    assert tasks and [task for task in tasks if not log_protocol.is_task_name(task)] == []
    task_type, _, index = tasks[-1].rpartition("-")
    assert log_protocol.task_name(task_type, index) == tasks[-1], "the shipper names it from its environment"


def test_the_longest_header_and_request_fit_the_line_the_collector_reads():
    pod = "p" * 253  # Kubernetes' longest name
    task = "evaluator-999999"
    assert log_protocol.parse_header(log_protocol.header(task, pod)[:-1]) == (log_protocol.VERSION, task, pod)
    assert log_protocol.parse_read_request(log_protocol.read_request(task, pod)[:-1]) == (task, pod)
    assert len(log_protocol.header(task, pod)) <= log_protocol.MAX_LINE_BYTES


def test_the_runs_a_task_keeps_are_the_number_the_user_is_told(capsys):
    said = f"last {NUMBER_WORDS[KEPT_RUNS]} runs"
    with pytest.raises(SystemExit):
        main(["logs", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert said in help_text and f"(tasks x {KEPT_RUNS})" in help_text
    for doc in ("docs/observing.md", "docs/lifecycle.md"):
        assert said in " ".join((PROJECT_ROOT / doc).read_text().split()), doc
