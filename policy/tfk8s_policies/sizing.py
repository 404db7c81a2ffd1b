"""The model against the cluster: embedding shards, PS memory, PS:worker ratio, checkpoints."""

from __future__ import annotations

import math
from typing import Any, Mapping, Optional

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
    Severity,
    StackValidationArgs,
    StackValidationPolicy,
)

from .facts import OPTIMIZER_SLOTS, PROGRAM, SETTINGS_ENV, TRAINER_PROGRAM, checkpoint_writer, role_by_load
from .reading import (
    as_list,
    chief_settings,
    clusters,
    containers,
    embedding_shards,
    get,
    number,
    quantity_bytes,
    task_type_of,
    trainer_clusters,
)

MANDATORY = EnforcementLevel.MANDATORY
TRAINER_ONLY = (
    f" Applies to tfk8s's own trainer only, the experiments whose task pods carry the label {PROGRAM}: "
    f"{TRAINER_PROGRAM}: a team's own program (tfk8s:program) has a model the pack cannot know."
)
ADVISORY = EnforcementLevel.ADVISORY


def _validate_embedding_shards(args: StackValidationArgs, report: ReportViolation) -> None:
    """The chief shards the table over the PS its TF_CONFIG lists (the trainer's own rule, so with
    tfk8s's objects shards always equal PS). What can still break it: settings the chief cannot read
    or a partition it does not know, and tasks that get other settings than the chief (a literal env
    value on one workload overrides the shared ConfigMap), which then disagree on the table."""
    for (namespace, instance), group in trainer_clusters(list(args.resources)).items():
        cluster = get(group[0].tf_config, "cluster", default={}) or {}
        ps_count = len(as_list(get(cluster, "ps")))
        settings = chief_settings(group)
        where = f"experiment {instance} in {namespace}"
        if settings is None or "_malformed" in settings:
            report(
                f"{where}: the pods get no readable trainer settings ({SETTINGS_ENV}), so embedding sharding "
                "is unknown",
                None,
            )
            continue
        partition = settings.get("partition")
        if partition not in ("auto", "range", "none"):
            report(f"{where}: partition must be set explicitly to auto, range or none (got {partition!r})", None)
            continue
        shards = embedding_shards(settings, ps_count)
        for workload in group:
            other = workload.settings
            if other == settings:
                continue
            other_partition = get(other, "partition") if isinstance(other, Mapping) else None
            other_shards = embedding_shards(other, ps_count) if isinstance(other, Mapping) else "unknown"
            report(
                f"{where}: {workload.name} gets other trainer settings than the chief (partition "
                f"{other_partition!r}, {other_shards} embedding shards, against the chief's {partition!r}, "
                f"{shards} shards for {ps_count} PS); every task must run the same model",
                workload.resource.urn,
            )


def _validate_ratio(args: StackValidationArgs, report: ReportViolation) -> None:
    config = args.get_config()
    low, high = config.get("minWorkersPerPs", 1), config.get("maxWorkersPerPs", 10)
    for (_namespace, instance), group in clusters(list(args.resources)).items():
        cluster = get(group[0].tf_config, "cluster", default={}) or {}
        ps, workers = len(as_list(get(cluster, "ps"))), len(as_list(get(cluster, "worker")))
        if ps and not low <= workers / ps <= high:
            report(
                f"experiment {instance}: {ps} PS for {workers} workers is 1:{workers / ps:.1f}, outside "
                f"1:{low:g} to 1:{high:g} (sparse models do well at 1:3 to 1:5)",
                None,
            )


def shard_bytes(settings: Mapping[str, Any], ps_count: int) -> Optional[float]:
    try:
        rows, dim = float(settings["embeddingRows"]), float(settings["embeddingDim"])
        slots = OPTIMIZER_SLOTS[settings.get("optimizer", "adagrad")]
    except (KeyError, TypeError, ValueError):
        return None
    return math.ceil(rows / embedding_shards(settings, ps_count)) * dim * 4 * (1 + slots)


def _validate_ps_memory(args: StackValidationArgs, report: ReportViolation) -> None:
    for group in trainer_clusters(list(args.resources)).values():
        cluster = get(group[0].tf_config, "cluster", default={}) or {}
        settings = chief_settings(group) or {}
        needed = shard_bytes(settings, len(as_list(get(cluster, "ps"))))
        if needed is None:
            continue
        for workload in group:
            if task_type_of(workload) != role_by_load("variables").name:  # the PS, which hold the shards
                continue
            for container in containers(workload.spec):
                requested = quantity_bytes(get(container, "resources", "requests", "memory"))
                if requested is None or requested < needed:
                    report(
                        f"PS {workload.name} requests {get(container, 'resources', 'requests', 'memory')} "
                        f"but its embedding shard with optimizer slots needs {needed / 2**20:.0f}Mi",
                        workload.resource.urn,
                    )


def _on_a_claim(spec: Optional[Mapping[str, Any]], path: str) -> bool:
    """`path` lies on a PersistentVolumeClaim mounted into the pod."""
    claims = {get(v, "name") for v in as_list(get(spec, "volumes")) if get(v, "persistentVolumeClaim") is not None}
    target = path.rstrip("/")
    for container in containers(spec):
        for mount in as_list(get(container, "volumeMounts")):
            mount_path = str(get(mount, "mountPath", default="")).rstrip("/")
            if (
                get(mount, "name") in claims
                and mount_path
                and (target == mount_path or target.startswith(mount_path + "/"))
            ):
                return True
    return False


def _checkpoints_outlive_the_chief(args: StackValidationArgs, report: ReportViolation) -> None:
    limit = args.get_config().get("maxScratchCheckpointIntervals", 2)
    for (_namespace, instance), group in trainer_clusters(list(args.resources)).items():
        settings = chief_settings(group) or {}
        steps, every = number(settings.get("steps")), number(settings.get("checkpointEvery"))
        path = str(settings.get("checkpointDir", "default"))
        if not steps or not every or steps <= limit * every or "://" in path:
            continue
        # The role that writes the checkpoints (the chief): its pod is where the claim must be mounted.
        writers = [w for w in group if task_type_of(w) == checkpoint_writer().name]
        if path != "default" and writers and _on_a_claim(writers[0].spec, path):
            continue
        where = "the pod's scratch space" if path == "default" else f"{path}, which is on no volume claim"
        report(
            f"experiment {instance}: {steps / every:.0f} checkpoint intervals of training keep their "
            f"checkpoints on {where}; a replaced chief pod or a drained server starts again from step 0",
            None,
        )


def _report_unpartitioned(args: StackValidationArgs, report: ReportViolation) -> None:
    for (_namespace, instance), group in trainer_clusters(list(args.resources)).items():
        settings = chief_settings(group) or {}
        if settings.get("partition") == "none":
            report(
                f"experiment {instance}: partition: none keeps the whole embedding on one PS (the seed's "
                "single loaded PS); fine for reproducing it, not for training",
                None,
            )


POLICIES = [
    StackValidationPolicy(
        name="tfk8s-embedding-shards-match-ps",
        description="The embedding is sharded as the chief derives it (one shard per PS in TF_CONFIG unless "
        "partition: none): the settings are readable, the partition explicit, and every task gets the chief's "
        "settings." + TRAINER_ONLY,
        validate=_validate_embedding_shards,
        enforcement_level=MANDATORY,
        severity=Severity.HIGH,
        remediation_steps="Give every task the trainer settings from the shared ConfigMap (no per-task "
        "TFK8S_TRAINER), with partition: auto (or range) so the table is sharded over every PS.",
    ),
    StackValidationPolicy(
        name="tfk8s-ps-worker-ratio",
        description="PS:worker ratio within a configurable range (default 1:1 to 1:10; sparse models do well at 1:3 "
        "to 1:5).",
        validate=_validate_ratio,
        enforcement_level=ADVISORY,
        severity=Severity.LOW,
        config_schema=PolicyConfigSchema(
            properties={
                "minWorkersPerPs": {"type": "number", "default": 1, "minimum": 0},
                "maxWorkersPerPs": {"type": "number", "default": 10, "minimum": 1},
            }
        ),
        remediation_steps="Change ps.replicas or cluster.ratio.",
    ),
    StackValidationPolicy(
        name="tfk8s-ps-memory-fits-shard",
        description="Each PS requests at least the memory of its embedding shard with optimizer slots." + TRAINER_ONLY,
        validate=_validate_ps_memory,
        enforcement_level=ADVISORY,
        severity=Severity.MEDIUM,
        remediation_steps="Leave ps.memory unset (tfk8s derives it from the model) or raise it.",
    ),
    StackValidationPolicy(
        name="tfk8s-unpartitioned-embedding",
        description="partition: none keeps the embedding on one PS: flagged so it is a deliberate choice."
        + TRAINER_ONLY,
        validate=_report_unpartitioned,
        enforcement_level=ADVISORY,
        severity=Severity.LOW,
        remediation_steps="Use partition: auto unless reproducing the single-loaded-PS bottleneck.",
    ),
    StackValidationPolicy(
        name="tfk8s-checkpoints-outlive-the-chief",
        description="A long run (more checkpoint intervals than maxScratchCheckpointIntervals, default 2) keeps its "
        "checkpoints where a replaced chief pod finds them: a volume claim or a remote path, not the pod's "
        "scratch space." + TRAINER_ONLY,
        validate=_checkpoints_outlive_the_chief,
        enforcement_level=ADVISORY,
        severity=Severity.MEDIUM,
        config_schema=PolicyConfigSchema(
            properties={
                "maxScratchCheckpointIntervals": {"type": "number", "minimum": 0},
            }
        ),
        remediation_steps="Set tfk8s:cluster.chief.checkpointVolume: {size: 20Gi}, or a gs://, s3:// or hdfs:// "
        "checkpointDir.",
    ),
]
