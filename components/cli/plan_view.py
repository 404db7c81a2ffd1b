"""The human view of a plan: one row per server, as `python -m components plan` prints it."""

from __future__ import annotations

from components.plan.planner import Plan, compress_names
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
    pool_of = {p.server: p.pool for p in plan.placements if p.server is not None}
    for server, tasks in plan.by_server().items():
        rows.append(
            (
                server,
                pool_of[server],
                str(sum(1 for t in tasks if t.startswith("ps-"))),
                str(sum(1 for t in tasks if t.startswith("worker-"))),
                compress_names(tasks),
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
    return "\n".join(lines)
