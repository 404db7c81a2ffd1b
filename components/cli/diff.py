"""Two experiments side by side: their config, their plans and their objects (no Pulumi here).

`python -m components diff <stackA> <stackB>` prints what changes from A to B.
Objects are matched by kind and name, which say what they are for (a role's
tasks: a replicated Job of the JobSet, or a StatefulSet per server; the shared
ConfigMaps), not by namespace:
the stack name and namespace are written as placeholders before comparing, so
two stacks of the same shape differ only where their experiments do.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Optional

from pydantic import BaseModel

from ..objects.experiment_objects import experiment_objects
from ..plan import labels as L
from ..plan.experiment import Experiment
from ..plan.planner import Plan, compress_names
from ..spec.models import CONFIG_NAMESPACE
from ..spec.task_roles import PLACED_ROLES, parse_task_name
from ..spec.trainer_contract import TrainerSettings

STACK_PLACEHOLDER = "<stack>"
REPLICATED_JOB = "replicatedJob"  # a task group of the JobSet, in the diff's list of objects
NAMESPACE_PLACEHOLDER = "<namespace>"
# The tasks' hash, of what they take from the ConfigMaps (the namespace in TF_CONFIG's addresses too);
# the collector's hashes its code alone, the same for every stack.
HASH_ANNOTATIONS = (L.TRAINER_HASH_ANNOTATION,)


@dataclass(frozen=True)
class ConfigChange:
    key: str  # in the stack files' own key names: tfk8s:cluster.placement, tfk8s:nodePools[servers].nodes
    before: Any
    after: Any

    def __str__(self) -> str:
        if self.before is None:
            return f"{self.key}: added {_shown(self.after)}"
        if self.after is None:
            return f"{self.key}: removed (was {_shown(self.before)})"
        if isinstance(self.before, list) and isinstance(self.after, list) and _all_text(self.before + self.after):
            added = [x for x in self.after if x not in self.before]
            removed = [x for x in self.before if x not in self.after]
            parts = ([f"+{_runs(added)}"] if added else []) + ([f"-{_runs(removed)}"] if removed else [])
            if parts:
                return f"{self.key}: {' '.join(parts)}"
        return f"{self.key}: {_shown(self.before)} -> {_shown(self.after)}"


@dataclass(frozen=True)
class ServerChange:
    server: str  # a server, or "(scheduler) <pool>" for the tasks the scheduler places
    before: Optional[dict[str, int]]  # {"ps": n, "worker": m}; None where A has no such row
    after: Optional[dict[str, int]]
    tasks_before: list[str] = field(default_factory=list)  # the tasks pinned there, where the plan pins tasks
    tasks_after: list[str] = field(default_factory=list)

    @property
    def change(self) -> str:
        if self.before is None:
            return "appears"
        if self.after is None:
            return "disappears"
        same = self.before == self.after and self.tasks_before == self.tasks_after
        return "same" if same else "changes"


@dataclass
class ExperimentDiff:
    a: str
    b: str
    config: list[ConfigChange] = field(default_factory=list)
    servers: list[ServerChange] = field(default_factory=list)
    moved: dict[str, tuple[str, str]] = field(default_factory=dict)  # task -> (where in A, where in B)
    objects: dict[str, dict[str, list[str]]] = field(default_factory=dict)  # kind -> added/removed/changed

    @property
    def same(self) -> bool:
        return not self.config and not self.moved and not self.objects and all(s.change == "same" for s in self.servers)

    def to_json(self) -> dict[str, Any]:
        return {
            "a": self.a,
            "b": self.b,
            "same": self.same,
            "config": [{"key": c.key, "before": c.before, "after": c.after} for c in self.config],
            "plan": {
                "servers": [
                    {
                        "server": s.server,
                        "before": s.before,
                        "after": s.after,
                        "tasksBefore": s.tasks_before,
                        "tasksAfter": s.tasks_after,
                        "change": s.change,
                    }
                    for s in self.servers
                    if s.change != "same"
                ],
                "moved": {task: {"before": a, "after": b} for task, (a, b) in self.moved.items()},
            },
            "objects": self.objects,
        }


def diff_experiments(a: Experiment, b: Experiment) -> ExperimentDiff:
    result = ExperimentDiff(a.stack, b.stack)
    result.config = config_changes(stack_values(a), stack_values(b))
    result.servers, result.moved = plan_changes(a.plan, b.plan)
    result.objects = object_changes(a, b)
    return result


# -- config ----------------------------------------------------------------------


def stack_values(experiment: Experiment) -> dict[str, Any]:
    """The parsed stack in the stack files' key names, one per key StackConfig has (a key left out is
    absent, and the trainer's where a team's program runs instead); pools keyed by name, defaults
    filled in."""
    config = experiment.config
    values = {}
    for key, name in type(config).file_keys().items():
        value = getattr(config, name)
        if value is None or (name == "trainer" and config.program is not None):
            continue
        values[f"{CONFIG_NAMESPACE}:{key}"] = _section_values(value)
    return values


def _section_values(value: Any) -> Any:
    """A key's value as the stack file writes it, defaults filled in; named items (the node pools)
    keyed by name, so that an item is matched by its name and not by its place in the list."""
    if isinstance(value, tuple):
        if all(isinstance(item, BaseModel) and "name" in type(item).model_fields for item in value):
            return {item.name: item.model_dump(by_alias=True, exclude={"name"}, exclude_none=True) for item in value}
        return [_section_values(item) for item in value]
    if isinstance(value, TrainerSettings):
        return value.to_config()
    if isinstance(value, BaseModel):
        return value.model_dump(by_alias=True, exclude_none=True)
    return value


def config_changes(before: Mapping[str, Any], after: Mapping[str, Any], prefix: str = "") -> list[ConfigChange]:
    changes: list[ConfigChange] = []
    for key in list(before) + [k for k in after if k not in before]:
        path = _key_path(prefix, key)
        old, new = before.get(key), after.get(key)
        if old == new:
            continue
        if isinstance(old, Mapping) and isinstance(new, Mapping):
            changes.extend(config_changes(old, new, path))
        else:
            changes.append(ConfigChange(path, _plain(old), _plain(new)))
    return changes


def _key_path(prefix: str, key: str) -> str:
    if not prefix:
        return key
    if prefix.endswith(":nodePools"):
        return f"{prefix}[{key}]"
    return f"{prefix}.{key}"


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _all_text(values: list) -> bool:
    return all(isinstance(v, str) for v in values)


def _runs(names: list[str]) -> str:
    """'srv-05, srv-06, srv-07' -> 'srv-05 … srv-07' (3 or more in a row, in list order)."""
    return names[0] if len(names) == 1 else (f"{names[0]} … {names[-1]}" if len(names) >= 3 else ", ".join(names))


def _shown(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(", ", ": "))


# -- plan -------------------------------------------------------------------------


def _where(plan: Plan) -> dict[str, str]:
    """Task -> its server, or '(scheduler) <pool>' when the scheduler places it."""
    return {p.task.name: p.server if p.server is not None else f"(scheduler) {p.pool}" for p in plan.placements}


def _rows(plan: Plan) -> dict[str, tuple[dict[str, int], list[str]]]:
    """Each server's counts and pinned tasks, then the tasks the scheduler places, per pool."""
    tasks_on = plan.by_server()
    rows = {share.server: (_placed_counts(share.count), tasks_on.get(share.server, [])) for share in plan.shares}
    for pool, tasks in plan.unpinned().items():
        roles = Counter(parse_task_name(task)[0] for task in tasks)
        rows[f"(scheduler) {pool}"] = (_placed_counts(roles.__getitem__), tasks)
    return rows


def _placed_counts(count: Callable[[str], int]) -> dict[str, int]:
    """The tasks of each role the plan places, by its count of them."""
    return {role: count(role) for role in PLACED_ROLES}


def plan_changes(a: Plan, b: Plan) -> tuple[list[ServerChange], dict[str, tuple[str, str]]]:
    rows_a, rows_b = _rows(a), _rows(b)
    servers = [
        ServerChange(
            server,
            rows_a[server][0] if server in rows_a else None,
            rows_b[server][0] if server in rows_b else None,
            rows_a.get(server, ({}, []))[1],
            rows_b.get(server, ({}, []))[1],
        )
        for server in list(rows_a) + [server for server in rows_b if server not in rows_a]
    ]
    where_a, where_b = _where(a), _where(b)
    moved = {
        task: (where_a[task], where_b[task]) for task in where_a if task in where_b and where_a[task] != where_b[task]
    }
    return servers, moved


# -- objects ------------------------------------------------------------------------


def _normalized(experiment: Experiment) -> dict[tuple[str, str], Any]:
    """(kind, name) -> manifest with the stack and namespace replaced by placeholders."""
    stack, namespace = experiment.stack, experiment.namespace
    whole = {
        stack: STACK_PLACEHOLDER,
        namespace: NAMESPACE_PLACEHOLDER,
        # Node label keys name the experiment.
        L.node_pool_key(stack): L.node_pool_key(STACK_PLACEHOLDER),
        L.node_role_key(stack): L.node_role_key(STACK_PLACEHOLDER),
        L.node_server_key(stack): L.node_server_key(STACK_PLACEHOLDER),
        # So does the pod label the spread constraints select a role's pods by.
        L.task_role_key(stack): L.task_role_key(STACK_PLACEHOLDER),
    }
    # Task addresses (TF_CONFIG's cluster) name the namespace inside a longer string, and in a team's
    # namespace every object's name, and so every address, starts with the stack's.
    parts = [(f".{namespace}.svc", f".{NAMESPACE_PLACEHOLDER}.svc")]
    if experiment.names.prefix:
        parts.append((experiment.names.prefix, f"{STACK_PLACEHOLDER}-"))
    manifests = [(obj.kind, _replace_text(obj.manifest, whole, parts)) for obj in experiment_objects(experiment)]
    # A pod template's hash annotations hash what its pods take from the ConfigMaps, TF_CONFIG's
    # addresses (and so the namespace) included: the same hash of the ConfigMaps without the stack and
    # namespace stands for them, so that two stacks alike but for their names are the same experiment
    # and a change that rolls the tasks still shows in their workloads.
    config_maps = sorted(json.dumps(manifest, sort_keys=True) for kind, manifest in manifests if kind == "ConfigMap")
    stands_for = f"<sha256 of the ConfigMaps: {hashlib.sha256(chr(0).join(config_maps).encode()).hexdigest()}>"
    objects = {}
    for kind, manifest in manifests:
        manifest = _with_hashes_as(manifest, stands_for)
        key = (kind, "" if kind == "Namespace" else manifest["metadata"]["name"])
        if kind == "JobSet":
            # Each replicated Job is a role on a server, compared on its own like a workload.
            replicated = manifest["spec"].pop("replicatedJobs")
            manifest["spec"]["replicatedJobs"] = [job["name"] for job in replicated]
            objects.update({(REPLICATED_JOB, job["name"]): job for job in replicated})
        objects[key] = manifest
    return objects


def _with_hashes_as(value: Any, stands_for: str) -> Any:
    if isinstance(value, Mapping):
        return {k: stands_for if k in HASH_ANNOTATIONS else _with_hashes_as(v, stands_for) for k, v in value.items()}
    if isinstance(value, list):
        return [_with_hashes_as(v, stands_for) for v in value]
    return value


def _replace_text(value: Any, whole: Mapping[str, str], parts: list[tuple[str, str]]) -> Any:
    if isinstance(value, str):
        if value in whole:
            return whole[value]
        for old, new in parts:
            value = value.replace(old, new)
        return value
    if isinstance(value, Mapping):
        return {_replace_text(k, whole, parts): _replace_text(v, whole, parts) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace_text(v, whole, parts) for v in value]
    return value


def object_changes(a: Experiment, b: Experiment) -> dict[str, dict[str, list[str]]]:
    objects_a, objects_b = _normalized(a), _normalized(b)
    by_kind: dict[str, dict[str, list[str]]] = {}

    def note(kind: str, change: str, name: str) -> None:
        by_kind.setdefault(kind, {"added": [], "removed": [], "changed": []})[change].append(name or kind)

    for key, manifest in objects_a.items():
        if key not in objects_b:
            note(key[0], "removed", key[1])
        elif objects_b[key] != manifest:
            note(key[0], "changed", key[1])
    for key in objects_b:
        if key not in objects_a:
            note(key[0], "added", key[1])
    return by_kind


# -- text ------------------------------------------------------------------------------


def diff_text(result: ExperimentDiff) -> str:
    if result.same:
        return f"{result.a} and {result.b}: the same experiment"
    lines = [f"--- {result.a}", f"+++ {result.b}", "", "config:"]
    lines += [f"  {change}" for change in result.config] or ["  (same)"]
    lines += ["", "plan (PS / workers per server):"]
    changed = [s for s in result.servers if s.change != "same"]
    rows = [("SERVER", result.a, result.b, "")]
    for server in changed:
        rows.append(
            (
                server.server,
                _tasks(server.before, server.tasks_before),
                _tasks(server.after, server.tasks_after),
                server.change,
            )
        )
    if changed:
        widths = [max(len(row[i]) for row in rows) for i in range(3)]
        lines += [
            "  " + "  ".join(c.ljust(w) for c, w in zip(row[:3], widths)) + f"  {row[3]}".rstrip() for row in rows
        ]
    else:
        lines.append("  (same)")
    if result.moved:
        lines.append(f"  {len(result.moved)} tasks move: " + _moves(result.moved))
    lines += [
        "",
        "objects (matched by kind and name: a replicatedJob is a role, a StatefulSet a role on a server; stack and "
        "namespace aside):",
    ]
    if not result.objects:
        lines.append("  (same)")
    for kind, changes in result.objects.items():
        parts = [f"{change} {len(names)} ({_names(names)})" for change, names in changes.items() if names]
        lines.append(f"  {kind}: " + "; ".join(parts))
    return "\n".join(lines)


def _tasks(counts: Optional[dict[str, int]], names: list[str]) -> str:
    if counts is None:
        return "-"
    text = f"{counts['ps']} PS / {counts['worker']} workers"
    return f"{text}: {compress_names(names)}" if names else text


def _names(names: Iterable[str], limit: int = 6) -> str:
    names = list(names)
    shown = ", ".join(names[:limit])
    return shown + (f", … {len(names) - limit} more" if len(names) > limit else "")


def _moves(moved: Mapping[str, tuple[str, str]], limit: int = 4) -> str:
    items = [f"{task} {a} -> {b}" for task, (a, b) in moved.items()]
    return "; ".join(items[:limit]) + (f"; … {len(items) - limit} more" if len(items) > limit else "")
