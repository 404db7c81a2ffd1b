"""A stack's `tfk8s:*` values to a frozen `StackConfig`: the only place a stack file is parsed and checked.

`load_stack_config(stack, values)` returns the `StackConfig`, or raises
`StackConfigError` with one message that names the stack, each bad field and
what is allowed. Nothing here touches Pulumi resources, so a bad stack fails
before anything is registered.
"""

from __future__ import annotations

import difflib
import re
import typing
from typing import Any, Mapping

from pydantic import BaseModel, ValidationError

from .cross_checks import cross_checks, task_count_problems
from .logs_rules import log_archive_checks
from .models import CONFIG_NAMESPACE, StackConfig, StackConfigError
from .program import DNS_SUBDOMAIN, SECRET_KEY
from .quantities import DNS_LABEL_PATTERN, LABEL_VALUE_PATTERN, NODE_NAME_PATTERN, QUANTITY_PATTERN
from .tensorboard_rules import tensorboard_checks
from .trainer_contract import SettingsError, TrainerSettings

# --------------------------------------------------------------------------
# Loading

# Read by its own parser (trainer/settings.py), and its defaults apply when the stack leaves it out.
TRAINER_KEY = "trainer"


def load_stack_config(stack: str, values: Mapping[str, Any]) -> StackConfig:
    """Validate the `tfk8s:*` config of `stack`.

    `values` maps keys with or without the `tfk8s:` prefix to decoded values
    (mappings and lists as the stack file writes them).
    """
    errors: list[str] = []
    keys = StackConfig.file_keys()
    if not re.match(LABEL_VALUE_PATTERN, stack) or not stack:
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
                f"{CONFIG_NAMESPACE}:{short}: unknown key{_did_you_mean(short, keys)}; "
                f"allowed: {', '.join(f'{CONFIG_NAMESPACE}:{k}' for k in keys)}"
            )
        elif namespace is not None and is_near_namespace(namespace):
            errors.append(_namespace_typo(key, namespace, keys))

    # The keys whose fields have no default, but the trainer's, whose defaults are filled in below.
    required_keys = [
        key for key, name in keys.items() if StackConfig.model_fields[name].is_required() and key != TRAINER_KEY
    ]
    for required in required_keys:
        if required not in given:
            errors.append(f"{CONFIG_NAMESPACE}:{required}: missing; every stack needs it")
    if "program" in given and given["program"] is None:
        errors.append(
            f"{CONFIG_NAMESPACE}:program: empty; give the program's keys (docs/programs.md), or leave "
            f"{CONFIG_NAMESPACE}:program out to run tfk8s's trainer"
        )
        del given["program"]
    if "program" in given and TRAINER_KEY in given:
        errors.append(
            f"{CONFIG_NAMESPACE}:program and {CONFIG_NAMESPACE}:trainer are both set: a stack runs either the "
            f"team's own program or tfk8s's trainer; drop {CONFIG_NAMESPACE}:trainer (it configures tfk8s's "
            "trainer only)"
        )

    try:
        # Not `or None`: an empty list or a 0 is a mistake, not a request for the defaults.
        trainer = TrainerSettings.from_config(given.get(TRAINER_KEY))
    except SettingsError as exc:
        trainer = None
        where = f"{CONFIG_NAMESPACE}:trainer" + (f".{exc.key}" if exc.key else "")
        errors.append(f"{where}: {exc.message}")

    # Every problem in one pass: the pools and the cluster are checked even when the trainer
    # settings or the top-level keys have errors of their own.
    config: StackConfig | None = None
    if all(required in given for required in required_keys):
        sections = {key: given[key] for key in keys if key in given}
        sections[TRAINER_KEY] = trainer or TrainerSettings()
        try:
            config = StackConfig.model_validate({"stack": stack, **sections})
        except ValidationError as exc:
            errors.extend(_describe_validation_error(exc))

    # The size bound first, alone: the other checks size memory from the task counts.
    size_problems = task_count_problems(config) if config is not None else []
    errors.extend(size_problems)
    # The cross checks size memory from the trainer settings: only with settings that are valid.
    if config is not None and trainer is not None and not size_problems:
        errors.extend(cross_checks(config))
        errors.extend(tensorboard_checks(config))
        errors.extend(log_archive_checks(config))
    if errors:
        raise StackConfigError.listing(stack, errors)
    assert config is not None
    return config


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


def _describe_validation_error(exc: ValidationError) -> list[str]:
    messages = []
    for error in exc.errors(include_url=False):
        loc = tuple(error["loc"])
        field_path = _format_loc(loc)
        if error["type"] == "extra_forbidden":
            allowed = _allowed_keys(loc[:-1])
            key = str(loc[-1])
            hint = _did_you_mean(key, allowed)
            messages.append(f"{field_path}: unknown key{hint}; allowed: {', '.join(allowed)}")
            continue
        message = error["msg"]
        if message.startswith("Value error, "):
            message = message[len("Value error, ") :]
        if error["type"] == "string_pattern_mismatch":
            message = _pattern_help(error)
        elif error["type"] == "tuple_type":
            message = "should be a list"  # a stack file's sequences are lists; tuples are how tfk8s holds them
        elif error["type"] == "model_type":
            # Not the class tfk8s holds it in: what the stack file writes (`{}` for every default).
            message = "should be a mapping of its keys (`{}` for the defaults)"
        got = error.get("input")
        if error["type"] not in ("missing",) and not isinstance(got, (dict, list)):
            message = f"{message} (got {_shown_input(got)})"
        messages.append(f"{field_path}: {message}")
    return messages


# What each pattern allows, in words.
_PATTERN_RULES = {
    DNS_LABEL_PATTERN: "lower-case letters, digits and '-', at most 63",
    LABEL_VALUE_PATTERN: "letters, digits, '-', '_', '.', at most 63",
    NODE_NAME_PATTERN: "lower-case letters, digits, '-' and '.', starting and ending with a letter or digit",
    DNS_SUBDOMAIN: "lower-case letters, digits, '-' and '.', starting and ending with a letter or digit",
    SECRET_KEY: "letters, digits, '-', '_' and '.'",
}
# What a name names, by its key: a claim refused as "a node name" sends the user to the wrong docs.
_NAME_KINDS = {
    "nodes": "a node name",
    "name": "a pool name",
    "pool": "a pool name",
    "claim": "a PersistentVolumeClaim's name",
    "secret": "a Secret's name",
    "imagePullSecrets": "a Secret's name",
    "key": "a key of the Secret",
    "storageClass": "a StorageClass's name",
    "priorityClass": "a PriorityClass's name",
    "namespace": "a namespace (a DNS label)",
    "queue": "a ClusterQueue's name",
    "product": "a GPU product's label value",
}
_KIND_OF_PATTERN = {
    DNS_LABEL_PATTERN: "a DNS label",
    LABEL_VALUE_PATTERN: "a label value",
    NODE_NAME_PATTERN: "a DNS subdomain",
    DNS_SUBDOMAIN: "a DNS subdomain",
    SECRET_KEY: "a Secret key",
}


def _pattern_help(error: Mapping[str, Any]) -> str:
    pattern = (error.get("ctx") or {}).get("pattern", "")
    if pattern == QUANTITY_PATTERN:
        return "must be a Kubernetes quantity such as '500m', '2', '4Gi'"
    rules = _PATTERN_RULES.get(pattern)
    if rules is None:
        return error["msg"]
    key = next((part for part in reversed(tuple(error["loc"])) if isinstance(part, str)), "")
    kind = _NAME_KINDS.get(key) or _KIND_OF_PATTERN[pattern]
    return f"must be {kind}: {rules}"


# A value echoed back in full would bury the message (a 400-digit quantity, a pasted blob).
SHOWN_INPUT_CHARS = 60


def _shown_input(value: Any) -> str:
    shown = repr(value)
    return shown if len(shown) <= SHOWN_INPUT_CHARS else f"{shown[:SHOWN_INPUT_CHARS]}... ({len(shown):,} characters)"


def _format_loc(loc: tuple) -> str:
    if not loc:
        return f"{CONFIG_NAMESPACE}:(stack)"
    head, *rest = loc
    path = f"{CONFIG_NAMESPACE}:{head}"
    for part in rest:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def _allowed_keys(loc: tuple) -> list[str]:
    """The camelCase keys allowed at `loc` (a pydantic error location)."""
    model: Any = StackConfig
    for part in loc:
        if isinstance(part, int):
            continue
        field_name = next(
            (name for name, info in model.model_fields.items() if (info.alias or name) == part),
            None,
        )
        if field_name is None:
            return []
        model = _model_in(model.model_fields[field_name].annotation)
        if model is None:
            return []
    return [info.alias or name for name, info in model.model_fields.items() if name != "stack"]


def _model_in(annotation: Any) -> Any:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def _did_you_mean(key: str, allowed: Any) -> str:
    close = difflib.get_close_matches(key, list(allowed), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""
