"""What `diagnose` prints (pure): the finding, its evidence, how sure and why, the source of the figures
and the window they cover, the advice, and the next experiment as a stack diff; as text or as the one
JSON object of `diagnose --json` (public: `bottleneck`, `evidence`, `confidence`, `next`, `metrics_source`).
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from typing import Any, Optional

from ..insight import bottleneck
from ..plan.experiment import Experiment
from .diagnose import Sampled
from .table import aligned
from .usage import KUBELET_SUMMARY, METRICS_API


@dataclass(frozen=True)
class NextStack:
    """The stack the finding proposes: its name, the diff from the stack diagnosed, and where it was
    written (None: not written); `refused`: why plan refuses it (a fault of the rules, said as one)."""

    stack: str
    diff: str = ""
    written: Optional[str] = None
    refused: Optional[str] = None


def window_text(sampled: Sampled) -> str:
    """How long, how many samples and from where: what the figures are worth."""
    window, measured = sampled.window, sampled.measured
    count = len(window.samples)
    taken = f"{count} sample{'' if count == 1 else 's'}, one every {sampled.every_s:g} s"
    text = f"sampled {window.seconds:.0f} s ({taken})"
    if window.ended:
        text += f"; the experiment ended ({window.ended}) during the window: the finding is from those samples"
    return text + f"; {_source_text(measured.source if measured else None)}"


def _source_text(source: Optional[str]) -> str:
    if source == METRICS_API:
        return f"CPU from the metrics API ({METRICS_API}, metrics-server)"
    if source == KUBELET_SUMMARY:
        return f"CPU and network from the {KUBELET_SUMMARY} (each node's kubelet, through the API server's node proxy)"
    return "no CPU figures"


def program_text(measured: bottleneck.Measurements) -> str:
    """What the figures could tell of the program: tfk8s's trainer's own facts, or that there are none."""
    if measured.trainer is None:
        return "a team's program: judged from what the cluster measures alone (tfk8s cannot see its model)"
    step = measured.trainer.step_time_s
    facts = [
        f"step time {step:.3f} s" if step is not None else "no step time (fewer than two progress lines in the window)"
    ]
    if measured.trainer.ps_shard_bytes:
        facts.append("the bytes each PS holds, from the chief's summary")
    return f"tfk8s's trainer: {', '.join(facts)}"


def diagnose_json(sampled: Sampled, finding: bottleneck.Finding, next_stack: NextStack) -> dict[str, Any]:
    """`diagnose --json`: one object."""
    window, measured = sampled.window, sampled.measured
    said = finding.to_json()
    return {
        **said,
        "next": {
            "stack": next_stack.stack,
            **said["next"],
            "stack_diff": next_stack.diff if next_stack.refused is None else None,
            "written": next_stack.written,
            **({"refused": next_stack.refused} if next_stack.refused else {}),
        },
        "metrics_source": measured.source if measured else None,
        "window": {
            "seconds": round(window.seconds, 1),
            "samples": len(window.samples),
            "every_s": sampled.every_s,
            "ended": window.ended,
        },
        "notes": list(window.notes),
    }


def diagnose_text(
    experiment: Experiment, sampled: Sampled, finding: bottleneck.Finding, next_stack: NextStack, stack_given: str
) -> str:
    measured = sampled.measured
    assert measured is not None  # a finding needs figures
    lines = [
        f"stack {experiment.stack} · namespace {experiment.namespace} · phase: {sampled.phase}",
        window_text(sampled),
        program_text(measured),
        "",
        f"bottleneck: {finding.bottleneck}",
        f"  {finding.summary}",
        f"confidence: {finding.confidence} ({finding.confidence_reason})",
    ]
    if finding.evidence:
        lines += ["", "evidence:", *("  " + line if line else line for line in evidence_lines(finding.evidence))]
    if finding.advice:
        lines += ["", "advice:", *(f"  - {advice}" for advice in finding.advice)]
    lines += ["", *_next_lines(experiment, finding, next_stack, stack_given)]
    if sampled.window.notes:
        lines += ["", "notes:", *(f"  {note}" for note in sampled.window.notes)]
    return "\n".join(lines)


# Said in the lines above the evidence already (the window, its source), or in docs/observing.md.
SAID_ELSEWHERE = ("source", "window_s", "samples", "judged_from", "thresholds")
# A table of the evidence (one row per task) is cut here: --json has every row.
MAX_ROWS = 12


def evidence_lines(evidence: dict[str, Any]) -> list[str]:
    """The figures that decided the finding, short: its single figures as one table, each table of
    figures (per task, per role, per server) as its own, none empty and none said above."""
    single: list[tuple[str, ...]] = []
    tables: list[str] = []
    for key, value in evidence.items():
        if key in SAID_ELSEWHERE or value is None or value == [] or value == {}:
            continue
        rows = _table(value)
        if rows is None:
            single.append((str(key), _shown(value)))
            continue
        tables += ["", f"{key}:", *("  " + line for line in aligned(rows[: MAX_ROWS + 1]))]
        if len(rows) - 1 > MAX_ROWS:
            tables.append(f"  ... and {len(rows) - 1 - MAX_ROWS} more (--json has every one)")
    return aligned(single) + tables


def _table(value: Any) -> Optional[list[tuple[str, ...]]]:
    """A header and rows, for a mapping of mappings (a row per key) or a list of mappings; else None."""
    if isinstance(value, dict) and value and all(isinstance(row, dict) for row in value.values()):
        named = [{"": name, **row} for name, row in value.items()]
    elif isinstance(value, list) and value and all(isinstance(row, dict) for row in value):
        named = value
    else:
        return None
    columns = list(dict.fromkeys(column for row in named for column in row))
    header = tuple(column.upper() for column in columns)
    return [header, *(tuple(_shown(row.get(column)) for column in columns) for row in named)]


def _shown(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(", ", ": "))


def _next_lines(
    experiment: Experiment, finding: bottleneck.Finding, next_stack: NextStack, stack_given: str
) -> list[str]:
    if not finding.changes:
        return ["next experiment: no stack key to change (the advice above says what to change instead)"]
    lines = [f"next experiment ({next_stack.stack}):"]
    lines += [f"  {change.key}: {_value(change.old)} -> {_value(change.new)}" for change in finding.changes]
    if next_stack.refused:
        return [*lines, f"  not written: {next_stack.refused}"]
    lines += ["", next_stack.diff.rstrip("\n")]
    if next_stack.written is None:
        lines.append(
            f"to write it: python -m components diagnose {shlex.quote(stack_given)} --write NEW-STACK (samples again)"
        )
    return lines


def _value(value: Any) -> str:
    return "(left out)" if value is None else json.dumps(value) if not isinstance(value, str) else value


def written_text(path: str, stack: str, in_stacks_dir: bool, old_stack: str, has_secrets: bool) -> str:
    """What to run next, once the new stack is written."""
    run = f"pulumi stack init {shlex.quote(stack)} (once), then pulumi up --stack {shlex.quote(stack)}"
    where = "" if in_stacks_dir else " (Pulumi reads stack files from stacks/: move it there first)"
    text = f"wrote {path}; next: {run}{where}"
    if has_secrets:
        # The secure: values and encryptionsalt are copied as they were: a passphrase decrypts them in
        # either stack, a key of the old stack's own (Pulumi Cloud, a KMS key per stack) only in it.
        text += (
            f"\nits secret values are {old_stack}'s, encrypted as they were: with a passphrase they read as "
            f"before; where each stack has a key of its own, set them again with `pulumi config set --secret "
            f"--stack {shlex.quote(stack)}`"
        )
    return text
