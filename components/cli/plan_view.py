"""The human view of a plan: one row per server, as `python -m components plan` prints it."""

from __future__ import annotations

from components.plan.planner import Plan, ServerShare, TaskType, compress_names
from components.spec.models import StackConfig
from components.spec.sizing import ps_memory_request


def plan_table(config: StackConfig, plan: Plan) -> str:
    cluster = config.cluster
    ps_memory = ps_memory_request(config)
    if plan.strategy == "spread":
        mode = "nothing pinned"
    else:
        mode = "strict" if plan.strict else "servers preferred"
    lines = [
        f"stack {config.stack} · placement {plan.strategy} ({mode}) · namespace {config.namespace}",
        f"{plan.count('chief')} chief · {plan.count('ps')} PS ({ps_memory} each) · "
        f"{plan.count('worker')} workers"
        + (f" ({cluster.workers.gpus} GPU each)" if cluster.workers.gpus else ""),
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
            cell.rjust(width) if i in (2, 3) else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(row, widths))
        ]
        lines.append("  ".join(cells).rstrip())
    if plan.pinning == "count":
        uneven = any(
            low != high for role in ("ps", "worker") for low, high in
            (plan.share_bounds(role, pool) for pool in {share.pool for share in plan.shares})  # type: ignore[arg-type]
        )
        lines += [
            "",
            "Each server holds exactly these counts; the scheduler picks which task indexes"
            + (" and which servers hold one more" if uneven else "") + " (`status` shows where they run).",
        ]
    return "\n".join(lines)


def _count(plan: Plan, share: ServerShare, task_type: TaskType) -> str:
    """A server's count of a role; `2-3` where the scheduler picks which servers hold one more."""
    low, high = plan.share_bounds(task_type, share.pool)
    if plan.pinning == "count" and low != high:
        return f"{low}-{high}"
    return str(share.count(task_type))
