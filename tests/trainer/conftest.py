"""Trainer tests run in the trainer's own environment (TensorFlow, protobuf 6).

`make test` runs them with `--confcutdir tests/trainer`, so the Pulumi fixtures
of tests/conftest.py are not loaded here.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[2]
if str(PROJECT_ROOT) not in sys.path:
    sys.path.insert(0, str(PROJECT_ROOT))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

tf = pytest.importorskip("tensorflow")

from trainer.ports import free_ports  # noqa: E402


class InProcessCluster:
    """2 PS and 1 worker as in-process gRPC servers, and this process as the chief."""

    def __init__(self, ps: int = 2) -> None:
        # All ports at once: ports picked one by one can repeat, and two PS on one port never start.
        chief, *ps_ports, worker = [f"127.0.0.1:{port}" for port in free_ports(ps + 2)]
        self.spec = {"chief": [chief], "ps": ps_ports, "worker": [worker]}
        cluster = tf.train.ClusterSpec(self.spec)
        self.servers = [
            tf.distribute.Server(cluster, job_name=job, task_index=i, protocol="grpc", start=True)
            for job in ("ps", "worker")
            for i in range(len(self.spec[job]))
        ]
        self.resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
            cluster, task_type="chief", task_id=0, rpc_layer="grpc"
        )


@pytest.fixture(scope="session")
def in_process_cluster(tmp_path_factory) -> InProcessCluster:
    # The worker's input pipeline reads its task index from the working directory.
    workdir = tmp_path_factory.mktemp("worker")
    os.chdir(workdir)
    from trainer.data import write_task_index

    write_task_index(0)
    return InProcessCluster(ps=2)
