"""A local cluster's process started again exactly as it was first started (the fault drills' control
plane restart, tools/localcluster/outages.py): its arguments and extra environment, logging after
its earlier log, its new PID handed to the record."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from tools.localcluster import paths
from tools.localcluster.processes import Launcher, stop_processes

SCRIPT = "import os, sys; print(sys.argv[1], os.environ['TFK8S_PROBE'], flush=True)"


def wait_for_lines(log: Path, count: int) -> list[str]:
    """The probe's own lines. Between fork and exec a library of this test's process (gRPC, which
    another test of the worker loaded) may write to the child's stderr, the log: not the probe's."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        lines = [line for line in (log.read_text().splitlines() if log.exists() else []) if " its-env" in line]
        if len(lines) >= count:
            return lines
        time.sleep(0.05)
    raise AssertionError(f"{log} has fewer than {count} lines: {log.read_text() if log.exists() else ''!r}")


def test_a_restarted_process_runs_as_it_was_started_and_logs_after_its_earlier_log(tmp_path):
    where = paths.ClusterDir(tmp_path)
    where.log_dir.mkdir()
    recorded: list[dict[str, int]] = []
    first = Launcher(where, tie_to_parent=True, record=recorded.append)
    pid = first.start("probe", ["-c", SCRIPT, "first-args"], Path(sys.executable), {"TFK8S_PROBE": "its-env"})
    log = where.log_dir / "probe.log"
    assert wait_for_lines(log, 1) == ["first-args its-env"]
    stop_processes({"probe": pid})

    os.environ.pop("TFK8S_PROBE", None)  # the extra environment comes from the record, not this process
    again = Launcher(where, tie_to_parent=True, record=recorded.append)
    new_pid = again.restart("probe")
    assert wait_for_lines(log, 2) == ["first-args its-env", "first-args its-env"]
    assert new_pid != pid and recorded[-1] == {"probe": new_pid}
    stop_processes({"probe": new_pid})
