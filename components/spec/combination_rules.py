"""Keys that each hold a valid value alone but cannot work together: settings of a task the stack
does not run, a `done` rule its workload cannot honour, a program volume on a path tfk8s mounts
itself. Each message names both keys and what to do."""

from __future__ import annotations

import posixpath
from typing import Optional

from .logs import CODE_MOUNT
from .models import CONFIG_NAMESPACE, StackConfig
from .program import OWN_MOUNTS, PROGRAM_MOUNT
from .roles import CHECKPOINT_MOUNT

ns = CONFIG_NAMESPACE

# The fields of a role that say how its tasks run (all but replicas, which says whether there are any).
PS_TASK_FIELDS = {"pool": "pool", "cpu": "cpu", "memory": "memory", "tolerations": "tolerations", "fail_on": "failOn"}
# How a stack runs no PS (the two read the same once loaded).
NO_PS = "ps.replicas: 0, or ps and ratio left out"
EVALUATOR_TASK_FIELDS = {"pool": "pool", "cpu": "cpu", "memory": "memory", "tolerations": "tolerations"}


def combination_checks(config: StackConfig) -> list[str]:
    return [
        *absent_task_problems(config),
        *done_problems(config),
        *mount_problems(config),
        *gpu_image_problems(config),
    ]


def absent_task_problems(config: StackConfig) -> list[str]:
    """Settings of PS or an evaluator that the stack does not run: they would be dropped unseen."""
    cluster, program = config.cluster, config.program
    errors = []
    if cluster.ps_count == 0:
        given = [key for field, key in PS_TASK_FIELDS.items() if field in cluster.ps.model_fields_set]
        for key in given:
            errors.append(
                f"{ns}:cluster.ps.{key} is set, but {ns}:cluster.ps runs no PS ({NO_PS}); drop "
                f"ps.{key}, or give PS (ps.replicas or ratio)"
            )
        if program is not None and "ps" in program.roles:
            errors.append(
                f"{ns}:program.roles.ps is set, but {ns}:cluster.ps runs no PS ({NO_PS}); drop "
                "roles.ps, or give PS (ps.replicas or ratio)"
            )
    evaluator = cluster.evaluator
    if evaluator is not None and evaluator.replicas == 0:
        for field, key in EVALUATOR_TASK_FIELDS.items():
            if field in evaluator.model_fields_set:
                errors.append(
                    f"{ns}:cluster.evaluator.{key} is set, but {ns}:cluster.evaluator.replicas is 0 (no "
                    f"evaluator runs); drop evaluator.{key}, or leave replicas out (1) to run the evaluator"
                )
    if program is not None and "evaluator" in program.roles and cluster.evaluator_count == 0:
        why = "replicas: 0" if evaluator is not None else "not set"
        errors.append(
            f"{ns}:program.roles.evaluator is set, but {ns}:cluster.evaluator is {why}, so no evaluator runs; "
            "drop roles.evaluator, or add cluster.evaluator: {} to run one"
        )
    return errors


def done_problems(config: StackConfig) -> list[str]:
    """A `done` rule only a JobSet's Jobs can honour: StatefulSet pods are restarted whatever their exit."""
    program = config.program
    if program is None or program.has_chief or config.cluster.workload != "statefulset":
        return []
    return [
        f"{ns}:program.done: {program.done_text} needs {ns}:cluster.workload: jobset (a StatefulSet's workers "
        "serve until the experiment is destroyed, they never finish); use workload: jobset, or done: chief"
    ]


def own_mounts(config: StackConfig) -> list[tuple[str, str, bool]]:
    """Where tfk8s mounts something into a program's tasks, why, and whether it does for this stack (a
    folder it mounts is also refused below a claim: the runtime would create it in the claim)."""
    program = config.program
    source = program is not None and program.source is not None
    mounts = [(path, "a folder of its own in every task", False) for path in OWN_MOUNTS if path != PROGRAM_MOUNT]
    mounts.append((PROGRAM_MOUNT, f"{ns}:program.source's folder", source))
    if config.cluster.chief.checkpoint_volume is not None:
        mounts.append((CHECKPOINT_MOUNT, f"{ns}:cluster.chief.checkpointVolume", True))
    if config.logs is not None:
        mounts.append((CODE_MOUNT, f"the log shipper's, with {ns}:logs", True))
    return mounts


def _normal(path: str) -> str:
    """A mount path as the container sees it: '//tmp', '/tmp/' and '/x/../tmp' are all /tmp."""
    return posixpath.normpath("/" + path.lstrip("/"))


def mount_problems(config: StackConfig) -> list[str]:
    """A program volume on, under or above a folder tfk8s mounts: Kubernetes refuses two mounts at one
    path, one under it is hidden, and one above it makes the runtime create tfk8s's folder inside the
    claim (refused on a read-only claim)."""
    program = config.program
    if program is None:
        return []
    errors = []
    seen: dict[str, int] = {}
    mounts = own_mounts(config)
    for index, volume in enumerate(program.volumes):
        key = f"{ns}:program.volumes[{index}].mountPath"
        path = _normal(volume.mount_path)
        shown = f"'{volume.mount_path}'" + (f" (that is {path})" if path != volume.mount_path else "")
        if path == "/":
            errors.append(f"{key}: {shown} is the container's root; mount the claim in a folder of its own")
            continue
        clash = _clash(path, mounts)
        if clash is not None:
            own, why, relation = clash
            errors.append(
                f"{key}: {shown} {relation} {own}, which tfk8s mounts itself ({why}); pick a path apart from "
                f"{', '.join(sorted(mount for mount, _, _ in mounts))}"
            )
        elif path in seen:
            errors.append(
                f"{key}: {shown} is where program.volumes[{seen[path]}] is mounted too; give each claim its "
                "own mountPath"
            )
        seen.setdefault(path, index)
    return errors


def _clash(path: str, mounts: list[tuple[str, str, bool]]) -> Optional[tuple[str, str, str]]:
    for own, why, made in mounts:
        if path == own:
            return own, why, "is"
        if path.startswith(f"{own}/"):
            return own, why, "is under"
        if made and own.startswith(f"{path}/"):
            return own, why, "holds"
    return None


def gpu_image_problems(config: StackConfig) -> list[str]:
    cluster = config.cluster
    if cluster.gpu_image is None or cluster.workers.gpus:
        return []
    return [
        f"{ns}:cluster.gpuImage is the image of GPU workers, and {ns}:cluster.workers.gpus is 0, so no task runs "
        f"'{cluster.gpu_image}'; drop gpuImage, or give the workers GPUs"
    ]
