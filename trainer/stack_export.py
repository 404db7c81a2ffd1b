"""The JSON of `python -m components export STACK`: a stack's experiment, validated by the project's
one schema, for tools without the Pulumi program's environment (`python -m trainer.local --stack`).

The shape is public (docs/commands.md) and written here once: components/cli/main.py builds a
`StackExport` and prints `export_text(...)` (through components/spec/trainer_contract.py), and
trainer/local reads it back with `StackExport.from_json` / `ProgramExport.from_json`, which refuse a
malformed export with `ExportError`, naming the key. Standard library only: the trainer's
environment has no pydantic, and components/ imports nothing else of it.

    {
      "stack": "scene1-case3",            the stack's name
      "placement": "colocated",           tfk8s:cluster.placement
      "ps": 2, "workers": 20,             the task counts (ps after a ratio is applied)
      "evaluator": 0,                     the side-car evaluator's replicas (0 or 1)
      "trainer": {...},                   tfk8s:trainer, defaults filled in
      "program": {                        only with tfk8s:program
        "argv": {"chief": [...], "ps": [...], "worker": [...], "evaluator": [...]},
                                          each role's command and args; null: the image's entrypoint
        "env": {"NAME": "value", "TOKEN": {"secret": "...", "key": "TOKEN"}},
        "source": "/abs/path" or null,    the program's folder
        "done": "chief" | "workers" | {"workers": N}
      }
    }
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Mapping, Optional

from .cluster import ROLES
from .shared_names import EVALUATOR as EVALUATOR_ROLE

# The top-level keys, in the order the export writes them.
STACK = "stack"
PLACEMENT = "placement"
PS = "ps"
WORKERS = "workers"
EVALUATOR = "evaluator"
TRAINER = "trainer"
PROGRAM = "program"
# The program's keys, in the order the export writes them.
ARGV = "argv"
ENV = "env"
SOURCE = "source"
DONE = "done"
# An env value a Secret holds: its name and key (trainer.local takes the value from the shell).
SECRET = "secret"
SECRET_KEY = "key"
# The roles whose command the export gives, in its order: the trainer's roles (held equal to
# components/plan/task_roles.py by tests/plan/test_task_roles.py).
PROGRAM_ROLES = (*ROLES, EVALUATOR_ROLE)
DONE_BY_CHIEF = "chief"
DONE_BY_WORKERS = "workers"


class ExportError(ValueError):
    """Not the JSON `python -m components export` writes; the message names the key and what it holds."""


@dataclass(frozen=True)
class ProgramExport:
    """A stack's own program (tfk8s:program) as trainer.local runs it."""

    argv: dict[str, Optional[list[str]]]  # role -> command + args; None: the image's entrypoint
    env: dict[str, Any]  # a value, or {"secret": ..., "key": ...}
    source: Optional[str]  # the folder's absolute path
    done: Any  # chief | workers | {"workers": N}

    def to_json(self) -> dict[str, Any]:
        return {ARGV: self.argv, ENV: self.env, SOURCE: self.source, DONE: self.done}

    @classmethod
    def from_json(cls, data: Any) -> "ProgramExport":
        where = PROGRAM
        _require_mapping(data, where)
        argv = data.get(ARGV)
        _require_mapping(argv, f"{where}.{ARGV}")
        for role, words in argv.items():
            if words is not None and not (isinstance(words, list) and all(isinstance(w, str) for w in words)):
                raise ExportError(f"{where}.{ARGV}.{role} should be a list of words or null (got {_shown(words)})")
        env = data.get(ENV)
        _require_mapping(env, f"{where}.{ENV}")
        source = data.get(SOURCE)
        if source is not None and not isinstance(source, str):
            raise ExportError(f"{where}.{SOURCE} should be a folder's path or null (got {_shown(source)})")
        done = data.get(DONE)
        if not _is_done(done):
            raise ExportError(
                f"{where}.{DONE} should be '{DONE_BY_CHIEF}', '{DONE_BY_WORKERS}' or "
                f"{{'{DONE_BY_WORKERS}': N}} (got {_shown(done)})"
            )
        return cls(dict(argv), dict(env), source, done)

    @property
    def has_chief(self) -> bool:
        return bool(self.done == DONE_BY_CHIEF)

    def workers_to_finish(self, replicas: int) -> int:
        return int(self.done[DONE_BY_WORKERS]) if isinstance(self.done, dict) else replicas

    def evaluator_argv(self) -> Optional[list[str]]:
        """roles.evaluator's command and args; the workers' where the export has none for it."""
        return self.argv["evaluator"] if "evaluator" in self.argv else self.argv["worker"]


@dataclass(frozen=True)
class StackExport:
    """The whole export: the fields trainer.local's StackExperiment holds, the program typed."""

    stack: str
    placement: str
    ps: int
    workers: int
    trainer: dict[str, Any]
    program: Optional[ProgramExport] = None  # the team's own program (tfk8s:program)
    evaluator: int = 0  # 1: TensorFlow's side-car evaluator (tfk8s:cluster.evaluator.replicas)

    def to_json(self) -> dict[str, Any]:
        return {
            STACK: self.stack,
            PLACEMENT: self.placement,
            PS: self.ps,
            WORKERS: self.workers,
            EVALUATOR: self.evaluator,
            TRAINER: self.trainer,
            **({PROGRAM: self.program.to_json()} if self.program is not None else {}),
        }

    @classmethod
    def from_json(cls, data: Any) -> "StackExport":
        """An export as `python -m components export` prints it, or a hand-written one: keys it does
        not know are left out, and `evaluator` may be its replicas, the evaluator's own object (its
        `replicas`), null or absent (none)."""
        _require_mapping(data, "the export")
        missing = [key for key in (STACK, PLACEMENT, PS, WORKERS, TRAINER) if key not in data]
        if missing:
            raise ExportError(
                f"the export has no {', '.join(repr(key) for key in missing)}; `python -m components export "
                "STACK` writes every one"
            )
        for key in (STACK, PLACEMENT):
            if not isinstance(data[key], str):
                raise ExportError(f"{key} should be text (got {_shown(data[key])})")
        for key in (PS, WORKERS):
            _require_count(data[key], key)
        _require_mapping(data[TRAINER], TRAINER)
        evaluator = data.get(EVALUATOR)
        if isinstance(evaluator, Mapping):
            evaluator = evaluator.get("replicas", 1)
        evaluator = evaluator or 0
        _require_count(evaluator, EVALUATOR)
        program = data.get(PROGRAM)
        return cls(
            data[STACK],
            data[PLACEMENT],
            data[PS],
            data[WORKERS],
            dict(data[TRAINER]),
            ProgramExport.from_json(program) if program is not None else None,
            evaluator,
        )


def secret_env_value(secret: str, key: str) -> dict[str, str]:
    """An env value a Secret holds, as the export writes it (trainer.local takes it from the shell)."""
    return {SECRET: secret, SECRET_KEY: key}


def export_text(export: StackExport) -> str:
    """What `python -m components export` prints (without the final newline)."""
    return json.dumps(export.to_json(), indent=2)


def read_export_text(text: str) -> StackExport:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ExportError(f"the export is not JSON: {error}") from None
    return StackExport.from_json(data)


def _require_mapping(value: Any, where: str) -> None:
    if not isinstance(value, dict):
        raise ExportError(f"{where} should be a JSON object (got {_shown(value)})")


def _require_count(value: Any, where: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ExportError(f"{where} should be a whole number, 0 or more (got {_shown(value)})")


def _is_done(done: Any) -> bool:
    if done in (DONE_BY_CHIEF, DONE_BY_WORKERS):
        return True
    return (
        isinstance(done, dict)
        and list(done) == [DONE_BY_WORKERS]
        and isinstance(done[DONE_BY_WORKERS], int)
        and not isinstance(done[DONE_BY_WORKERS], bool)
    )


# A value echoed back in full would bury the message.
SHOWN_CHARS = 60


def _shown(value: Any) -> str:
    shown = repr(value) if isinstance(value, str) else json.dumps(value, default=repr)
    return shown if len(shown) <= SHOWN_CHARS else f"{shown[:SHOWN_CHARS]}..."
