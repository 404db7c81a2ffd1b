"""A real-node start that fails half-way puts the host back.

Runs before the session's real cluster starts (conftest.py orders it first):
only one set of real nodes can own the pod bridge at a time.
"""

from __future__ import annotations

import pytest

from tests.realpods.conftest import host_snapshot, require_real_node_prerequisites
from tools.localcluster import lifecycle, paths, realnodes
from tools.localcluster.processes import ClusterError
from tools.nodeimage.images import pause_image

FAILED_START = paths.ClusterDir(paths.CLUSTER_ROOT / "failed-start")


def test_a_start_that_fails_after_containerd_leaves_nothing_behind(monkeypatch):
    require_real_node_prerequisites()
    before = host_snapshot()

    def kubelet_fails(*args, **kwargs):
        raise ClusterError("kubelet could not start (made to fail by the test)")

    monkeypatch.setattr(realnodes, "_start_kubelet", kubelet_fails)
    # Only the small sandbox image: the failure comes after the images are loaded anyway.
    monkeypatch.setattr(realnodes, "tensorflow_image", pause_image)
    with pytest.raises(ClusterError, match="made to fail by the test"):
        lifecycle.up(FAILED_START, real=["srv-00"], tie_to_parent=True)
    assert host_snapshot() == before
