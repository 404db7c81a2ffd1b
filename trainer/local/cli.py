"""`python -m trainer.local`'s command line: flags, the stack it scales down, the run, the exit code."""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import signal
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, Optional, TextIO

from ..settings import TrainerSettings, to_camel
from . import __doc__ as DESCRIPTION
from .cluster import LocalCluster
from .drills import FaultDrills, parse_kill
from .errors import LaunchError
from .program import LocalProgram, ProgramExport
from .stacks import read_stack, scale_to_machine

if TYPE_CHECKING:
    from types import FrameType


def add_setting_flags(parser: argparse.ArgumentParser, skip: tuple[str, ...] = ()) -> None:
    """A flag per trainer setting (`--embedding-rows`, ...), but those named in `skip`."""
    group = parser.add_argument_group("trainer settings (tfk8s:trainer; defaults as in the schema)")
    for spec in dataclasses.fields(TrainerSettings):
        if spec.name in skip:
            continue
        flag = "--" + spec.name.replace("_", "-")
        help_text = spec.metadata.get("help", "")
        choices = spec.metadata.get("choices") or None
        if isinstance(spec.default, bool):
            group.add_argument(flag, type=_parse_bool, metavar="true|false", help=help_text, dest=spec.name)
        elif isinstance(spec.default, tuple):
            group.add_argument(flag, type=_parse_ints, metavar="N,N", help=help_text, dest=spec.name)
        else:
            group.add_argument(flag, type=type(spec.default), choices=choices, help=help_text, dest=spec.name)


def settings_given(args: argparse.Namespace, skip: tuple[str, ...] = ()) -> dict[str, Any]:
    """The trainer settings given as flags (add_setting_flags with the same `skip`), in stack-file keys."""
    return {
        to_camel(spec.name): getattr(args, spec.name)
        for spec in dataclasses.fields(TrainerSettings)
        if spec.name not in skip and getattr(args, spec.name) is not None
    }


def _parse_bool(text: str) -> bool:
    if text.lower() in ("true", "1", "yes"):
        return True
    if text.lower() in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def _parse_ints(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in text.split(",") if part)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated whole numbers, got {text!r}") from None


@dataclasses.dataclass(frozen=True)
class Run:
    """What to run: the settings, PS, workers, the evaluator (0 or 1), and the stack's own program if any."""

    settings: TrainerSettings
    ps: int
    workers: int
    evaluator: int = 0
    program: Optional[ProgramExport] = None


def resolve(args: argparse.Namespace, out: TextIO = sys.stderr) -> Run:
    """The run the flags and the stack ask for (the flags win)."""
    base: dict[str, Any] = {}
    ps, workers, evaluator = 2, 2, 0
    program = None
    if args.stack:
        experiment = read_stack(args.stack)
        scale = scale_to_machine(experiment.ps, experiment.workers)
        base, ps, workers, evaluator = experiment.trainer, scale.ps, scale.workers, experiment.evaluator
        print(
            f"stack {experiment.stack} on this machine: {'; '.join(scale.notes) or 'as sized'}; placement "
            f"{experiment.placement} is not reproduced (every task runs here)",
            file=out,
            flush=True,
        )
        if experiment.program is not None:
            program = experiment.program
            given = settings_given(args)
            if given:
                raise LaunchError(
                    f"stack {experiment.stack} runs its own program (tfk8s:program): the trainer "
                    f"settings {', '.join(sorted(given))} do not apply"
                )
    settings = TrainerSettings.from_config({**base, **settings_given(args)})
    return Run(
        settings,
        args.ps if args.ps is not None else ps,
        args.workers if args.workers is not None else workers,
        args.evaluator if args.evaluator is not None else evaluator,
        program,
    )


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m trainer.local", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--ps", type=int, help="parameter servers (default 2, or from --stack)")
    parser.add_argument("--workers", type=int, help="workers (default 2, or from --stack)")
    parser.add_argument(
        "--evaluator",
        type=int,
        choices=(0, 1),
        help="1: run TensorFlow's side-car evaluator on the chief's checkpoints (default 0, or from --stack)",
    )
    parser.add_argument("--stack", help="take trainer settings and the PS:worker ratio from this stack")
    parser.add_argument("--workdir", help="checkpoints, metrics and logs (kept; default: a temporary folder, removed)")
    parser.add_argument("--progress-every", type=int, default=50, help="steps between progress lines")
    parser.add_argument(
        "--kill",
        type=parse_kill,
        action="append",
        default=[],
        metavar="TASK@STEP",
        help="fault drill: SIGKILL a task (ps-N, worker-N, chief-0) once the chief reports this step; "
        "a killed chief is started again on the same checkpoints",
    )
    parser.add_argument("--no-restart", action="store_true", help="do not restart workers that die")
    add_setting_flags(parser)
    args = parser.parse_args(argv)

    try:
        run = resolve(args)
    except Exception as error:  # SettingsError, LaunchError, YAML errors: one clear line
        print(f"trainer.local: {error}", file=sys.stderr)
        return 2
    settings, ps, workers, program = run.settings, run.ps, run.workers, run.program
    if run.evaluator and program is None and not settings.checkpoint_every:
        print("trainer.local: the evaluator evaluates the chief's checkpoints: checkpointEvery is 0", file=sys.stderr)
        return 2
    if workers < 1 or ps < (0 if program is not None else 1):
        # A team's program may run workers only; tfk8s's trainer is a parameter-server trainer.
        least = "--workers must be at least 1" if program is not None else "--ps and --workers must be at least 1"
        print(f"trainer.local: {least}", file=sys.stderr)
        return 2

    workdir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="tfk8s-local-"))
    workdir.mkdir(parents=True, exist_ok=True)
    cluster: LocalCluster | LocalProgram
    if program is not None:
        cluster = LocalProgram(program, ps, workers, workdir, evaluator=run.evaluator)
    else:
        cluster = LocalCluster(
            settings,
            ps,
            workers,
            workdir,
            progress_every=args.progress_every,
            restart_workers=not args.no_restart,
            drills=FaultDrills(dict(args.kill)),
            evaluator=run.evaluator,
        )

    def on_term(signum: int, frame: Optional[FrameType]) -> NoReturn:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_term)
    # SIGUSR1: the chief finishes where it stands (checkpoint, summary, exit 0), as in a pod.
    previous_usr1 = signal.signal(
        signal.SIGUSR1, lambda signum, frame: cluster.finish() if isinstance(cluster, LocalCluster) else None
    )
    code = 0
    try:
        summary = cluster.run()
        print(json.dumps(summary), flush=True)
    except KeyboardInterrupt:
        print("trainer.local: interrupted; stopping every task", file=sys.stderr)
        code = 130
    except LaunchError as error:
        print(f"trainer.local: {error}", file=sys.stderr)
        print(json.dumps({"error": str(error)}), flush=True)
        code = 1
    finally:
        cluster.stop()
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGUSR1, previous_usr1)
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    return code
