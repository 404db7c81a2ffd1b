"""The netlink reader and remover of nftables tables that teardown and the real-pod tests rely on, in a
network namespace of the test's own (the host's tables are never touched)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[2]

# Runs in a network namespace of its own: the host's tables are never touched.
ROUND_TRIP = """
import json
from tools.localcluster import netfilter
table = netfilter.Table(netfilter.FAMILY_INET, "tfk8s-netpol-test")
seen = {"before": [str(t) for t in netfilter.tables()]}
netfilter.create_table(table)
seen["created"] = [str(t) for t in netfilter.tables()]
seen["deleted"] = netfilter.delete_table(table)
seen["deleted again"] = netfilter.delete_table(table)
seen["after"] = [str(t) for t in netfilter.tables()]
try:
    netfilter.set_elements(table, "podips-v4")
except netfilter.NetfilterError as error:
    seen["set of no table"] = error.errno
print(json.dumps(seen))
"""


def test_tables_are_listed_created_and_deleted_over_netlink():
    if os.geteuid() != 0:
        pytest.skip("a network namespace and nftables need root")
    done = subprocess.run(["unshare", "--net", sys.executable, "-c", ROUND_TRIP],
                          cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "before": [],
        "created": ["inet tfk8s-netpol-test"],
        "deleted": True,
        "deleted again": False,
        "after": [],
        "set of no table": 2,  # ENOENT
    }
