"""Command line: `python -m components plan <stack>` prints who runs where.

Reads the stack file directly: no cluster and no Pulumi CLI needed.
"""

from __future__ import annotations

import argparse
import json
import sys

from .config import StackConfigError
from .plan_view import plan_table
from .planner import plan_stack
from .stack_files import load_stack_file, stack_names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m components", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    plan = commands.add_parser("plan", help="print the server-by-task table of a stack")
    plan.add_argument("stack", help="stack name (stacks/Pulumi.<stack>.yaml) or a stack file path")
    plan.add_argument(
        "--json", action="store_true", help="print the placement output (server -> tasks) as JSON"
    )
    commands.add_parser("stacks", help="list the stacks in stacks/")
    args = parser.parse_args(argv)

    if args.command == "stacks":
        print("\n".join(stack_names()))
        return 0

    try:
        config = load_stack_file(args.stack)
    except StackConfigError as error:
        print(error, file=sys.stderr)
        return 2
    placement = plan_stack(config)
    if args.json:
        print(json.dumps({"placement": placement.by_server(), "unpinned": placement.unpinned()}, indent=2))
    else:
        print(plan_table(config, placement))
    return 0


if __name__ == "__main__":
    sys.exit(main())
