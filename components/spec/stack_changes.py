"""A change to one key of a stack file, as `diagnose --write` and `tune` make it (standard library only).

The key is named as `pulumi config` names it (`tfk8s:cluster.ps.replicas`); stack_edit.py writes the
change into the file, the analysis (components/insight/next_experiment.py) decides it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Change:
    """One stack key's change: `key` as `pulumi config` names it ("tfk8s:cluster.ps.replicas")."""

    key: str
    old: Any  # None where the stack file leaves the key out
    new: Any

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "from": self.old, "to": self.new}
