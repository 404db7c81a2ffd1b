"""The human view of a plan: one row per server, as `python -m components plan` prints it."""

from __future__ import annotations

import shlex
from typing import Optional

from ..plan.planner import Plan, ServerShare, compress_names
from ..plan.program_source import ProgramSource
from ..spec.models import StackConfig
from ..spec.sizing import ps_memory_request


def plan_table(config: StackConfig, plan: Plan, source: Optional[ProgramSource] = None) -> str:
    cluster = config.cluster
    ps_memory = ps_memory_request(config)
    if plan.strategy == "spread":
        mode = "nothing pinned"
    else:
        mode = "strict" if plan.strict else "servers preferred"
    lines = [
        f"stack {config.stack} · placement {plan.strategy} ({mode}) · namespace {config.namespace}",
        f"{plan.count('chief')} chief · "
        + (f"{plan.count('ps')} PS ({ps_memory} each) · " if plan.count("ps") else "no PS · ")
        + f"{plan.count('worker')} workers"
        + (f" ({cluster.workers.gpus} GPU each)" if cluster.workers.gpus else "")
        + (" · an evaluator" if plan.count("evaluator") else ""),
        _program_line(config, source),
        "",
    ]
    rows = [("SERVER", "POOL", "PS", "WORKERS", "TASKS")]
    tasks_on = plan.by_server()
    for share in plan.shares:
        rows.append(
            (
                share.server,
                share.pool,
                _count(plan, share, "ps"),
                _count(plan, share, "worker"),
                compress_names(tasks_on.get(share.server, [])),
            )
        )
    for pool, tasks in plan.unpinned().items():
        rows.append(("(scheduler)", pool, "", "", compress_names(tasks)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        cells = [
            cell.rjust(width) if i in (2, 3) else cell.ljust(width) for i, (cell, width) in enumerate(zip(row, widths))
        ]
        lines.append("  ".join(cells).rstrip())
    if plan.pinning == "count":
        lines += [
            "",
            "Each server holds exactly these counts; the scheduler picks which task indexes"
            + ("" if plan.shares_even() else " and which servers hold one more")
            + " (`status` shows where they run).",
        ]
    return "\n".join(lines)


def _program_line(config: StackConfig, source: Optional[ProgramSource]) -> str:
    """What every task runs: tfk8s's trainer, or the team's program (its command, its files' hash)."""
    program = config.program
    if program is None:
        return "program: tfk8s's trainer (tfk8s:trainer)"
    command, args = program.command_of("worker")
    shown = shlex.join([*(command or []), *(args or [])])
    if command is None:
        shown = f"(the image's entrypoint) {shown}".rstrip()
    shipped = f" · source {source.folder} ({len(source.files)} files, sha256 {source.sha256[:12]})" if source else ""
    line = f"program: {shown}{shipped} · done: {program.done_text}"
    if source is not None and source.left_out:
        # Never shipped: dotfiles and what .gitignore or .tfk8signore leave out (docs/programs.md).
        more = len(source.left_out) - 3
        listed = ", ".join(source.left_out[:3]) + (f" and {more} more" if more > 0 else "")
        line += f"\nleft out of source: {listed}"
    return line


def _count(plan: Plan, share: ServerShare, task_type: str) -> str:
    """A server's count of a role: the plan's, or its pool's share where the scheduler picks the indexes."""
    return plan.share_text(task_type, share.pool) if plan.pinning == "count" else str(share.count(task_type))
