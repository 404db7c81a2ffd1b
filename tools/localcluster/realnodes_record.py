"""The record of one cluster's real nodes, saved as real-nodes.json in the cluster's folder.

It names the nodes, the processes started for them and the host state they changed. A start
writes it before it changes anything, and after each step, so that `teardown`
(realnodes_teardown.py) can put everything back, also after a run killed outright
(lifecycle.py finds another cluster's record through host_claim.py). Kept apart from the start
and the teardown, which both read and write it, and from `import_archive`, which reads it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from components.spec.atomic_files import write_text_atomic

from . import host, paths

STATE_FILE = "real-nodes.json"


@dataclass
class RealNodes:
    """The real nodes of one cluster and the host state they changed; saved as JSON."""

    nodes: dict[str, str] = field(default_factory=dict)  # name -> node IP
    processes: dict[str, int] = field(default_factory=dict)  # name -> PID (= process group)
    host_state: Optional[host.HostState] = None

    @staticmethod
    def path(where: paths.ClusterDir) -> Path:
        return where.root / STATE_FILE

    def save(self, where: paths.ClusterDir) -> None:
        state = {
            "nodes": self.nodes,
            "processes": self.processes,
            "host_state": self.host_state.to_json() if self.host_state else None,
        }
        write_text_atomic(self.path(where), json.dumps(state, indent=2))

    @classmethod
    def load(cls, where: paths.ClusterDir) -> Optional["RealNodes"]:
        if not cls.path(where).exists():
            return None
        state = json.loads(cls.path(where).read_text())
        host_state = host.HostState.from_json(state["host_state"]) if state.get("host_state") else None
        return cls(nodes=state["nodes"], processes=state["processes"], host_state=host_state)
