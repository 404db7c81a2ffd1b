"""The trainer's settings: the one schema of `tfk8s:trainer`.

This module must not import TensorFlow or anything outside the standard
library: the Pulumi program imports it to validate a stack and size PS memory,
and the pods (a stock TensorFlow image, no extra packages) import it to read the
very settings that were validated.

Stack files spell keys in camelCase (`embeddingRows`); Python uses snake_case.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import math
from dataclasses import dataclass, field
from typing import Any, Mapping

from .shared_names import SETTINGS_ENV  # noqa: F401 (where the settings' readers look it up)

PARTITIONS = ("auto", "range", "none")
OPTIMIZERS = ("adagrad", "sgd", "adam")

# Optimizer slot variables per embedding row: they live on the same PS as the
# row, so they count against that PS's memory.
OPTIMIZER_SLOTS = {"sgd": 0, "adagrad": 1, "adam": 2}

# Checkpoints the chief keeps; the program sizes the chief's scratch space for them.
CHECKPOINTS_KEPT = 3


class SettingsError(ValueError):
    """A trainer setting is wrong; `key` is the stack-file (camelCase) key."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}")
        self.key = key
        self.message = message


# The largest signed 32-bit integer: the most any setting takes (TensorFlow's int32 shapes and step
# counters), and the most Kubernetes' int32 fields hold (restarts, GPU counts), which the stack's models
# take from here: one definition, in the package that may import nothing of components.
LARGEST_NUMBER = 2**31 - 1


def _describe(text: str, minimum: float | None = None, choices: tuple[str, ...] = ()) -> dict:
    return {"help": text, "minimum": minimum, "choices": choices}


@dataclass(frozen=True)
class TrainerSettings:
    """What the trainer trains and how; defaults make a small sparse model."""

    embedding_rows: int = field(
        default=1_000_000,
        metadata=_describe("rows (distinct ids) of the embedding table", minimum=1),
    )
    embedding_dim: int = field(default=16, metadata=_describe("width of one embedding row", minimum=1))
    ids_per_example: int = field(default=8, metadata=_describe("multi-hot ids looked up per example", minimum=1))
    hidden_units: tuple[int, ...] = field(
        default=(64, 32), metadata=_describe("widths of the dense tower's hidden layers")
    )
    batch_size: int = field(default=512, metadata=_describe("examples per worker step", minimum=1))
    steps: int = field(default=1000, metadata=_describe("training steps in all", minimum=1))
    steps_per_call: int = field(default=4, metadata=_describe("steps run by one scheduled function", minimum=1))
    max_in_flight: int = field(
        default=8,
        metadata=_describe("scheduled functions queued before the chief waits", minimum=1),
    )
    partition: str = field(
        default="auto",
        metadata=_describe(
            "auto: one shard per PS, ids hashed; range: shards, ids unhashed; "
            "none: one shard (the single-loaded-PS bottleneck)",
            choices=PARTITIONS,
        ),
    )
    dedup: bool = field(default=True, metadata=_describe("look up each distinct id of a batch once"))
    optimizer: str = field(default="adagrad", metadata=_describe("optimizer", choices=OPTIMIZERS))
    learning_rate: float = field(default=0.1, metadata=_describe("optimizer learning rate", minimum=0.0))
    zipf_exponent: float = field(
        default=1.2,
        metadata=_describe("skew of synthetic ids (Zipf exponent, > 1)", minimum=1.0),
    )
    data: str = field(
        default="synthetic",
        metadata=_describe("'synthetic' or a TFRecord file pattern readable by tf.io.gfile"),
    )
    checkpoint_every: int = field(default=500, metadata=_describe("steps between checkpoints; 0 disables", minimum=0))
    checkpoint_dir: str = field(
        default="default",
        metadata=_describe(
            "where the chief writes checkpoints, any tf.io.gfile path (gs://, hdfs://, a mounted "
            "volume); 'default': the chief pod's scratch folder, gone with the pod (a retried chief is a new "
            "pod and starts over: set cluster.chief.checkpointVolume to resume)"
        ),
    )
    seed: int = field(default=0, metadata=_describe("seed of data and initial weights", minimum=0))

    def __post_init__(self) -> None:
        for spec in dataclasses.fields(self):
            _check_field(spec, getattr(self, spec.name))
        if self.zipf_exponent <= 1.0:
            raise SettingsError("zipfExponent", f"must be greater than 1 (got {self.zipf_exponent})")
        if self.learning_rate <= 0.0:
            raise SettingsError("learningRate", f"must be greater than 0 (got {self.learning_rate})")

    # -- derived facts the Pulumi program and the trainer both need --------

    def shard_count(self, ps_count: int) -> int:
        """Embedding shards: one per PS when partitioned, else the seed's single shard."""
        return 1 if self.partition == "none" else ps_count

    @property
    def optimizer_slots(self) -> int:
        return OPTIMIZER_SLOTS[self.optimizer]

    # -- stack-file form ----------------------------------------------------

    @classmethod
    def from_config(cls, raw: Mapping[str, Any] | None) -> "TrainerSettings":
        """Build from the stack's `tfk8s:trainer` mapping (camelCase keys)."""
        if raw is None:
            return cls()
        if not isinstance(raw, Mapping):
            raise SettingsError("", f"must be a mapping of settings, or {{}} for the defaults (got {raw!r})")
        by_key = {to_camel(f.name): f for f in dataclasses.fields(cls)}
        values: dict[str, Any] = {}
        for key, value in raw.items():
            spec = by_key.get(key)
            if spec is None:
                close = difflib.get_close_matches(str(key), list(by_key), n=1)
                hint = f" (did you mean '{close[0]}'?)" if close else ""
                raise SettingsError(key, f"unknown setting{hint}; allowed: {', '.join(by_key)}")
            if spec.name == "hidden_units" and isinstance(value, list):
                value = tuple(value)
            values[spec.name] = value
        return cls(**values)

    def to_config(self) -> dict[str, Any]:
        """The camelCase mapping `from_config` reads back: what pods receive."""
        out = {}
        for spec in dataclasses.fields(self):
            value = getattr(self, spec.name)
            out[to_camel(spec.name)] = list(value) if isinstance(value, tuple) else value
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_config(), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> "TrainerSettings":
        return cls.from_config(json.loads(text))


def to_camel(snake: str) -> str:
    head, *rest = snake.split("_")
    return head + "".join(part.title() for part in rest)


def _check_field(spec: dataclasses.Field, value: Any) -> None:
    key = to_camel(spec.name)
    default = spec.default
    # bool is an int in Python; a stack saying `steps: true` is still a mistake.
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise SettingsError(key, f"must be true or false (got {value!r})")
    elif isinstance(default, int):
        if isinstance(value, bool) or not isinstance(value, int):
            raise SettingsError(key, f"must be a whole number (got {value!r})")
    elif isinstance(default, float):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise SettingsError(key, f"must be a number (got {value!r})")
    elif isinstance(default, str):
        if not isinstance(value, str) or not value:
            raise SettingsError(key, f"must be a non-empty string (got {value!r})")
    elif isinstance(default, tuple):
        if not isinstance(value, tuple):
            raise SettingsError(key, f"must be a list of positive whole numbers (got {value!r})")
        for index, item in enumerate(value):
            if isinstance(item, bool) or not isinstance(item, int) or item <= 0:
                raise SettingsError(key, f"must be a list of positive whole numbers; its item {index + 1} is {item!r}")
    numbers = value if isinstance(value, tuple) else (value,)
    if any(isinstance(v, float) and not math.isfinite(v) for v in numbers):
        raise SettingsError(key, f"must be a finite number (got {value!r})")
    if any(isinstance(v, (int, float)) and not isinstance(v, bool) and v > LARGEST_NUMBER for v in numbers):
        # Larger would overflow TensorFlow's int32 shapes and step counters long before it trained.
        raise SettingsError(key, f"must be at most {LARGEST_NUMBER:,} (got {value!r})")
    minimum = spec.metadata.get("minimum")
    if minimum is not None and value < minimum:
        raise SettingsError(key, f"must be at least {minimum:g} (got {value!r})")
    choices = spec.metadata.get("choices")
    if choices and value not in choices:
        raise SettingsError(key, f"must be one of {', '.join(choices)} (got {value!r})")
