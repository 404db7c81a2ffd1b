"""The figures `diagnose` judges, and the thresholds that judge them (pure, standard library only).

From what was measured (components/insight/measurements.py): each task's CPU against what it may use, each
role's mean, each server's load and who takes it, the network, the tasks that straggle. Every
threshold of the bottleneck rules is here, with its reason; docs/observing.md ("diagnose: the
bottleneck") says the same for users, and bottleneck.py re-exports them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional, Sequence

from ..spec import task_roles
from .measurements import Measurements, TaskSample
from .ps_balance import IDLE, PsCpu, balance, floor_met, ratio

# A task is busy at or past 80% of what it may use (its CPU limit, else its request). tfk8s sets
# requests only, so "what it may use" is what the scheduler guarantees; the windowed averages of
# metrics-server (and any sampler) smooth a task that is pegged while it works and stalls between
# steps to well under 100%, and 80% is the usual target of a CPU autoscaler for the same reason.
BUSY = 0.8
# IDLE (a task below a quarter of what it may use) and the hot-PS rule's HOT_PS_IMBALANCE and
# HOT_PS_MIN_CORES are in components/insight/ps_balance.py, the one rule `top` applies too.
# A server is saturated when its tasks together use 85% of its allocatable cores: the kubelet, the
# container runtime and (on a small machine) the control plane take the rest, so tasks that want
# more than the server has read 85-95%, rarely 100%.
SATURATED_SHARE = 0.85
# A worker straggles when it uses under half the CPU of the other workers while they work (they are
# at least at IDLE); or when it was not running for the whole window.
STRAGGLER_SHARE = 0.5
# Colocated PS are worth servers of their own (placement: isolated) when they use at least a tenth
# of a saturated server: below that they hardly compete with the workers, and a pool split would
# take servers from the workers for little.
ISOLATE_MIN_PS_SHARE = 0.1
# The network a server is assumed to have: 1 Gbit/s (125 MB/s), the common floor of servers' network
# cards; at or past 70% of it, TCP over a shared link has little left. A task's figure counts what
# it exchanges with tasks on its own server too, so a server's sum is an upper bound of its link's.
NETWORK_LINK_BYTES_PER_S = 125_000_000
NETWORK_NEAR_SHARE = 0.7


def load_of(role: str) -> task_roles.Load:
    """What a task's CPU counts as, by its role's row: the PS' `variables`, the workers' `steps`, or
    the others' (the chief's `coordination`, the evaluator's `evaluation`)."""
    return task_roles.role_of(role).load


def mean(values: Sequence[float]) -> Optional[float]:
    return round(sum(values) / len(values), 3) if values else None


@dataclass(frozen=True)
class TaskFigure:
    task: str
    role: str
    node: Optional[str]
    cores: Optional[float]  # mean CPU over the window; None where never measured
    allowed: Optional[float]  # its CPU limit, else its request
    utilisation: Optional[float]  # cores / allowed (tfk8s sets requests only, so it may pass 1.0)
    running: bool
    network_bytes_per_s: Optional[float]


@dataclass(frozen=True)
class RoleFigures:
    tasks: int  # the role's tasks, measured or not
    measured: int  # those with a utilisation
    mean_utilisation: Optional[float]
    mean_cores: Optional[float]


@dataclass(frozen=True)
class ServerLoad:
    """A server whose cores are known, and who uses them: PS, workers, and the others (chief, evaluator)."""

    server: str
    cores: float
    ps_cores: float
    worker_cores: float
    other_cores: float

    @property
    def used_share(self) -> float:
        return ratio(self.ps_cores + self.worker_cores + self.other_cores, self.cores)

    @property
    def ps_share(self) -> float:
        return ratio(self.ps_cores, self.cores)

    @property
    def worker_share(self) -> float:
        return ratio(self.worker_cores, self.cores)

    @property
    def saturated(self) -> bool:
        return self.used_share >= SATURATED_SHARE

    def to_json(self) -> dict[str, object]:
        return {
            "server": self.server,
            "cores": self.cores,
            "used_share": self.used_share,
            "ps_share": self.ps_share,
            "worker_share": self.worker_share,
            "other_share": ratio(self.other_cores, self.cores),
        }


@dataclass(frozen=True)
class Figures:
    tasks: tuple[TaskFigure, ...]
    ps: RoleFigures
    workers: RoleFigures
    ps_imbalance: Optional[float]  # the busiest PS's cores over the PS mean; None with fewer than 2 measured
    # Every PS at or past HOT_PS_IMBALANCE times the PS mean, where the busiest is past the floor.
    hot_ps: tuple[str, ...]
    busiest_ps: Optional[TaskFigure]
    servers: tuple[ServerLoad, ...]  # servers whose cores are known and which ran a measured task
    stragglers: tuple[str, ...]
    not_running: tuple[str, ...]
    unmeasured: tuple[str, ...]  # PS and workers without a CPU figure

    @property
    def saturated(self) -> tuple[ServerLoad, ...]:
        return tuple(server for server in self.servers if server.saturated)

    def of_role(self, role: str) -> tuple[TaskFigure, ...]:
        return tuple(task for task in self.tasks if task.role == role)

    @property
    def network_known(self) -> bool:
        return any(task.network_bytes_per_s is not None for task in self.tasks)

    def network_by_server(self) -> dict[str, float]:
        traffic: dict[str, float] = {}
        for task in self.tasks:
            if task.node is not None and task.network_bytes_per_s is not None:
                traffic[task.node] = traffic.get(task.node, 0.0) + task.network_bytes_per_s
        return traffic

    def servers_near_link(self) -> tuple[str, ...]:
        near = NETWORK_NEAR_SHARE * NETWORK_LINK_BYTES_PER_S
        return tuple(server for server, moved in sorted(self.network_by_server().items()) if moved >= near)


def ps_cpu(task: TaskFigure) -> PsCpu:
    """A PS's figure as the hot-PS rule reads it."""
    return PsCpu(task.task, task.cores, task.utilisation)


def hot_ps_floor_met(busiest: Optional[TaskFigure]) -> bool:
    """The busiest PS is busy enough that its lead over the others is not idle noise."""
    return floor_met(None if busiest is None else ps_cpu(busiest))


def _server_loads(measured: Measurements) -> tuple[ServerLoad, ...]:
    loads = []
    for server in measured.servers:
        if server.cores is None or server.cores <= 0:
            continue
        on_it = [t for t in measured.tasks if t.node == server.server and t.cpu_cores is not None]
        if not on_it:
            continue
        cores: dict[str, float] = {}
        for task in on_it:
            cores[load_of(task.role)] = cores.get(load_of(task.role), 0.0) + (task.cpu_cores or 0.0)
        ps, workers = cores.pop("variables", 0.0), cores.pop("steps", 0.0)
        loads.append(ServerLoad(server.server, server.cores, ps, workers, sum(cores.values())))
    return tuple(loads)


def _task_figure(sample: TaskSample, saturated: dict[str, ServerLoad]) -> TaskFigure:
    cores = sample.cpu_cores
    utilisation = None
    if cores is not None and sample.cpu_allowed:
        utilisation = ratio(cores, sample.cpu_allowed)
    elif cores is not None and sample.node in saturated:
        # No request and no limit: on a saturated server it is as busy as its server.
        utilisation = saturated[sample.node].used_share
    return TaskFigure(
        sample.task,
        sample.role,
        sample.node,
        None if cores is None else round(cores, 3),
        sample.cpu_allowed,
        utilisation,
        sample.running,
        sample.network_bytes_per_s,
    )


def _role(tasks: Sequence[TaskFigure]) -> RoleFigures:
    measured = [t for t in tasks if t.utilisation is not None]
    return RoleFigures(
        len(tasks),
        len(measured),
        mean([t.utilisation for t in measured if t.utilisation is not None]),
        mean([t.cores for t in tasks if t.cores is not None]),
    )


def _stragglers(workers: Sequence[TaskFigure]) -> tuple[str, ...]:
    found = []
    measured = [w for w in workers if w.cores is not None]
    for worker in workers:
        if not worker.running:
            found.append(worker.task)
            continue
        others = [w for w in measured if w is not worker]
        if worker.cores is None or not others:
            continue
        others_utilisation = mean([w.utilisation for w in others if w.utilisation is not None])
        others_cores = mean([w.cores for w in others if w.cores is not None]) or 0.0
        if (
            others_utilisation is not None
            and others_utilisation >= IDLE
            and worker.cores < STRAGGLER_SHARE * others_cores
        ):
            found.append(worker.task)
    return tuple(found)


def figures(measured: Measurements) -> Figures:
    """The figures of the window."""
    servers = _server_loads(measured)
    saturated = {server.server: server for server in servers if server.saturated}
    tasks = tuple(_task_figure(sample, saturated) for sample in measured.tasks)
    ps = [t for t in tasks if load_of(t.role) == "variables"]
    workers = [t for t in tasks if load_of(t.role) == "steps"]
    judged = balance([ps_cpu(t) for t in ps])
    busiest = None if judged.busiest is None else {t.task: t for t in ps}[judged.busiest.task]
    return Figures(
        tasks=tasks,
        ps=_role(ps),
        workers=_role(workers),
        ps_imbalance=judged.imbalance,
        hot_ps=judged.hot,
        busiest_ps=busiest,
        servers=servers,
        stragglers=_stragglers(workers),
        not_running=tuple(t.task for t in tasks if not t.running),
        unmeasured=tuple(t.task for t in ps + workers if t.cores is None),
    )


def sample_count(measured: Measurements) -> int:
    """How many sample indexes the tasks' series span (a task measured fewer times has a shorter one)."""
    return max((len(task.cpu_series) for task in measured.tasks), default=0)


def at_sample(measured: Measurements, index: int) -> Measurements:
    """The window cut down to one sample: each task's figure at `index`, where it has one."""
    tasks = tuple(dataclasses.replace(task, cpu_series=task.cpu_series[index : index + 1]) for task in measured.tasks)
    return dataclasses.replace(measured, tasks=tasks, samples=1)
