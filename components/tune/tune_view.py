"""tune's table: one row per round, then the best stack, its file and the diff from the first stack
to it, then why tune stopped and what it could not take down."""

from __future__ import annotations

from pathlib import Path

from ..live.table import aligned
from ..spec.stack_edit import stack_diff
from ..spec.user_files import UnreadableFile, read_user_text
from .rounds import Tuning


def tuning_text(tuning: Tuning) -> str:
    rows = [("ROUND", "STACK", "FINDING", "EXAMPLES/S", "VS ROUND 0", "CHANGED")]
    for number, r in enumerate(tuning.rounds):
        finding = f"failed: {r.failed}" if r.failed else f"{r.bottleneck} ({r.confidence})"
        throughput = "-" if r.examples_per_s is None else f"{r.examples_per_s:,.1f}"
        ratio = tuning.ratio(r)
        changed = ", ".join(f"{c.key}: {c.old} -> {c.new}" for c in r.changes) or "-"
        rows.append((str(number), r.stack, finding, throughput, "-" if ratio is None else f"x{ratio:.2f}", changed))
    lines = aligned(rows)
    best, first = tuning.best, tuning.first
    if best is not None and first is not None:
        ratio = tuning.ratio(best)
        versus = "" if ratio is None else f", x{ratio:.2f} round 0's"
        lines += ["", f"best: {best.stack} ({best.file}), {best.examples_per_s:,.1f} examples/s{versus}"]
        if best is not first:
            lines.append(_diff(Path(first.file), first.stack, Path(best.file), best.stack))
    lines += ["", f"stopped: {tuning.stopped}"]
    lines += [f"left up: {what}" for what in tuning.left_behind]
    return "\n".join(lines)


def _diff(first: Path, first_stack: str, best: Path, best_stack: str) -> str:
    try:
        return stack_diff(read_user_text(first), read_user_text(best), first_stack, best_stack).rstrip()
    except UnreadableFile as why:
        return f"(no diff: {why})"
