"""The real Pulumi engine against the local cluster (the Makefile's preview, up and destroy).

  python -m tools.engine preview STACK     what `up` would do, with the policy pack
  python -m tools.engine up STACK          create or update the experiment, with the policy pack
  python -m tools.engine destroy STACK     delete everything the stack created
  python -m tools.engine pulumi STACK -- ARGS   the CLI itself (`make pulumi`: config set --secret ...)
  python -m tools.engine tune STACK [--kubeconfig F] [--state DIR] [TUNE FLAGS]   `python -m components
                                           tune` with this engine (`make tune`)

STACK is a stack name (stacks/Pulumi.STACK.yaml) or a stack file. The engine's
own output is printed as it comes. Exit 0 on success, 1 when the engine failed
(a policy violation, an object the cluster refused), 2 when it could not start
(a bad stack, no toolchain, no cluster).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pulumi import automation as auto

from components.objects.experiment_objects import kept_on_destroy_note
from components.objects.loading import load_experiment
from components.spec.models import StackConfigError
from tools.localcluster.paths import KUBECONFIG

from . import passthrough
from .workspace import COMMANDS, DEFAULT_DIRS, EngineDirs, EngineError, engine_stack, run_engine


def _print_out(line: str) -> None:
    print(line, flush=True)


def _print_err(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def run(command: str, stack_or_path: str, kubeconfig: Path, dirs: EngineDirs) -> int:
    try:
        experiment = load_experiment(stack_or_path)  # a bad stack is refused here, before the engine starts
        stack = engine_stack(stack_or_path, kubeconfig, dirs)
    except (StackConfigError, EngineError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    try:
        run_engine(stack, command, on_output=_print_out, on_error=_print_err)
    except EngineError as error:  # another run holds the stack
        print(f"error: {error}", file=sys.stderr)
        return 2
    except auto.CommandError:
        # The engine has printed why; its exit status is all that is left to say.
        print(f"error: pulumi {command} failed for stack '{stack.name}' (its output is above)", file=sys.stderr)
        return 1
    kept = kept_on_destroy_note(experiment)
    if command == "destroy" and kept is not None:
        print(kept, flush=True)
    return 0


def tune_main(argv: list[str]) -> int:
    """`tune STACK [--kubeconfig F] [--state DIR] [tune's own flags]`: components' tune, this engine's rounds."""
    from components.cli.main import main as components_main

    from .tune import ToolchainEngine

    where = argparse.ArgumentParser(add_help=False)
    where.add_argument("--kubeconfig", type=Path, default=KUBECONFIG)
    where.add_argument("--state", type=Path, default=DEFAULT_DIRS.root)
    known, rest = where.parse_known_args(argv)
    engine = ToolchainEngine(known.kubeconfig, EngineDirs(known.state))
    return components_main(["tune", *rest, "--kubeconfig", str(known.kubeconfig)], engine)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["pulumi"]:
        return passthrough.main(argv[1:])
    if argv[:1] == ["tune"]:
        return tune_main(argv[1:])
    parser = argparse.ArgumentParser(
        prog="python -m tools.engine", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("command", choices=COMMANDS)
    parser.add_argument("stack", help="a stack name or a stack file")
    parser.add_argument(
        "--kubeconfig", type=Path, default=KUBECONFIG, help="the local cluster's (default: %(default)s)"
    )
    parser.add_argument(
        "--state",
        type=Path,
        default=DEFAULT_DIRS.root,
        help="the engine's state, home and workspace (default: %(default)s)",
    )
    args = parser.parse_args(argv)
    return run(args.command, args.stack, args.kubeconfig, EngineDirs(args.state))


if __name__ == "__main__":
    sys.exit(main())
