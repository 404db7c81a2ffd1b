"""The bottleneck finding of each experiment a report ran: the rules of `diagnose`
(components/insight/bottleneck.py), so that a sweep of stacks reads as a list of findings.

- A local run (`make report`): the rules' figures of what the launcher measured
  (`local_measurements`, and the shape `experiment_shape` reads from the export;
  trainer/report/local_diagnosis.py feeds them), one server,
  this machine, with its cores.
- A run on a cluster (`trainer.report --cluster`): what `diagnose --json` says over a window while the
  chief trained (trainer/report/cluster.py runs diagnose's own functions).

Either way a run's `diagnosis` has the keys of `diagnose --json` that say the finding (`bottleneck`,
`summary`, `evidence`, `confidence`, `confidence_reason`, `advice`, `next.changes`,
`metrics_source`, `window`), or `{"bottleneck": null, "reason": ...}` where there is none.
"""

from __future__ import annotations

import json
import socket
from typing import Any, Optional

from ..spec.trainer_contract import parse_task_name
from .bottleneck import Finding, Measurements, ServerSample, TaskSample, TrainerFacts

LOCAL_SOURCE = "local processes"


def no_finding(reason: str) -> dict[str, Any]:
    return {"bottleneck": None, "reason": reason}


def local_measurements(
    task_cpu: dict[str, Any],
    allowance: dict[str, float],
    cores: float,
    bytes_per_ps: Optional[list[int]] = None,
    server: Optional[str] = None,
) -> Measurements:
    """The rules' figures of a local run: `task_cpu` as trainer.local's summary gives it (cores per
    task at each sample, the window, the tasks restarted in it, the step time)."""
    server = server or socket.gethostname()
    restarted = set(task_cpu.get("restarted") or ())
    tasks = []
    for name, series in sorted(task_cpu["cores"].items(), key=lambda item: parse_task_name(item[0])):
        role = parse_task_name(name)[0]
        tasks.append(TaskSample(name, role, server, tuple(series), allowance.get(role), running=name not in restarted))
    shards = {f"ps-{index}": size for index, size in enumerate(bytes_per_ps or ())}
    return Measurements(
        tasks=tuple(tasks),
        servers=(ServerSample(server, float(cores)),),
        seconds=float(task_cpu["seconds"]),
        samples=int(task_cpu["samples"]),
        source=LOCAL_SOURCE,
        trainer=TrainerFacts(task_cpu.get("step_time_s"), shards),
    )


def finding_json(finding: Finding, measured: Measurements, every_s: Optional[float] = None) -> dict[str, Any]:
    """A finding as `diagnose --json` writes it (the keys that say the finding)."""
    return {
        **finding.to_json(),
        "metrics_source": measured.source,
        "window": {"seconds": measured.seconds, "samples": measured.samples, "every_s": every_s},
    }


# -- what the report shows ------------------------------------------------------------


def value_text(value: Any) -> str:
    """A stack key's value as `diagnose` shows it."""
    return "(left out)" if value is None else value if isinstance(value, str) else json.dumps(value)


def finding_lines(diagnosis: dict[str, Any]) -> list[str]:
    """`finding: <bottleneck> (<confidence>): <summary>`, then each change as `key: from -> to` (or
    why none), for the text and the Markdown of a report."""
    if diagnosis.get("bottleneck") is None:
        return [f"no finding: {diagnosis.get('reason', 'not diagnosed')}"]
    lines = [f"finding: {diagnosis['bottleneck']} ({diagnosis['confidence']}): {diagnosis['summary']}"]
    changes = (diagnosis.get("next") or {}).get("changes") or []
    lines += [f"{change['key']}: {value_text(change['from'])} -> {value_text(change['to'])}" for change in changes]
    if not changes:
        advice = diagnosis.get("advice") or []
        lines.append("no stack key to change" + (f": {advice[0]}" if advice else ""))
    return lines


def findings(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The report's list of findings, one per run, in the runs' order (report.json's `findings`)."""
    listed = []
    for run in runs:
        diagnosis = run.get("diagnosis") or no_finding("not diagnosed")
        entry = {
            "run": run["name"],
            "stack": run["stack"],
            "partition": run["partition"],
            "bottleneck": diagnosis.get("bottleneck"),
            "confidence": diagnosis.get("confidence"),
            "summary": diagnosis.get("summary"),
            "changes": (diagnosis.get("next") or {}).get("changes") or [],
        }
        if diagnosis.get("bottleneck") is None:
            entry["reason"] = diagnosis.get("reason")
        listed.append(entry)
    return listed


def findings_text(runs: list[dict[str, Any]]) -> str:
    """Each run's name and its finding's lines, indented under it."""
    lines = []
    for run in runs:
        where = "a cluster's pods" if run.get("source") == "cluster" else "local processes"
        lines.append(f"{run['name']}: {run['ps']} PS, {run['workers']} workers, partition {run['partition']} ({where})")
        lines += [f"  {line}" for line in finding_lines(run.get("diagnosis") or no_finding("not diagnosed"))]
    return "\n".join(lines)


def findings_markdown(runs: list[dict[str, Any]]) -> list[str]:
    """The report's Markdown section of findings, a list item per run."""
    lines = ["## Findings (the rules of `python -m components diagnose`)", ""]
    for run in runs:
        first, *rest = finding_lines(run.get("diagnosis") or no_finding("not diagnosed"))
        lines.append(f"- **{run['name']}**: {first}")
        lines += [f"  - `{line}`" if " -> " in line else f"  - {line}" for line in rest]
    return [*lines, ""]
