"""`python -m components import-tfjob FILE --stack NAME`: a Kubeflow TFJob to a stack file.

Exit 0 when the stack is written (with a line on stderr for each field not carried, and each
value to fill in); 1 when nothing usable came of FILE (it cannot be read as text, is not YAML or
not a TFJob, has a field tfk8s cannot carry, or makes a stack tfk8s refuses), --stack is no stack
name, or the stack file exists and --force is not given; 2 when a flag's value is not of its form
(main.py: argparse) or the stack file cannot be written (the table of components/cli/exit_codes.py).
Nothing is written unless it exits 0: an existing stack file is kept as it was.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from ..migrate.carry import ImportedStack, ImportOptions, carry
from ..migrate.stack_yaml import stack_yaml
from ..migrate.tfjob import NotImportable, TFJob, read_tfjob
from ..spec.atomic_files import write_text_atomic
from ..spec.loading import load_stack_config
from ..spec.models import StackConfigError
from ..spec.stack_files import STACKS_DIR
from ..spec.task_roles import CHIEF, EVALUATOR, PS, WORKER
from ..spec.user_files import UnreadableFile, decode_user_text, read_user_text
from .argument_types import shown_value
from .exit_codes import BAD_INPUT, NO, OK
from .paths import shown

# Pulumi's rule for a stack's name (tfk8s's own, a label value, is checked with the stack).
# \Z, not $: `$` also matches before a final line break, and a name is matched from its start only
# (re.match, here and in diagnose --write): 'x\n' is no stack name, never a file Pulumi.x\n.yaml.
PULUMI_STACK_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,100}\Z")
STACK_NAME_RULE = "letters, digits, '-', '_' and '.', at most 100"


def import_tfjob(file: str, options: ImportOptions, force: bool = False) -> int:
    """Write the stack of the TFJob in `file` (- for stdin) into stacks/; the exit code."""
    target = STACKS_DIR / f"Pulumi.{options.stack}.yaml"
    source = "stdin" if file == "-" else file or "''"
    try:
        # import-tfjob's contract since it exists: 0 written, 1 nothing usable came of the input.
        if not PULUMI_STACK_NAME.match(options.stack):
            raise NotImportable(
                f"--stack {shown_value(options.stack)} is not a valid Pulumi stack name: {STACK_NAME_RULE}"
            )
        try:
            text = _read(file)
        except UnreadableFile as why:
            raise NotImportable(f"{source}: {why}") from None
        if target.exists() and not force:
            raise NotImportable(f"{shown(target)} exists; give --force to overwrite it, or another --stack")
        job = read_tfjob(text, source)
        try:
            imported = carry(job, options)
        except NotImportable as error:
            # A TFJob's field is named with its file; a flag (--image) is named alone.
            raise NotImportable(str(error) if str(error).startswith("--") else f"{source}: {error}") from None
        _check(options.stack, imported, f"{source}: TFJob '{job.name}'")
    except NotImportable as error:
        return _nothing_written(str(error), NO)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        # Whole or not at all: a full disk or a killed process leaves an existing stack file as it was.
        write_text_atomic(target, stack_yaml(imported.values, _header(job, file), imported.comments))
    except OSError as error:
        return _nothing_written(f"cannot write {shown(target)}: {error.strerror or error}", BAD_INPUT)
    for note in imported.notes:
        print(note, file=sys.stderr)
    for field in imported.fill_in:
        print(f"fill in: {field}", file=sys.stderr)
    print(
        f"wrote {shown(target)} from TFJob '{job.name}': {_shape(imported)}"
        + (f"; {_count(imported.notes, 'field')} not carried (listed above)" if imported.notes else "")
        + (f"; fill in {_count(imported.fill_in, 'value')} before `pulumi up`" if imported.fill_in else "")
    )
    return OK


def _nothing_written(why: str, code: int) -> int:
    print(f"import-tfjob: {why}; nothing written", file=sys.stderr)
    return code


def _read(file: str) -> str:
    """The manifest's text: UTF-8, whole, or UnreadableFile saying why not."""
    if not file:
        # Path('') is the current folder: say what was given instead.
        raise UnreadableFile("FILE is empty: name a TFJob manifest, or - for stdin")
    if file != "-":
        return read_user_text(Path(file))
    stdin = getattr(sys.stdin, "buffer", None)
    # The bytes where there are any: the terminal's encoding is not the file's.
    return decode_user_text(stdin.read()) if stdin is not None else sys.stdin.read()


def _check(stack: str, imported: ImportedStack, job: str) -> None:
    """The stack as tfk8s will load it, the values to fill in standing in for valid ones; a refusal
    names the TFJob field or the flag each bad value came from."""
    try:
        load_stack_config(stack, imported.as_checked())
    except StackConfigError as error:
        listed = error.problems or (str(error),)
        # Two stack values from one field (backoffLimit: the PS' restarts and the chief's) are one problem.
        problems = dict.fromkeys(_named_by_source(problem, imported) for problem in listed)
        lines = "\n".join(StackConfigError.LISTED + problem for problem in problems)
        raise NotImportable(f"{job} makes a stack tfk8s refuses:\n{lines}") from None


def _named_by_source(problem: str, imported: ImportedStack) -> str:
    """`problem` (`tfk8s:cluster.ps.memory: must be ...`) naming where the value came from instead:
    `spec.tfReplicaSpecs.PS.template.spec.containers[0].resources.limits.memory: must be ...`, or the
    flag (`--nodes: must be a node name ... (got 'Bad_Node')`)."""
    path, _, said = problem.partition(": ")
    # A problem listed under the section may begin with the key it is about (`command is empty`).
    first_word = said.split(" ", 1)[0]
    source = imported.source_of(path) or imported.source_of(f"{path}.{first_word}")
    if source is None:
        return problem  # a value import-tfjob chose itself, named as the stack file it writes would hold it
    return f"{source}: {said}"


def _header(job: TFJob, file: str) -> str:
    namespace = f" (namespace {job.namespace})" if job.namespace else ""
    return (
        f"Imported from TFJob '{job.name}'{namespace} by `python -m components import-tfjob "
        f"{'-' if file == '-' else Path(file).name}`.\n"
        "The same program and image, with TF_CONFIG as TFJob gave it; what did not carry over was\n"
        "listed when it was imported (docs/migrating-from-tfjob.md says why)."
    )


def _count(items: list, noun: str) -> str:
    return f"{len(items)} {noun}{'' if len(items) == 1 else 's'}"


def _shape(imported: ImportedStack) -> str:
    cluster, program = imported.values["tfk8s:cluster"], imported.values["tfk8s:program"]
    roles = ["chief"] if CHIEF.stack_key in cluster else []
    roles += [f"{cluster[PS.stack_key]['replicas']} PS", f"{cluster[WORKER.stack_key]['replicas']} workers"]
    roles += ["an evaluator"] if EVALUATOR.stack_key in cluster else []
    return f"{', '.join(roles)}, done: {program['done']}"
