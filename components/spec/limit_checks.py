"""Kubernetes' and Linux's limits (kubernetes_limits.py) applied to every stack key whose value
reaches an object or a container as it is: each message names the key, the value and the rule.

The models hold each name to Kubernetes' pattern for it, and each image to the reference grammar
(both from kubernetes_limits.py); these are the rules a pattern cannot hold (a label key's prefix, a
Secret key's length and its '..', exec's sizes), so that nothing the API server or the kubelet would
refuse is sent to either.
"""

from __future__ import annotations

from typing import Callable, Collection, Iterable, Mapping, Optional

from .kubernetes_limits import (
    ARG_MAX,
    LABEL_VALUE_MAX,
    MAX_OBJECT_BYTES,
    config_map_key_problem,
    exec_string_bytes,
    exec_string_problem,
    label_key_problem,
    label_value_problem,
    secret_data_problem,
)
from .models import CONFIG_NAMESPACE, StackConfig
from .program import ProgramSpec, SecretRef
from .quantities import INT64_MAX
from .remote_storage import storage_url_problem, web_address_problem
from .roles import Tolerations
from .shown_values import shown
from .sizing import chief_memory_bytes, ps_memory_bytes
from .task_counts import task_counts
from .task_roles import ROLES
from .tensorboard_rules import tensorboard_log_dir
from .trainer_contract import SETTINGS_ENV, TENSORBOARD_DIR_ENV

Check = Callable[[str], Optional[str]]
# What a pod template holds besides the program's own strings (tfk8s's variables, volumes, affinity, the
# log shell's script), with room to spare.
OBJECT_ROOM = 64 * 1024


def kubernetes_limit_checks(config: StackConfig, secret_env: Collection[str] = ()) -> list[str]:
    """Every value of the stack that Kubernetes or exec would refuse, under its key. `secret_env`: the
    `program.env` names whose values are secrets (set with --secret)."""
    errors: list[str] = []
    for index, pool in enumerate(config.node_pools):
        where = f"nodePools[{index}]"
        errors += _labels(f"{where}.selector", pool.selector or {})
    cluster = config.cluster
    if cluster.place_by == "hostname":
        errors += _hostname_problems(config)
    for role in ROLES:
        # None: a role the stack leaves out (an evaluator), or one it has no section for yet
        section = getattr(cluster, role.stack_key, None)
        tolerations = section.tolerations if section is not None else ()
        errors += _toleration_problems(f"cluster.{role.stack_key}.tolerations", tolerations)
    if config.tensorboard is not None:
        for index, peer in enumerate(config.tensorboard.allow_from):
            errors += _labels(f"tensorboard.allowFrom[{index}].podLabels", peer.pod_labels)
    if config.program is not None:
        errors += _program_problems(config.program)
        errors += _workload_size_problems(config, secret_env)
    else:
        errors += _derived_memory_problems(config)
        for key, value in (("checkpointDir", config.trainer.checkpoint_dir), ("data", config.trainer.data)):
            problem = storage_url_problem(value) or web_address_problem(value)
            if problem:
                errors.append(f"{CONFIG_NAMESPACE}:trainer.{key}: {shown(value)} {problem}")
        settings = f"{SETTINGS_ENV}={config.trainer.to_json()}"
        problem = exec_string_problem(settings)
        if problem:
            errors.append(
                f"{CONFIG_NAMESPACE}:trainer: the settings reach every task as one environment variable "
                f"({SETTINGS_ENV}), which {problem}; shorten trainer.data and trainer.checkpointDir"
            )
    log_dir = tensorboard_log_dir(config)
    if log_dir is not None:
        problem = exec_string_problem(f"{TENSORBOARD_DIR_ENV}={log_dir}")
        if problem:
            errors.append(
                f"{CONFIG_NAMESPACE}:tensorboard.logDir: {shown(log_dir)} reaches every task as "
                f"{TENSORBOARD_DIR_ENV}, which {problem}; give a shorter folder"
            )
    return errors


# The most memory one server offers (the largest cloud machines, 2026: 32 TiB). A size tfk8s derives
# past it is a pod no scheduler can place: a slip in the model's size, said before anything runs. A
# size the stack gives itself is the user's to choose, up to what Kubernetes holds.
LARGEST_SERVER_MEMORY_BYTES = 32 * 2**40


def _derived_memory_problems(config: StackConfig) -> list[str]:
    """The memory tfk8s derives from the model, where the stack gives none, within what one server
    offers (and so within the 2^63 - 1 bytes Kubernetes holds)."""
    derived = []
    if config.cluster.ps_count and config.cluster.ps.memory is None:
        more_ps = f"give more PS ({CONFIG_NAMESPACE}:cluster.ps.replicas), "
        derived.append(("each PS's", ps_memory_bytes(config.trainer, config.cluster.ps_count), "ps.memory", more_ps))
    if config.cluster.chief.memory is None:
        derived.append(("the chief's", chief_memory_bytes(config.trainer), "chief.memory", ""))
    model = f"embeddingRows {config.trainer.embedding_rows:,} x embeddingDim {config.trainer.embedding_dim:,}"
    return [
        f"{CONFIG_NAMESPACE}:trainer: {model} sizes {whose} memory at {_bytes_in_words(size)}, "
        f"{_past_what(size)}; make the model smaller, {more_ps}or set {CONFIG_NAMESPACE}:cluster.{key}"
        for whose, size, key, more_ps in derived
        if size > LARGEST_SERVER_MEMORY_BYTES
    ]


def _past_what(size: int) -> str:
    if size > INT64_MAX:
        return "past the 2^63 - 1 bytes Kubernetes holds"
    return "more than any one server offers (32 TiB at the most): no node could run it"


def _bytes_in_words(size: int) -> str:
    return f"{size:,} bytes ({size / 2**40:,.1f} TiB)"


def program_secret_problems(secret_env: Mapping[str, str]) -> list[str]:
    """The Secret that carries a program's secret `env` values (objects/manifests.program_secret) holds
    them all: past MaxSecretSize together, the API server refuses it. Read where the values are known
    (the engine decrypts them; a stack file's `plan` reads each as a placeholder)."""
    problem = secret_data_problem(secret_env)
    if problem is None:
        return []
    return [
        f"{CONFIG_NAMESPACE}:program.env: the values set with --secret ({', '.join(sorted(secret_env))}) reach "
        f"the pods through one Secret, whose values {problem}; pass large ones in a file instead (program.volumes)"
    ]


def _hostname_problems(config: StackConfig) -> list[str]:
    """placeBy: hostname pins a task by its node's kubernetes.io/hostname label, whose value is at most 63
    characters: a longer node name can be no such value (the API server refuses it in a required affinity)."""
    problems = []
    for index, pool in enumerate(config.node_pools):
        for position, node in enumerate(pool.nodes or ()):
            if len(node) > LABEL_VALUE_MAX:
                problems.append(
                    f"{CONFIG_NAMESPACE}:nodePools[{index}].nodes[{position}]: node {shown(node)} has a name of "
                    f"{len(node)} characters, and {CONFIG_NAMESPACE}:cluster.placeBy: hostname places tasks by the "
                    f"node's kubernetes.io/hostname label, whose value has at most {LABEL_VALUE_MAX}; use placeBy: "
                    "labels (tfk8s labels the node with a short name of its own)"
                )
    return problems


def _at(key: str, index: object) -> str:
    if index is None:
        return key
    return f"{key}[{index}]" if isinstance(index, int) else f"{key}.{index}"


def _each(key: str, values: Mapping[object, str], check: Check, kind: str) -> list[str]:
    problems = []
    for index, value in values.items():
        problem = check(value)
        if problem:
            problems.append(f"{CONFIG_NAMESPACE}:{_at(key, index)}: {kind} {shown(value)} {problem}")
    return problems


def _labels(key: str, labels: Mapping[str, str]) -> list[str]:
    """Labels a selector matches: each key a qualified name, each value a label value."""
    problems = []
    for label, value in labels.items():
        problem = label_key_problem(label)
        if problem:
            problems.append(f"{CONFIG_NAMESPACE}:{key}: label key {shown(label)} {problem}")
        problem = label_value_problem(value)
        if problem:
            problems.append(f"{CONFIG_NAMESPACE}:{key}: the value of '{label}', {shown(value)}, {problem}")
    return problems


def _toleration_problems(key: str, tolerations: Tolerations) -> list[str]:
    """validateTolerations: a key is a label key, an Equal toleration's value a label value."""
    problems = []
    for index, toleration in enumerate(tolerations):
        if toleration.key is not None:
            problem = label_key_problem(toleration.key)
            if problem:
                problems.append(f"{CONFIG_NAMESPACE}:{key}[{index}].key: taint key {shown(toleration.key)} {problem}")
        if toleration.value is not None:
            problem = label_value_problem(toleration.value)
            if problem:
                problems.append(
                    f"{CONFIG_NAMESPACE}:{key}[{index}].value: taint value {shown(toleration.value)} {problem}"
                )
    return problems


def _program_problems(program: ProgramSpec) -> list[str]:
    ns = CONFIG_NAMESPACE
    problems = []
    plain: dict[str, str] = {}
    for name, value in program.env.items():
        if isinstance(value, SecretRef):
            problems += _each(f"program.env.{name}.key", {None: value.key}, config_map_key_problem, "key")
        else:
            plain[name] = value
    for name, value in plain.items():
        problem = exec_string_problem(f"{name}={value}")
        if problem:
            problems.append(f"{ns}:program.env.{name}: the variable {problem}; pass a file instead (program.volumes)")
    for role in ("", *(row.name for row in ROLES)):
        command, args = program.command_of(role) if role else (program.command, program.args)
        own = next((given for name, given in program.roles.items() if name == role), None)
        for field, words in (("command", command), ("args", args)):
            if role and (own is None or getattr(own, field) is None):
                continue  # the program's, checked once
            where = f"program.roles.{role}.{field}" if role else f"program.{field}"
            for index, word in enumerate(words or ()):
                problem = exec_string_problem(word)
                if problem:
                    problems.append(f"{ns}:{where}[{index}]: {shown(word)} {problem}")
        total = _exec_bytes((*(command or ()), *(args or ())), plain)
        if total > ARG_MAX:
            where = f"program.roles.{role}" if role and own is not None else "program"
            problems.append(
                f"{ns}:{where}: command, args and env come to {total:,} bytes, and Linux starts a program with at "
                f"most {ARG_MAX:,} (ARG_MAX; exec fails with 'Argument list too long'); pass data in a file "
                "(program.source or program.volumes)"
            )
    return _unique(problems)


def _workload_size_problems(config: StackConfig, secret_env: Collection[str]) -> list[str]:
    """A JobSet holds one pod template per role, each with its command, args and env: past what etcd
    stores in one object, the API server refuses it (a StatefulSet holds one role's template). A value
    set with --secret is not in it: the template names the experiment's Secret and the key, as a
    `{secret, key}` value does (both in OBJECT_ROOM's room); the kubelet reads the value at the start.
    Exec still gets every value, so _program_problems counts them all."""
    program = config.program
    assert program is not None
    env = {name: value for name, value in program.env.items() if isinstance(value, str) and name not in secret_env}
    roles = [role for role, count in task_counts(config).items() if count]
    sizes = {
        role: _exec_bytes((*(program.command_of(role)[0] or ()), *(program.command_of(role)[1] or ())), env)
        for role in roles
    }
    largest = max(sizes.values())
    total = sum(sizes.values()) if config.cluster.workload == "jobset" else largest
    if total + OBJECT_ROOM <= MAX_OBJECT_BYTES:
        return []
    held = (
        f"the experiment's JobSet holds the pod template of each of its {len(roles)} roles ({', '.join(roles)}), "
        f"{total:,} bytes of them together"
        if config.cluster.workload == "jobset"
        else f"a StatefulSet holds its role's pod template, {largest:,} bytes of them"
    )
    return [
        f"{CONFIG_NAMESPACE}:program: its command, args and env are written into every pod template, and {held}; "
        f"etcd stores at most {MAX_OBJECT_BYTES:,} bytes in one object (--max-request-bytes), so the API server "
        "would refuse it ('request is too large'); pass data in a file (program.source or program.volumes)"
    ]


def _exec_bytes(words: Iterable[str], env: Mapping[str, str]) -> int:
    return sum(exec_string_bytes(word) for word in words) + sum(
        exec_string_bytes(f"{name}={value}") for name, value in env.items()
    )


def _unique(problems: list[str]) -> list[str]:
    return list(dict.fromkeys(problems))
