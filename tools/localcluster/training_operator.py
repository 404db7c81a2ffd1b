"""Kubeflow's TFJob on the local cluster (`make cluster-up ... TFJOB=1`), beside JobSet and Kueue.

The `tfjobs.kubeflow.org` CRD and the TFJob webhook configuration come from the training operator's
own module (tools/toolchain/build.sh copies them into .tools/addons/training-operator). The operator
runs as a host process against the loopback API server, TFJob scheme only, with no gang scheduler:
its TFJob reconciler and admission webhook as the operator's main registers them, under a main of our
own (tools/toolchain/training-operator/main.go). That main serves the webhook on 127.0.0.1 with a
certificate from the cluster's CA and the webhook configuration calls it by URL, as JobSet's and
Kueue's do here; the operator's own certificate rotator, which expects an in-cluster Service, writes
to a fixed /tmp folder and serves on every interface, does not run. So a TFJob is validated by the
operator's webhook, as on a real cluster.
"""

from __future__ import annotations

import base64
import socket
from pathlib import Path
from typing import Any

import yaml

from . import paths

NAME = "training-operator"
MANIFESTS_DIR = paths.PROJECT_ROOT / ".tools" / "addons" / NAME
# The operator's TensorFlow examples, from the same module (tests/realpods/test_kubeflow_examples.py).
TENSORFLOW_EXAMPLES_DIR = MANIFESTS_DIR / "examples" / "tensorflow"
PORTS = (f"{NAME}-webhook", f"{NAME}-metrics")
TFJOB_CRD = "tfjobs.kubeflow.org"
# The webhook configuration's name in the operator's own manifests (manifests/base/webhook/patch.yaml).
WEBHOOK_CONFIGURATION = "validator.training-operator.kubeflow.org"
TFJOB_WEBHOOK_PATH = "/validate-kubeflow-org-v1-tfjob"


def _manifest(name: str) -> Path:
    path = MANIFESTS_DIR / name
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: run `make toolchain` first")
    return path


def tfjob_crd() -> dict[str, Any]:
    return yaml.safe_load(_manifest("kubeflow.org_tfjobs.yaml").read_text())


def webhook_configuration(port: int, ca_bundle: bytes) -> dict[str, Any]:
    """The operator's validating webhook configuration, its TFJob webhook only, called by URL."""
    documents = yaml.safe_load_all(_manifest("webhooks.yaml").read_text())
    [configuration] = [d for d in documents if d and d["kind"] == "ValidatingWebhookConfiguration"]
    [tfjob] = [w for w in configuration["webhooks"] if w["clientConfig"]["service"]["path"] == TFJOB_WEBHOOK_PATH]
    url = f"https://127.0.0.1:{port}{TFJOB_WEBHOOK_PATH}"
    tfjob = {**tfjob, "clientConfig": {"url": url, "caBundle": base64.b64encode(ca_bundle).decode()}}
    return {**configuration, "metadata": {"name": WEBHOOK_CONFIGURATION}, "webhooks": [tfjob]}


def operator_args(kubeconfig: Path, ports: dict[str, int], cert_dir: Path) -> list[str]:
    return [
        f"--kubeconfig={kubeconfig}",
        f"--webhook-server-port={ports[f'{NAME}-webhook']}",
        f"--cert-dir={cert_dir}",
        f"--metrics-bind-address=127.0.0.1:{ports[f'{NAME}-metrics']}",
    ]


def serving(port: int) -> bool:
    """The webhook listens (the manager started it once the caches synced)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0):
            return True
    except OSError:
        return False
