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
      },
      "cluster": {                        what the stack gives its tasks (the bottleneck rules' shape,
                                          and the CPU `make report` allows each local task)
        "pools": {"servers": ["srv-00", ...]},   tfk8s:nodePools: each pool's nodes ([]: a selector)
        "ratio": "1:10" or null,          tfk8s:cluster.ratio
        "ps": {"replicas": 5 or null, "pool": ..., "cpu": "2", "cpuCores": 2.0},
                                          replicas as written (null: the ratio gives them); cpu as
                                          the stack holds it (its default where left out)
        "workers": {"pool": ..., "cpu": "1", "cpuCores": 1.0, "gpus": 0},
        "chief": {"cpu": "1", "cpuCores": 1.0}
      }
    }
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Collection, Mapping, Optional

from .shared_names import EVALUATOR as EVALUATOR_ROLE
from .shared_names import TRAINER_ROLES, WORKER, role_of, task_name

# The top-level keys, in the order the export writes them.
STACK = "stack"
PLACEMENT = "placement"
PS = "ps"
WORKERS = "workers"
EVALUATOR = "evaluator"
TRAINER = "trainer"
PROGRAM = "program"
CLUSTER = "cluster"
# The program's keys, in the order the export writes them.
ARGV = "argv"
ENV = "env"
SOURCE = "source"
DONE = "done"
# The cluster's keys, in the order the export writes them.
POOLS = "pools"
RATIO = "ratio"
CHIEF = "chief"
REPLICAS = "replicas"
POOL = "pool"
CPU = "cpu"
CPU_CORES = "cpuCores"
GPUS = "gpus"
# An env value a Secret holds: its name and key (trainer.local takes the value from the shell).
SECRET = "secret"
SECRET_KEY = "key"
# The roles whose command the export gives, in its order: the trainer's roles (held equal to
# components/spec/task_roles.py by tests/plan/test_task_roles.py).
PROGRAM_ROLES = tuple(role.name for role in TRAINER_ROLES)
DONE_BY_CHIEF = "chief"
DONE_BY_WORKERS = "workers"
# TFJob's rule without a chief: worker 0 acts as chief and its exit 0 is the experiment's.
DONE_BY_WORKER_0 = "worker-0"


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
                f"{where}.{DONE} should be '{DONE_BY_CHIEF}', '{DONE_BY_WORKERS}', '{DONE_BY_WORKER_0}' or "
                f"{{'{DONE_BY_WORKERS}': N}} (got {_shown(done)})"
            )
        return cls(dict(argv), dict(env), source, done)

    @property
    def has_chief(self) -> bool:
        return bool(self.done == DONE_BY_CHIEF)

    def workers_to_finish(self, replicas: int) -> int:
        if self.done == DONE_BY_WORKER_0:
            return 1
        return int(self.done[DONE_BY_WORKERS]) if isinstance(self.done, dict) else replicas

    def workers_decide(self, exited_0: Collection[str], replicas: int) -> bool:
        """Whether the workers that exited 0 (task names: `worker-0`) end an experiment without a chief."""
        if self.done == DONE_BY_WORKER_0:
            return task_name(WORKER, 0) in exited_0
        return len(exited_0) >= self.workers_to_finish(replicas)

    def argv_of(self, role: str) -> Optional[list[str]]:
        """A role's command and args; where the export has none for it, those of the role it borrows
        them from (the evaluator: the workers'), else None (the image's entrypoint)."""
        row = role_of(role)
        lender = row.borrows_command_of if row is not None else None
        if role not in self.argv and lender is not None:
            return self.argv.get(lender)
        return self.argv.get(role)

    def evaluator_argv(self) -> Optional[list[str]]:
        """roles.evaluator's command and args; the workers' where the export has none for it."""
        return self.argv_of(EVALUATOR_ROLE)


@dataclass(frozen=True)
class ClusterExport:
    """What the stack gives its tasks: its pools, the PS count as written, each role's pool and CPU
    request (as the stack holds it, and in cores)."""

    pools: dict[str, list[str]]
    ratio: Optional[str]
    ps_replicas: Optional[int]  # as written; None where cluster.ratio gives the count
    ps_pool: Optional[str]
    ps_cpu: str
    ps_cpu_cores: float
    worker_pool: str
    worker_cpu: str
    worker_cpu_cores: float
    worker_gpus: int
    chief_cpu: str
    chief_cpu_cores: float

    def to_json(self) -> dict[str, Any]:
        return {
            POOLS: self.pools,
            RATIO: self.ratio,
            PS: {REPLICAS: self.ps_replicas, POOL: self.ps_pool, CPU: self.ps_cpu, CPU_CORES: self.ps_cpu_cores},
            WORKERS: {
                POOL: self.worker_pool,
                CPU: self.worker_cpu,
                CPU_CORES: self.worker_cpu_cores,
                GPUS: self.worker_gpus,
            },
            CHIEF: {CPU: self.chief_cpu, CPU_CORES: self.chief_cpu_cores},
        }

    @classmethod
    def from_json(cls, data: Any) -> "ClusterExport":
        _require_mapping(data, CLUSTER)
        pools = data.get(POOLS)
        _require_mapping(pools, f"{CLUSTER}.{POOLS}")
        for name, nodes in pools.items():
            if not (isinstance(nodes, list) and all(isinstance(node, str) for node in nodes)):
                raise ExportError(f"{CLUSTER}.{POOLS}.{name} should be a list of node names (got {_shown(nodes)})")
        ratio = _optional_text(data.get(RATIO), f"{CLUSTER}.{RATIO}")
        roles = {}
        for role in (PS, WORKERS, CHIEF):
            roles[role] = data.get(role)
            _require_mapping(roles[role], f"{CLUSTER}.{role}")
        ps, workers, chief = roles[PS], roles[WORKERS], roles[CHIEF]
        replicas = ps.get(REPLICAS)
        if replicas is not None:
            _require_count(replicas, f"{CLUSTER}.{PS}.{REPLICAS}")
        _require_count(workers.get(GPUS), f"{CLUSTER}.{WORKERS}.{GPUS}")
        worker_pool = _optional_text(workers.get(POOL), f"{CLUSTER}.{WORKERS}.{POOL}")
        if worker_pool is None:
            raise ExportError(f"{CLUSTER}.{WORKERS}.{POOL} should be a pool's name (got null)")
        return cls(
            pools={name: list(nodes) for name, nodes in pools.items()},
            ratio=ratio,
            ps_replicas=replicas,
            ps_pool=_optional_text(ps.get(POOL), f"{CLUSTER}.{PS}.{POOL}"),
            ps_cpu=_cpu_text(ps, f"{CLUSTER}.{PS}"),
            ps_cpu_cores=_cpu_cores(ps, f"{CLUSTER}.{PS}"),
            worker_pool=worker_pool,
            worker_cpu=_cpu_text(workers, f"{CLUSTER}.{WORKERS}"),
            worker_cpu_cores=_cpu_cores(workers, f"{CLUSTER}.{WORKERS}"),
            worker_gpus=workers[GPUS],
            chief_cpu=_cpu_text(chief, f"{CLUSTER}.{CHIEF}"),
            chief_cpu_cores=_cpu_cores(chief, f"{CLUSTER}.{CHIEF}"),
        )


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
    cluster: Optional[ClusterExport] = None  # None: an export written without it (by hand, or before it)

    def to_json(self) -> dict[str, Any]:
        return {
            STACK: self.stack,
            PLACEMENT: self.placement,
            PS: self.ps,
            WORKERS: self.workers,
            EVALUATOR: self.evaluator,
            TRAINER: self.trainer,
            **({PROGRAM: self.program.to_json()} if self.program is not None else {}),
            **({CLUSTER: self.cluster.to_json()} if self.cluster is not None else {}),
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
        cluster = data.get(CLUSTER)
        return cls(
            data[STACK],
            data[PLACEMENT],
            data[PS],
            data[WORKERS],
            dict(data[TRAINER]),
            ProgramExport.from_json(program) if program is not None else None,
            evaluator,
            ClusterExport.from_json(cluster) if cluster is not None else None,
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


def _optional_text(value: Any, where: str) -> Optional[str]:
    if value is not None and not isinstance(value, str):
        raise ExportError(f"{where} should be text or null (got {_shown(value)})")
    return value


def _cpu_text(role: Mapping[str, Any], where: str) -> str:
    cpu = role.get(CPU)
    if not isinstance(cpu, str):
        raise ExportError(f"{where}.{CPU} should be a CPU quantity as text, such as '500m' (got {_shown(cpu)})")
    return cpu


def _cpu_cores(role: Mapping[str, Any], where: str) -> float:
    cores = role.get(CPU_CORES)
    if isinstance(cores, bool) or not isinstance(cores, (int, float)) or cores <= 0:
        raise ExportError(f"{where}.{CPU_CORES} should be a number of cores above 0 (got {_shown(cores)})")
    return float(cores)


def _is_done(done: Any) -> bool:
    if done in (DONE_BY_CHIEF, DONE_BY_WORKERS, DONE_BY_WORKER_0):
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
