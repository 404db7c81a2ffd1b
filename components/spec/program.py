"""`tfk8s:program`: the team's own TensorFlow program, as a stack file writes it.

What every task of a program gets (components/objects/program_container.py): TF_CONFIG,
as TensorFlow's cluster resolvers read it, and the variables the seed's
`run.sh` took as arguments. Both are in the task's environment, so the
kubelet expands `$(NAME)` in `command` and `args`, as in any pod; a
reference to a name it would not know is refused here, because the kubelet
would pass it on as literal text.
"""

from __future__ import annotations

import re
from typing import Any, Collection, Literal, Mapping, Optional, Union

from pydantic import Field, field_validator, model_validator

from .kubernetes_limits import CONFIG_MAP_KEY_PATTERN
from .model_base import StackModel as _Model
from .quantities import DnsSubdomain
from .roles import RoleName
from .shown_values import shown
from .strict_yaml import described
from .task_roles import ROLE_OF
from .trainer_contract import references, stack_export

# The variables every task of a program gets, in this order (later ones may refer to earlier).
PROGRAM_VARIABLES = ("JOB_NAME", "TASK_INDEX", "PS_REPLICAS", "WORKER_REPLICAS", "PS_HOSTS", "WORKER_HOSTS")
TF_CONFIG = "TF_CONFIG"
# What a program's `env` may not set: tfk8s's own variables, which tell the task who it is.
RESERVED_PREFIX = "TFK8S_"
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Paths tfk8s mounts itself in a program's container.
PROGRAM_MOUNT = "/program"
# A task's scratch folder: with a read-only root filesystem, the one folder tfk8s's trainer writes.
SCRATCH_MOUNT = "/scratch"
OWN_MOUNTS = (PROGRAM_MOUNT, SCRATCH_MOUNT, "/tmp", "/etc/tfk8s", "/opt/tfk8s")


def env_reference_problems(env: Any, secret_names: Collection[str] = ()) -> list[tuple[str, str]]:
    """`$(NAME)` in a plain `env` value that the kubelet can never expand: a name neither tfk8s's nor
    env's, the value's own, or one env sets after it (the kubelet expands a value from the variables
    set before it, and tfk8s sets env in the stack file's order, spec/env_order.py). Each problem as
    (the env name, what is wrong). A value set with --secret reaches the task through a Secret, which
    the kubelet never expands, so it is neither read nor named."""
    if not isinstance(env, Mapping):
        return []
    problems = []
    order = [name for name in env if isinstance(name, str)]
    names = set(order)
    for position, name in enumerate(order):
        value = env[name]
        if not isinstance(value, str) or name in secret_names:
            continue
        for reference in references(value):
            if reference == name:
                why = f"$({name}) refers to {name} itself, so it would hold '$({name})' as text"
            elif reference in order[position + 1 :]:
                why = (
                    f"$({reference}) refers to {reference}, which env sets after {name}: the kubelet expands "
                    f"only the variables set before a value, so {name} would hold '$({reference})' as text; put "
                    f"{reference} above {name} in env"
                )
            elif reference in names or reference in (*PROGRAM_VARIABLES, TF_CONFIG):
                continue
            elif reference.startswith(RESERVED_PREFIX):
                continue  # tfk8s's own, from the task's ConfigMap
            else:
                why = (
                    f"$({reference}) names no variable a task has, so {name} would hold it as text; use one of "
                    f"{', '.join(PROGRAM_VARIABLES)}, {TF_CONFIG} or a name of env (write $$ for a literal $)"
                )
            problems.append((name, why))
            break
    return problems


class WorkersDone(_Model):
    """`done: {workers: N}`: no chief task (worker 0 acts as chief) and the experiment succeeds once
    N workers have exited 0, the others stopped where they stand (TF1 between-graph with stragglers)."""

    workers: int = Field(ge=1, strict=True, description="how many workers must exit 0")


Done = Union[Literal["chief", "workers", "worker-0"], WorkersDone]


class SecretRef(_Model):
    """An environment value read from a Secret in the experiment's namespace."""

    secret: DnsSubdomain = Field(description="a Secret in the experiment's namespace")
    key: str = Field(pattern=CONFIG_MAP_KEY_PATTERN, description="the key of that Secret")


EnvValue = Union[str, SecretRef]


class ClaimVolume(_Model):
    claim: DnsSubdomain = Field(description="an existing PersistentVolumeClaim in the experiment's namespace")
    mount_path: str = Field(min_length=2, description="where every task sees it (an absolute path)")
    read_only: bool = Field(default=False, strict=True, description="mounted read-only")

    @field_validator("mount_path")
    @classmethod
    def _absolute(cls, path: str) -> str:
        # Clear of what tfk8s mounts itself: combination_rules.mount_problems, which knows the stack's mounts.
        if not path.startswith("/") or ":" in path:
            raise ValueError(f"mountPath '{path}' must be an absolute path without ':'")
        _refuse_padded("mountPath", path)
        return path


def _refuse_padded(key: str, path: str) -> None:
    """A path with a space or a line break at either end (a slip of pasting): Kubernetes takes it and
    makes a folder named with it, which the program never looks in."""
    if path != path.strip():
        raise ValueError(
            f"{key} {shown(path)} starts or ends with a space or a line break, which would be part of the "
            f"folder's name; write {shown(path.strip())}"
        )


def command_problem(command: Optional[tuple[str, ...]]) -> Optional[str]:
    """Why `command` can run nothing, or None: an empty list is dropped by Kubernetes (the image's
    entrypoint would run instead), and an empty first word names no program."""
    if command is None:
        return None
    if not command:
        return (
            "command is empty ([]), which runs nothing: list the program and its arguments, or leave command "
            "out to run the image's entrypoint"
        )
    if not command[0].strip():
        return "command[0] is empty: the first word is the program every task runs"
    return None


class RoleCommand(_Model):
    command: Optional[tuple[str, ...]] = Field(default=None, description="this role's command instead of the program's")
    args: Optional[tuple[str, ...]] = Field(default=None, description="this role's args instead of the program's")

    @model_validator(mode="after")
    def _says_something(self) -> "RoleCommand":
        if self.command is None and self.args is None:
            raise ValueError("gives neither command nor args: give this role's own, or drop it to run the program's")
        problem = command_problem(self.command)
        if problem:
            raise ValueError(problem)
        return self


class ProgramSpec(_Model):
    source: Optional[str] = Field(
        default=None,
        min_length=1,
        description="a folder of the project, shipped to every task and mounted read-only at /program, "
        "the working directory (default: nothing shipped; the program is in the image)",
    )
    command: Optional[tuple[str, ...]] = Field(
        default=None, description="what every task runs (default: the image's entrypoint); $(NAME) is expanded"
    )
    args: Optional[tuple[str, ...]] = Field(default=None, description="its arguments; $(NAME) is expanded")
    working_dir: Optional[str] = Field(
        default=None,
        description="the working directory of every task, an absolute path in the image (default: /program "
        "with source, else the image's)",
    )
    env: dict[str, EnvValue] = Field(
        default_factory=dict,
        description="more environment: NAME: value, or NAME: {secret: <Secret>, key: <key>}",
    )
    volumes: tuple[ClaimVolume, ...] = Field(default=(), description="existing PersistentVolumeClaims to mount")
    done: Done = Field(
        default="chief",
        description="chief: a chief coordinates (TF2 ParameterServerStrategy) and the experiment succeeds when it "
        "exits 0; workers: no chief task, worker 0 acts as chief (TF1 between-graph) and the experiment "
        "succeeds when every worker has exited 0; {workers: N}: the same, once N workers have; worker-0: the "
        "same, once worker 0 has (TFJob's rule without a chief), the other workers stopped where they stand",
    )
    roles: dict[RoleName, RoleCommand] = Field(
        default_factory=dict,
        description="per role (chief, ps, worker, evaluator): command and args instead of the program's (the "
        "evaluator's default: the workers')",
    )

    @property
    def has_chief(self) -> bool:
        """Whether a chief task runs: not with `done: workers`, `worker-0` or `{workers: N}`, where worker 0 is
        the chief."""
        return self.done == stack_export.DONE_BY_CHIEF

    @property
    def worker_0_decides(self) -> bool:
        """`done: worker-0`: worker 0's exit 0 is the experiment's, whatever the other workers do."""
        return self.done == stack_export.DONE_BY_WORKER_0

    def workers_to_finish(self, replicas: int) -> int:
        """How many of `replicas` workers must exit 0 for the experiment to succeed (without a chief);
        with `done: worker-0`, one: worker 0."""
        if self.worker_0_decides:
            return 1
        return self.done.workers if isinstance(self.done, WorkersDone) else replicas

    @property
    def done_text(self) -> str:
        """`done` as a stack file writes it."""
        return f"{{workers: {self.done.workers}}}" if isinstance(self.done, WorkersDone) else self.done

    @field_validator("done", mode="before")
    @classmethod
    def _done_shape(cls, done: Any) -> Any:
        """One clear message for each wrong shape, before pydantic would try each form of the union."""
        allowed = "chief, workers, worker-0 or {workers: N} (N workers exit 0)"
        if isinstance(done, dict):
            if set(done) != {"workers"}:
                keys = ", ".join(sorted(map(str, done)))
                raise ValueError(f"a mapping takes the one key workers ({{workers: N}}); got {keys}")
            count = done["workers"]
            if isinstance(count, bool) or not isinstance(count, int) or count < 1:
                # As YAML writes it, not as Python does.
                given = str(count).lower() if isinstance(count, bool) else repr(count)
                given = described(count) if isinstance(count, (dict, list)) else given
                raise ValueError(f"workers: how many workers must exit 0, a whole number ≥ 1 (got {given})")
        elif not isinstance(done, WorkersDone) and done not in (
            stack_export.DONE_BY_CHIEF,
            stack_export.DONE_BY_WORKERS,
            stack_export.DONE_BY_WORKER_0,
        ):
            raise ValueError(f"must be {allowed}")
        return done

    @field_validator("working_dir")
    @classmethod
    def _absolute(cls, path: Optional[str]) -> Optional[str]:
        if path is not None and not path.startswith("/"):
            raise ValueError(f"workingDir '{path}' must be an absolute path")
        if path is not None:
            _refuse_padded("workingDir", path)
        return path

    @field_validator("env")
    @classmethod
    def _env_names(cls, env: dict[str, EnvValue]) -> dict[str, EnvValue]:
        for name in env:
            if not ENV_NAME.fullmatch(name):  # the whole name: 'A\n' is none
                raise ValueError(f"env name {shown(name)} must be letters, digits and '_', not starting with a digit")
            if name == TF_CONFIG or name in PROGRAM_VARIABLES or name.startswith(RESERVED_PREFIX):
                raise ValueError(f"env name {shown(name)} is set by tfk8s on every task; pick another name")
        return env

    @model_validator(mode="after")
    def _consistent(self) -> "ProgramSpec":
        problem = command_problem(self.command)
        if problem:
            raise ValueError(problem)
        for role in ("", *sorted(self.roles)):
            command, args = self.command_of(role) if role else (self.command, self.args)
            if args == () and command is None:
                where = f"roles.{role}.args" if role else "args"
                raise ValueError(
                    f"{where} is empty ([]) with no command: Kubernetes drops an empty list, so the image's own "
                    "arguments would run; give a command, or leave args out"
                )
        if not self.has_chief and "chief" in self.roles:
            raise ValueError(
                f"roles.chief: with done: {self.done_text} there is no chief task (worker 0 acts as chief)"
            )
        known = set(PROGRAM_VARIABLES) | set(self.env)
        for where, words in self._commands():
            for word in words:
                unknown = [name for name in references(word) if name not in known]
                if unknown:
                    raise ValueError(
                        f"{where}: $({unknown[0]}) names no variable a task has; use one of "
                        f"{', '.join(PROGRAM_VARIABLES)} or a name of env (write $$ for a literal $)"
                    )
        paths = [volume.mount_path for volume in self.volumes]
        twice = next((path for path in paths if paths.count(path) > 1), None)
        if twice:
            raise ValueError(f"volumes: two claims are mounted at {twice}; give each its own mountPath")
        return self

    def _commands(self) -> list[tuple[str, tuple[str, ...]]]:
        found = [("command", self.command or ()), ("args", self.args or ())]
        for role, command in sorted(self.roles.items()):
            found += [(f"roles.{role}.command", command.command or ()), (f"roles.{role}.args", command.args or ())]
        return found

    def command_of(self, role: str) -> tuple[Optional[tuple[str, ...]], Optional[tuple[str, ...]]]:
        """A role's command and args: its own where given, else the program's (the evaluator's, else
        the workers', as TFJob users write one program whose evaluator runs the worker's command)."""
        own = next((command for name, command in self.roles.items() if name == role), None)
        row = ROLE_OF.get(role)
        borrowed = row.borrows_command_of if row is not None else None
        command, args = self.command_of(borrowed) if borrowed else (self.command, self.args)
        if own is not None and own.command is not None:
            command = own.command
        if own is not None and own.args is not None:
            args = own.args
        return command, args
