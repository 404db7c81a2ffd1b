"""`python -m components diagnose <stack>`: the running experiment's bottleneck, from what the cluster
measures over a window, and the next experiment as a stack diff (`--write NEW-STACK` writes it).

The sampling is components/live/diagnose.py (the sources and rights of `top`), the rules
components/insight/bottleneck.py, the stack change components/spec/stack_edit.py.
The new stack is checked as `plan` checks a stack file before it is shown as the next experiment or
written: a change the rules propose that plan refuses is a fault of the rules, named as one.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any, Callable, Optional

from ..live.diagnose import DEFAULT_SECONDS, MAX_SECONDS, MIN_SECONDS, SAMPLE_EVERY_S
from ..live.diagnosis import Diagnosis, check_stack, stack_values
from ..plan.experiment import Experiment
from ..spec.atomic_files import write_text_atomic
from ..spec.kubernetes_limits import DNS1123_LABEL_MAX, LABEL_VALUE_RULE, dns1123_label_problem, label_value_problem
from ..spec.models import CONFIG_NAMESPACE, StackConfigError
from ..spec.secrets import encrypted_paths
from ..spec.stack_edit import shared_values_problem
from ..spec.stack_files import STACKS_DIR, stack_path
from ..spec.user_files import UnreadableFile, read_user_text
from . import argument_types
from .exit_codes import BAD_INPUT, NO, OK
from .import_tfjob import PULUMI_STACK_NAME, STACK_NAME_RULE
from .paths import shown

DIAGNOSE_DESCRIPTION = f"""\
The running experiment's bottleneck, from what the cluster measures over --seconds: each task's CPU
every {SAMPLE_EVERY_S:g} s (metrics.k8s.io, or the kubelet summary where that API is absent, as top reads
them; with the summary, each pod's network too), each server's allocatable CPU where Nodes may be read,
and for tfk8s's own trainer the chief's step time. One of hot-ps, ps-bound, worker-bound, idle or none,
with its evidence, how sure and why, and the next experiment as a diff of the stack file.

exit codes:
  0    the finding is shown (and with --write, the new stack written)
  1    nothing to diagnose: the experiment ended before a sample, or no task had a CPU figure
       (the reason is on stderr); the experiment failed during the window; --write with a
       finding that changes no stack key (nothing written)
  2    the stack or the kubeconfig cannot be read, the API server does not answer or refuses,
       --seconds or --write is refused, the new stack file exists or cannot be written, or
       the rules proposed a stack that plan refuses (nothing written)
  130  interrupted (Ctrl-C)
"""


def add_diagnose_parser(
    commands: Any, stack_help: str, cluster_arguments: Callable[[argparse.ArgumentParser], None]
) -> None:
    """`diagnose`'s arguments, under main.py's subcommands."""
    diagnose = commands.add_parser(
        "diagnose",
        help="name the running experiment's bottleneck (hot-ps, ps-bound, worker-bound, idle, none) from what the "
        "cluster measures, and the next experiment as a stack diff",
        description=DIAGNOSE_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    diagnose.add_argument("stack", metavar="STACK", help=stack_help)
    diagnose.add_argument(
        "--seconds",
        type=window_seconds,
        default=DEFAULT_SECONDS,
        metavar="N",
        help=f"how long to sample (default: {DEFAULT_SECONDS:g}, three refreshes of metrics-server; at least "
        f"{MIN_SECONDS:g}, at most {MAX_SECONDS:g})",
    )
    diagnose.add_argument("--json", action="store_true", help="print one JSON object")
    cluster_arguments(diagnose)
    diagnose.add_argument(
        "--write",
        type=new_stack_name,
        metavar="NEW-STACK",
        help="write the next experiment as Pulumi.<NEW-STACK>.yaml beside the stack file (never over an existing "
        "file), ready for `pulumi up --stack NEW-STACK`",
    )


def window_seconds(text: str) -> float:
    seconds = argument_types.positive_seconds(text)
    if seconds < MIN_SECONDS:
        raise argparse.ArgumentTypeError(
            f"must be at least {MIN_SECONDS:g} seconds (got {argument_types.shown_value(text)}): metrics-server "
            "refreshes a pod's CPU every 15 s, so a shorter window may hold one reading from before it began"
        )
    if seconds > MAX_SECONDS:
        raise argparse.ArgumentTypeError(
            f"must be at most {MAX_SECONDS:g} seconds, an hour (got {argument_types.shown_value(text)})"
        )
    return seconds


def new_stack_name(text: str) -> str:
    if "/" in text or text.endswith((".yaml", ".yml")):
        # A stack file's name or path, as the stack itself may be given: --write takes the name alone.
        name = re.sub(r"\.ya?ml\Z", "", Path(text).name).removeprefix("Pulumi.")
        give = f": give {argument_types.shown_value(name)}" if PULUMI_STACK_NAME.match(name) else ""
        raise argparse.ArgumentTypeError(
            f"{argument_types.shown_value(text)} is a file's name; --write takes the new stack's name and writes "
            f"Pulumi.<NEW-STACK>.yaml beside the stack file{give}"
        )
    if not PULUMI_STACK_NAME.match(text):
        raise argparse.ArgumentTypeError(f"{argument_types.shown_value(text)} is not a stack name: {STACK_NAME_RULE}")
    return text


def diagnose_command(experiment: Experiment, args: argparse.Namespace) -> int:
    """Sample, diagnose, print; with --write, write the new stack. The exit code (DIAGNOSE_DESCRIPTION)."""
    from ..live.cluster_access import with_cluster
    from ..live.diagnosis import diagnose_running, nothing_measured

    source = stack_path(args.stack)
    try:
        old_text = read_user_text(source)
    except UnreadableFile as why:
        print(f"stack '{experiment.stack}': {why}", file=sys.stderr)
        return BAD_INPUT
    target = source.parent / f"Pulumi.{args.write}.yaml" if args.write else None
    if target is not None:
        # Before the window: a name or a file that would be refused is said now, not after it.
        refusal = _write_refusal(args.write, old_text, target)
        if refusal is not None:
            print(f"diagnose: {refusal}; nothing sampled, nothing written", file=sys.stderr)
            return BAD_INPUT

    def action(api: Any) -> int:
        diagnosis = diagnose_running(api, experiment, old_text, args.seconds, args.write or f"{experiment.stack}-next")
        if diagnosis.finding is None:
            print(f"stack '{experiment.stack}': {nothing_measured(diagnosis.sampled)}", file=sys.stderr)
            return NO
        return _show(experiment, args, diagnosis, old_text, target)

    return with_cluster(experiment, args.kubeconfig, args.context, action, stack_given=args.stack)


def _show(
    experiment: Experiment, args: argparse.Namespace, diagnosis: Diagnosis, old_text: str, target: Optional[Path]
) -> int:
    from ..live.diagnose_view import NextStack, diagnose_json, diagnose_text, written_text

    sampled, finding, next_stack, code = diagnosis.sampled, diagnosis.finding, diagnosis.next_stack, OK
    assert finding is not None  # the caller said why there is none
    if next_stack.refused is not None:
        print(f"stack '{experiment.stack}': {next_stack.refused}; nothing written", file=sys.stderr)
        code = BAD_INPUT
    elif target is not None:
        if diagnosis.new_text is None:
            print("diagnose: the finding changes no stack key; nothing written", file=sys.stderr)
            code = NO
        else:
            code = _write(target, diagnosis.new_text)
            if code == OK:
                next_stack = NextStack(next_stack.stack, next_stack.diff, written=shown(target))
    if args.json:
        print(json.dumps(diagnose_json(sampled, finding, next_stack), indent=2))
    else:
        print(diagnose_text(experiment, sampled, finding, next_stack, args.stack))
        if next_stack.written:
            in_stacks = target is not None and target.parent.resolve() == STACKS_DIR.resolve()
            secrets = bool(encrypted_paths(stack_values(old_text)))
            print(f"\n{written_text(next_stack.written, next_stack.stack, in_stacks, experiment.stack, secrets)}")
    if code == OK and sampled.window.ended == "Failed":
        return NO  # as top: the experiment failed
    return code


def _write_refusal(name: str, old_text: str, target: Path) -> Optional[str]:
    """Why --write NAME cannot be written, or None: an existing file, or a name tfk8s refuses."""
    if target.exists():
        return f"{shown(target)} exists: diagnose never writes over a stack file; give --write another name"
    problem = _name_problem(name, stack_values(old_text))
    if problem is not None:
        return f"--write {argument_types.shown_value(name)}: {problem}"
    shared = shared_values_problem(old_text)
    if shared is not None:
        return f"--write {name}: {shared}"
    try:
        # The stack plan accepted, under the new name: what it refuses now, the name alone made it (a
        # label value; the namespace tf-<stack>, where the stack names none).
        check_stack(name, old_text)
    except StackConfigError as error:
        return f"--write {name}: {error}"
    return None


def _name_problem(name: str, values: dict[str, Any]) -> Optional[str]:
    """Why `name` cannot name the new stack, in --write's words: the name is a label of its objects, and,
    where the stack sets no namespace, its namespace's (tf-<name>)."""
    if label_value_problem(name):
        return f"the new stack's name is a label of its objects: {LABEL_VALUE_RULE}"
    cluster = values.get(f"{CONFIG_NAMESPACE}:cluster")
    names_its_namespace = isinstance(cluster, dict) and cluster.get("namespace") is not None
    if not names_its_namespace and dns1123_label_problem(f"tf-{name}"):
        return (
            f"the new stack's namespace would be 'tf-{name}' (the stack sets no {CONFIG_NAMESPACE}:cluster.namespace), "
            f"which is no DNS label: give a name of at most {DNS1123_LABEL_MAX - len('tf-')} lower-case letters, "
            "digits and '-', ending in a letter or digit"
        )
    return None


def _write(target: Path, text: str) -> int:
    if target.exists():  # written meanwhile
        print(
            f"diagnose: {shown(target)} exists: diagnose never writes over a stack file; nothing written",
            file=sys.stderr,
        )
        return BAD_INPUT
    try:
        write_text_atomic(target, text)
    except OSError as error:
        print(f"diagnose: cannot write {shown(target)}: {error.strerror or error}; nothing written", file=sys.stderr)
        return BAD_INPUT
    return OK
