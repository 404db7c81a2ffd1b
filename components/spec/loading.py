"""A stack's `tfk8s:*` values to a frozen `StackConfig`: the only place a stack file is parsed and checked.

`load_stack_config(stack, values)` returns the `StackConfig`, or raises
`StackConfigError` with one message that names the stack, each bad field and
what is allowed. Nothing here touches Pulumi resources, so a bad stack fails
before anything is registered. as_written.py reads the values as the user wrote
them, error_messages.py words the models' errors as a stack file writes keys, and
model_paths.py finds a key in the models.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any, Collection, Mapping, Optional

from pydantic import ValidationError

from .as_written import read_as_written, value_at
from .cross_checks import cross_checks, task_count_problems
from .error_messages import describe_validation_error, did_you_mean
from .kubernetes_limits import label_value_problem
from .logs_rules import log_archive_checks
from .model_paths import TRAINER_KEY, format_loc
from .models import CONFIG_NAMESPACE, StackConfig, StackConfigError
from .strict_yaml import described
from .tensorboard_rules import tensorboard_checks
from .trainer_contract import SettingsError, TrainerSettings

# --------------------------------------------------------------------------
# Loading


def load_stack_config(stack: str, values: Mapping[str, Any], secret_env: Collection[str] = ()) -> StackConfig:
    """Validate the `tfk8s:*` config of `stack`.

    `values` maps keys with or without the `tfk8s:` prefix to decoded values
    (mappings and lists as the stack file writes them); `secret_env`, the `program.env` names
    whose values are secrets (spec/secrets.py), which reach a pod through a Secret, not its spec.
    """
    errors: list[str] = []
    keys = StackConfig.file_keys()
    if label_value_problem(stack) or not stack:
        errors.append(
            f"stack name '{stack}' must be usable as a label value: letters, digits, '-', '_', '.', at most 63"
        )
    given: dict[str, Any] = {}
    for key, value in values.items():
        if not isinstance(key, str):
            errors.append(f"config key {key!r} is not text; keys are '<namespace>:<name>', e.g. tfk8s:cluster")
            continue
        short = key.split(":", 1)[1] if key.startswith(f"{CONFIG_NAMESPACE}:") else key
        namespace = key.split(":", 1)[0] if ":" in key else None
        if short in keys:
            given[short] = value
        elif ":" not in key or key.startswith(f"{CONFIG_NAMESPACE}:"):
            errors.append(
                f"{CONFIG_NAMESPACE}:{short}: unknown key{did_you_mean(short, keys)}; "
                f"allowed: {', '.join(f'{CONFIG_NAMESPACE}:{k}' for k in keys)}"
            )
        elif namespace is not None and is_near_namespace(namespace):
            errors.append(_namespace_typo(key, namespace, keys))

    # Every value as the user wrote it: what YAML reads otherwise than written, and keys left empty,
    # refused here for every key alike; what the models then see is plain values.
    as_written = read_as_written(given)
    errors.extend(as_written.errors)
    given = as_written.values

    # The keys whose fields have no default, but the trainer's, whose defaults are filled in below.
    required_keys = [
        key for key, name in keys.items() if StackConfig.model_fields[name].is_required() and key != TRAINER_KEY
    ]
    for required in required_keys:
        if required not in given and (required,) not in as_written.refused:
            errors.append(f"{CONFIG_NAMESPACE}:{required}: missing; every stack needs it")
    if "program" in given and TRAINER_KEY in given:
        errors.append(
            f"{CONFIG_NAMESPACE}:program and {CONFIG_NAMESPACE}:trainer are both set: a stack runs either the "
            f"team's own program or tfk8s's trainer; drop {CONFIG_NAMESPACE}:trainer (it configures tfk8s's "
            "trainer only)"
        )

    judged = _judged(stack, given, required_keys, secret_env)
    # The same with every refused value set aside (AsWritten.set_aside): what is found above a refused
    # value, or across keys, may judge what YAML made of it, and is listed with the refusals only if
    # found here too; else after they are fixed, if it still holds.
    aside = _judged(stack, as_written.set_aside(), required_keys, secret_env) if as_written.refused else judged

    if judged.trainer_problem is not None:
        loc, message = judged.trainer_problem
        if not as_written.explained(loc, message, [aside.trainer_problem[1]] if aside.trainer_problem else []):
            message = as_written.with_written_text(loc, message)
            given_value = value_at(given, loc)
            if isinstance(given_value, (dict, list)) and given_value:
                # Not Python's repr of what YAML made of it.
                message = re.sub(r"\(got [^\n]*\)$", f"(got {described(given_value)})", message)
            errors.append(f"{format_loc(loc)}: {message}")
    # Every problem in one pass: the pools and the cluster are checked even when the trainer
    # settings or the top-level keys have errors of their own.
    if judged.invalid is not None:
        said_aside = describe_validation_error(aside.invalid) if aside.invalid is not None else []
        errors.extend(describe_validation_error(judged.invalid, as_written, said_aside))
    for problems, problems_aside in (
        (judged.size_problems, aside.size_problems),
        (judged.cross_key_problems, aside.cross_key_problems),
    ):
        errors.extend(problem for problem in problems if not as_written.explained((), problem, problems_aside))
    if errors:
        raise StackConfigError.listing(stack, errors)
    assert judged.config is not None
    return judged.config


@dataclass(frozen=True)
class _Judged:
    """What the trainer's settings, the models and the checks across keys say of a stack's values."""

    trainer_problem: Optional[tuple[tuple[Any, ...], str]]  # where, and what
    invalid: Optional[ValidationError]
    config: Optional[StackConfig]
    size_problems: list[str]
    cross_key_problems: list[str]


def _judged(stack: str, given: Mapping[str, Any], required_keys: list[str], secret_env: Collection[str]) -> _Judged:
    trainer: Optional[TrainerSettings] = None
    trainer_problem = None
    try:
        # Not `or None`: an empty list or a 0 is a mistake, not a request for the defaults.
        trainer = TrainerSettings.from_config(given.get(TRAINER_KEY))
    except SettingsError as exc:
        trainer_problem = ((TRAINER_KEY, exc.key) if exc.key else (TRAINER_KEY,), exc.message)
    config: Optional[StackConfig] = None
    invalid = None
    if all(required in given for required in required_keys):
        sections = {key: given[key] for key in StackConfig.file_keys() if key in given}
        sections[TRAINER_KEY] = trainer or TrainerSettings()
        try:
            # By the keys a stack file writes only: a snake_case name is an unknown key there, as the
            # reference and `tfk8s:trainer` have it (models accept both from Python).
            config = StackConfig.model_validate({"stack": stack, **sections}, by_alias=True, by_name=False)
        except ValidationError as exc:
            invalid = exc
    # The size bound first, alone: the other checks size memory from the task counts, and from the
    # trainer's settings, only where they are valid.
    size_problems = task_count_problems(config) if config is not None else []
    cross_key_problems = []
    if config is not None and trainer is not None and not size_problems:
        cross_key_problems = [
            *cross_checks(config, secret_env),
            *tensorboard_checks(config),
            *log_archive_checks(config),
        ]
    return _Judged(trainer_problem, invalid, config, size_problems, cross_key_problems)


def is_near_namespace(namespace: str) -> bool:
    """A config namespace one slip from tfk8s's (`tfk8`, `tfks`, `tf8s`, `tfk8S`, `tkf8s`): a typo, since
    a Pulumi stack passes every namespace's keys on and another namespace's are not tfk8s's to judge."""
    if namespace == CONFIG_NAMESPACE:
        return False
    return _edit_distance(namespace.lower(), CONFIG_NAMESPACE) <= 1


def _edit_distance(a: str, b: str) -> int:
    """Optimal string alignment distance: insertions, deletions, substitutions and swaps of neighbours."""
    previous_row: list[int] = []
    row = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        before, previous_row, row = previous_row, row, [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            row[j] = min(previous_row[j] + 1, row[j - 1] + 1, previous_row[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[j] = min(row[j], before[j - 2] + 1)
    return row[len(b)]


def _namespace_typo(key: str, namespace: str, keys: Mapping[str, str]) -> str:
    name = key.split(":", 1)[1]
    close = difflib.get_close_matches(name, list(keys), n=1)
    meant = name if name in keys else (close[0] if close else name)
    return (
        f"{key}: unknown namespace '{namespace}' (did you mean '{CONFIG_NAMESPACE}:{meant}'?); tfk8s reads "
        f"only {CONFIG_NAMESPACE}:* keys, so this one would be ignored"
    )
