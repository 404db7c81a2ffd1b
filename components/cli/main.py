"""Command line, from the stack files alone (no Pulumi CLI):

  python -m components plan <stack>      who runs where
  python -m components render <stack>    the objects as YAML files, for kubectl or GitOps
  python -m components status <stack>    the plan against what a cluster did
  python -m components top <stack>       each task's CPU and memory, the PS imbalance, the chief's progress
  python -m components diagnose <stack>  the running experiment's bottleneck, and the next stack to run
  python -m components tune <stack>      rounds of up, measure, diagnose and the next stack, until nothing helps
  python -m components logs <stack> [TASK]   a task's log: from its pod, then from the log archive (tfk8s:logs)
  python -m components tensorboard <stack>   the experiment's TensorBoard (tfk8s:tensorboard) on a local port
  python -m components export <stack>    the validated experiment as JSON (for trainer.local)
  python -m components diff <a> <b>      two experiments side by side (exit 0 same, 1 different, 2 bad stack)
  python -m components stacks            the stacks in stacks/
  python -m components import-tfjob FILE --stack NAME   a Kubeflow TFJob as a stack file

A stack is a name of stacks/ or a path: a value with a '/' or ending in .yaml or .yml is a path.
Every command takes --help; docs/commands.md has them all, with the exit codes below.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path
from typing import Optional

from ..migrate.carry import DEFAULT_POOL, ImportOptions
from ..objects.loading import load_experiment
from ..plan.experiment_export import experiment_export
from ..spec.models import StackConfigError
from ..spec.reach_rules import stack_warnings
from ..spec.stack_files import PROJECT_ROOT, stack_names
from ..spec.trainer_contract import export_text
from ..tune.engine import RoundEngine
from . import argument_types
from .diagnose_command import add_diagnose_parser, diagnose_command
from .exit_codes import BAD_INPUT, exit_codes_help
from .import_tfjob import STACK_NAME_RULE, import_tfjob
from .plan_view import plan_table
from .render_command import render_command
from .tune_command import add_tune_parser, tune_command

DEFAULT_RENDER_ROOT = PROJECT_ROOT / "out"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m components",
        description=__doc__,
        epilog=exit_codes_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    # COMMAND: what a missing one is called in the error (else the internal name `command`).
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    stack_help = "stack name (stacks/Pulumi.<stack>.yaml) or a stack file's path (with a '/' or ending in .yaml)"

    plan = commands.add_parser("plan", help="print the server-by-task table of a stack")
    plan.add_argument("stack", metavar="STACK", help=stack_help)
    plan.add_argument("--json", action="store_true", help="print the placement output (server -> tasks) as JSON")

    render_cmd = commands.add_parser(
        "render",
        help="write every object the program registers, one YAML file each, in apply order",
        description="Write every object the program registers, one YAML file each, numbered in apply order, "
        "with a record of them (DIR/.tfk8s-render): a later render replaces or removes only the files it lists, "
        "while they still hold what it wrote. The Secret of a stack's secret env values is written as a "
        ".yaml.template (kubectl apply skips it) and left out of -o yaml. "
        "Exit 0 when written, 2 when nothing was (the stack is refused, DIR holds files render did not write "
        "and --force is not given, DIR cannot be written).",
    )
    render_cmd.add_argument("stack", metavar="STACK", help=stack_help)
    render_cmd.add_argument(
        "--out",
        type=_folder,
        metavar="DIR",
        help="folder to write (default: out/<stack>/): missing, empty or an earlier rendering, which is replaced "
        "whole; a folder holding other files is refused (exit 2) unless --force; - writes to standard output",
    )
    render_cmd.add_argument(
        "--force",
        action="store_true",
        help="write into a folder that holds other files too: they are kept, and only files an earlier render "
        "recorded there (in its .tfk8s-render) are replaced or removed",
    )
    render_cmd.add_argument(
        "-o",
        "--output",
        choices=("files", "yaml"),
        default="files",
        help="files (default): one file per object in --out; yaml: one multi-document YAML stream on standard "
        "output, nothing else there and no file written (`render STACK -o yaml | kubectl apply -f -`)",
    )

    status = commands.add_parser(
        "status",
        help="each task's planned server against its pod's node and phase in a cluster",
        description=STATUS_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    status.add_argument("stack", metavar="STACK", help=stack_help)
    _cluster_arguments(status)
    status.add_argument("--json", action="store_true", help="print the status as one JSON object")

    top = commands.add_parser(
        "top",
        help="each task's CPU cores and memory (metrics.k8s.io, or the kubelet summary where that API is absent), "
        "PS imbalance, the chief's progress",
        description=TOP_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    top.add_argument("stack", metavar="STACK", help=stack_help)
    _cluster_arguments(top)
    top.add_argument(
        "--watch",
        type=argument_types.watch_seconds,
        metavar="SECONDS",
        help="refresh every SECONDS until the experiment ends, then print its final phase (at least "
        f"{argument_types.MIN_WATCH_SECONDS:g})",
    )
    top.add_argument("--json", action="store_true", help="print one JSON object (one per line under --watch)")
    add_diagnose_parser(commands, stack_help, _cluster_arguments)
    add_tune_parser(commands, stack_help, _cluster_arguments)

    tensorboard = commands.add_parser(
        "tensorboard",
        help="the experiment's TensorBoard (tfk8s:tensorboard) on http://127.0.0.1:PORT/, through a port-forward, "
        "until Ctrl-C",
    )
    tensorboard.add_argument("stack", metavar="STACK", help=stack_help)
    tensorboard.add_argument(
        "--port", type=argument_types.local_port, default=6006, help="the local port (default: 6006; 0: any free one)"
    )
    _cluster_arguments(tensorboard)

    logs = commands.add_parser(
        "logs",
        help="a task's log: from its pod while it lives, then from the log archive (tfk8s:logs); without TASK, "
        "every task and where its log is",
        description=LOGS_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    logs.add_argument("stack", metavar="STACK", help=stack_help)
    logs.add_argument(
        "task", nargs="?", metavar="TASK", help="the task, as status names it: ps-0, worker-3, chief-0, evaluator-0"
    )
    logs.add_argument("--previous", action="store_true", help="the task's run before its last (a retried task)")
    logs.add_argument("--follow", "-f", action="store_true", help="follow the log while the task's pod runs")
    _cluster_arguments(logs)

    export = commands.add_parser(
        "export", help="print the validated experiment (task counts, placement, trainer settings) as JSON"
    )
    export.add_argument("stack", metavar="STACK", help=stack_help)

    diff = commands.add_parser(
        "diff",
        help="config, plan and objects of two experiments side by side; exit 0 same, 1 different",
        description="Config, plan and objects of two experiments side by side. Exit 0 when they are the same, "
        "1 when they differ, 2 when either stack cannot be read or is refused (nothing is compared then).",
    )
    diff.add_argument("a", metavar="A", help=stack_help)
    diff.add_argument("b", metavar="B", help=stack_help)
    diff.add_argument("--json", action="store_true", help="print the differences as one JSON object")

    commands.add_parser("stacks", help="list the stacks in stacks/")

    tfjob = commands.add_parser(
        "import-tfjob",
        help="write stacks/Pulumi.<NAME>.yaml from a kubeflow.org/v1 TFJob (exit 0 written, 1 nothing usable, "
        "2 a flag not of its form or the stack file not writable)",
        description="Write stacks/Pulumi.<NAME>.yaml from a kubeflow.org/v1 TFJob: replicas, image, command, "
        "args, env, claims, resources, restart policies. What cannot be carried is listed on stderr, one line "
        "each; a value tfk8s refuses is named by its TFJob field or the flag that gave it. Exit 0 when the "
        "stack is written; 1 when nothing usable came of FILE (it cannot be read as text, is not YAML or not a "
        "TFJob, has a field tfk8s cannot carry, or makes a stack tfk8s refuses: a TFJob value, or --image, "
        "--nodes or --pool), --stack is no stack name, or the stack file exists and --force is not given; 2 "
        "when a flag's value is not of its form or the stack file cannot be written. Nothing is written unless "
        "it exits 0.",
    )
    tfjob.add_argument(
        "file", metavar="FILE", help="the TFJob manifest (the first TFJob of a multi-document file); - reads stdin"
    )
    tfjob.add_argument(
        "--stack",
        required=True,
        metavar="NAME",
        help=f"the stack to write: stacks/Pulumi.<NAME>.yaml ({STACK_NAME_RULE})",
    )
    tfjob.add_argument(
        "--image", metavar="REF", help="the image every role runs, instead of the TFJob's (pinned: a tag or digest)"
    )
    tfjob.add_argument(
        "--nodes",
        type=argument_types.node_names,
        default=(),
        metavar="n1,n2,...",
        help="n1,n2,...: the nodes of the experiment's node pool (default: a placeholder to fill in)",
    )
    tfjob.add_argument(
        "--pool", default=DEFAULT_POOL, metavar="NAME", help=f"the node pool's name (default: {DEFAULT_POOL})"
    )
    tfjob.add_argument("--force", action="store_true", help="overwrite an existing stack file")
    return parser


STATUS_DESCRIPTION = """\
Each task's planned server against its pod's node and phase in a cluster, and the experiment's phase.

exit codes:
  0    the experiment succeeded, or every task runs where the plan put it
  1    the experiment failed, or a task is not running as planned: pending, on another server,
       missing, or crowded past its server's share (the table marks each with '!' and says why)
  2    the stack or the kubeconfig cannot be read, the API server does not answer or refuses,
       or the cluster has no JobSet for a stack that asks for one
  130  interrupted (Ctrl-C)
"""

TOP_DESCRIPTION = """\
Each task's CPU cores and memory (from metrics.k8s.io, or the kubelet summary where that API is absent), the PS
imbalance and the chief's progress.

exit codes:
  0    shown (under --watch: the experiment ended and did not fail)
  1    the experiment failed
  2    the stack or the kubeconfig cannot be read, or the API server does not answer or refuses
  130  interrupted (Ctrl-C, the way to stop --watch before the experiment ends)
"""


def _folder(text: str) -> Path:
    """A folder given on the command line: an empty one would be the current folder, never what was meant."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty folder name; give a folder, or leave --out out (out/<stack>/)")
    return Path(text)


LOGS_DESCRIPTION = """\
A task's log: read from its pod while the pod is in the cluster (as `kubectl logs`), and from the stack's
log archive (tfk8s:logs) once it is gone: JobSet deletes the PS and workers still running when the experiment
ends. The archive keeps each task's last two runs (a retried task's earlier pod is its previous run), the newest
tfk8s:logs.size / (tasks x 2) bytes of each, until `pulumi destroy` (docs/lifecycle.md).

exit codes:
  0    the log was printed (or, without TASK, the tasks were listed)
  1    the task has no log to show: no run yet, no earlier run, or its pod is gone with no archive
  2    the stack or the kubeconfig cannot be read, the API server or the archive does not answer or
       refuses, or the stack has no such task
  130  interrupted (Ctrl-C, the way to stop --follow)
"""


def main(argv: list[str] | None = None, tune_engine: Optional[RoundEngine] = None) -> int:
    """The command's exit code (components/cli/exit_codes.py). Ctrl-C is components/__main__.py's to turn
    into its code, since it may come while this module is still being imported."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "logs" and args.task is None and (args.previous or args.follow):
        # Without TASK, logs lists the tasks: a run to go back to or a log to follow is one task's.
        given = " and ".join(flag for flag, on in (("--previous", args.previous), ("--follow", args.follow)) if on)
        _subparser(parser, "logs").error(
            f"{given} read{'s' if ' and ' not in given else ''} one task's log: give TASK (e.g. "
            f"`python -m components logs {shlex.quote(args.stack)} worker-0 {given.replace(' and ', ' ')}`), or leave "
            f"{given} out to list the tasks"
        )

    if args.command == "stacks":
        print("\n".join(stack_names()))
        return 0

    if args.command == "diff":
        return _diff(args.a, args.b, args.json)

    if args.command == "import-tfjob":
        options = ImportOptions(args.stack, args.image, args.nodes, args.pool)
        return import_tfjob(args.file, options, force=args.force)

    try:
        experiment = load_experiment(args.stack)
    except StackConfigError as error:
        print(error, file=sys.stderr)
        return BAD_INPUT

    if args.command in ("plan", "render"):
        for warning in stack_warnings(experiment.config):
            print(f"warning: {warning}", file=sys.stderr)
    if args.command == "plan":
        plan = experiment.plan
        if args.json:
            print(json.dumps(plan.summary(), indent=2))
        else:
            print(plan_table(experiment.config, plan, experiment.program_source))
        return 0

    if args.command == "export":
        print(export_text(experiment_export(experiment)))
        return 0

    if args.command == "render":
        return render_command(experiment, args.out, args.output, args.force, DEFAULT_RENDER_ROOT)

    # These need the Kubernetes client; the commands above do not.
    if args.command == "logs":
        from ..live.logs import show_logs

        return show_logs(
            experiment, args.task, args.previous, args.follow, args.kubeconfig, args.context, stack_given=args.stack
        )

    if args.command == "tensorboard":
        from ..live.tensorboard_forward import serve_tensorboard

        return serve_tensorboard(experiment, args.kubeconfig, args.context, args.port, stack_given=args.stack)

    if args.command == "diagnose":
        return diagnose_command(experiment, args)
    if args.command == "tune":
        return tune_command(experiment, args, tune_engine)

    if args.command == "top":
        from ..live.top import cluster_top

        return cluster_top(experiment, args.kubeconfig, args.context, args.watch, args.json, stack_given=args.stack)

    from ..live.status import cluster_status

    return cluster_status(experiment, args.kubeconfig, args.context, as_json=args.json, stack_given=args.stack)


def _subparser(parser: argparse.ArgumentParser, command: str) -> argparse.ArgumentParser:
    """The parser of `command`, whose usage line its errors print."""
    (commands,) = [action for action in parser._actions if action.dest == "command"]
    assert isinstance(commands.choices, dict)
    return commands.choices[command]


def _cluster_arguments(command: argparse.ArgumentParser) -> None:
    """--kubeconfig and --context, as every command that reads the cluster takes them."""
    command.add_argument(
        "--kubeconfig",
        help="kubeconfig file (default: every file $KUBECONFIG lists, merged as kubectl merges them, then "
        "~/.kube/config)",
    )
    command.add_argument("--context", help="kubeconfig context (default: the current one)")


def _diff(a: str, b: str, as_json: bool) -> int:
    from .diff import diff_experiments, diff_text

    try:
        first, second = load_experiment(a), load_experiment(b)
    except StackConfigError as error:
        print(error, file=sys.stderr)
        return BAD_INPUT
    result = diff_experiments(first, second)
    print(json.dumps(result.to_json(), indent=2) if as_json else diff_text(result))
    return 0 if result.same else 1
