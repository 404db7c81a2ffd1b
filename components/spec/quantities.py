"""Kubernetes resource quantities and names as a stack file writes them ("500m", "4Gi", "srv-00")."""

from __future__ import annotations

import math
import re
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field
from pydantic_core import PydanticCustomError

from .kubernetes_limits import (
    DNS1123_LABEL_MAX,
    DNS1123_LABEL_PATTERN,
    DNS1123_SUBDOMAIN_MAX,
    DNS1123_SUBDOMAIN_PATTERN,
    LABEL_VALUE_MAX,
    LABEL_VALUE_PATTERN,
)
from .shown_values import shown

# Kubernetes resource quantities as a stack file would write them ("500m", "4Gi").
QUANTITY_PATTERN = r"^[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$"

QUANTITY_FACTORS = {
    "": 1,
    "m": 1e-3,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "E": 1e18,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
}
# What Kubernetes' own fields hold: seconds are int64, and a quantity is at most 2^63 - 1 of its unit
# (restarts and GPU counts are int32: trainer.settings.LARGEST_NUMBER); a larger number in a stack file
# could never be applied.
INT64_MAX = 2**63 - 1
# The least a TensorFlow task can run with: a smaller request is a typo ("1" is one byte).
MIN_CPU = 0.01
MIN_MEMORY_BYTES = 128 * 2**20


def quantity_value(text: str) -> float:
    """'500m' -> 0.5, '4Gi' -> 4294967296.0 (the text already matches QUANTITY_PATTERN)."""
    number = re.match(r"^[0-9]+(\.[0-9]+)?", text)
    assert number is not None
    return float(number.group(0)) * QUANTITY_FACTORS[text[number.end() :]]


def within_kubernetes(text: str) -> str:
    if quantity_value(text) > INT64_MAX:
        raise ValueError(f"quantity {shown(text)} is past the largest Kubernetes holds (2^63 - 1 bytes or cores)")
    return text


# Suffixes of bytes: a CPU written with one (`1.5Gi`) is a unit slip, not 1.6 billion cores.
BYTE_SUFFIXES = ("Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
# The least storage a volume of tfk8s's is given: a size in bytes (`20`, `1m`: a thousandth of a byte)
# is a missing suffix, and the API server refuses a claim of 0.
MIN_STORAGE_BYTES = 2**20


def at_least_cpu(text: str) -> str:
    if text.endswith(BYTE_SUFFIXES):
        raise ValueError(
            f"CPU '{text}' is written in bytes ({text[-2:]}); CPU is cores, whole or in thousandths (e.g. '500m', '2')"
        )
    if quantity_value(text) < MIN_CPU:
        raise ValueError(f"CPU '{text}' is below {MIN_CPU * 1000:.0f}m; give at least '10m' (e.g. '500m', '2')")
    return text


def at_least_memory(text: str) -> str:
    if quantity_value(text) < MIN_MEMORY_BYTES:
        raise ValueError(
            f"memory '{text}' is below 128Mi, the least a tfk8s pod is given (a TensorFlow task, the log "
            "collector); quantities are bytes "
            "unless suffixed (e.g. '512Mi', '4Gi')"
        )
    return text


def at_least_storage(text: str) -> str:
    if quantity_value(text) < MIN_STORAGE_BYTES:
        raise ValueError(f"storage '{text}' is below 1Mi; quantities are bytes unless suffixed (e.g. '512Mi', '20Gi')")
    return text


QUANTITY_FORM = "must be a Kubernetes quantity such as '500m', '2', '4Gi'"


def number_as_quantity(value: Any) -> Any:
    """A quantity written as a number (`cpu: 2`, `cpu: 0.5`), which Kubernetes takes as it takes "2": its text."""
    if isinstance(value, bool) or isinstance(value, float) and not math.isfinite(value):
        raise PydanticCustomError("quantity", QUANTITY_FORM)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    return value


Quantity = Annotated[
    str, BeforeValidator(number_as_quantity), Field(pattern=QUANTITY_PATTERN), AfterValidator(within_kubernetes)
]
CpuQuantity = Annotated[Quantity, AfterValidator(at_least_cpu)]
MemoryQuantity = Annotated[Quantity, AfterValidator(at_least_memory)]
StorageQuantity = Annotated[Quantity, AfterValidator(at_least_storage)]
# Kubernetes' names, by its own rules (kubernetes_limits.py).
DnsLabel = Annotated[str, Field(pattern=DNS1123_LABEL_PATTERN, max_length=DNS1123_LABEL_MAX)]  # pools, namespaces
DnsSubdomain = Annotated[str, Field(pattern=DNS1123_SUBDOMAIN_PATTERN, max_length=DNS1123_SUBDOMAIN_MAX)]  # nodes, ...
LabelValue = Annotated[str, Field(pattern=LABEL_VALUE_PATTERN, max_length=LABEL_VALUE_MAX)]
