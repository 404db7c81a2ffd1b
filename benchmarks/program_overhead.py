"""What tfk8s costs a team's own program: the same TF2 program from a program stack and from a
JobSet written by hand, side by side on one real node (srv-00: kubelet, containerd, runc).

The program is tests/team_programs/tf2-ps (a ParameterServerStrategy coordinator on the chief,
2 PS, 2 workers). The hand-written JobSet is what a team writes without tfk8s: the program in
a ConfigMap, one replicated Job per role on the node, each pod's TF_CONFIG composed by a shell
from its Job completion index. Both run the same image, command, resources and node. Each is
run RUNS times, alternating; the figures are medians:

- seconds from the apply to the JobSet `Completed` (pods start, TensorFlow imports, training);
- examples/s, as the program's chief prints them.

Goal: tfk8s costs nothing, its examples/s at least 0.95 of the hand-written JobSet's (and its
time to Completed within 1 / 0.95 of it). Root only; needs `make toolchain node-image`. The
cluster lives under .cluster/bench-program and is stopped, the host put back, at the end.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import yaml

PROJECT_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT_ROOT))

from kubernetes import client  # noqa: E402

from components.objects.loading import load_experiment  # noqa: E402
from components.objects.render import render  # noqa: E402
from tools.localcluster import host, lifecycle, paths  # noqa: E402
from tools.localcluster.client import api_client  # noqa: E402
from tools.localcluster.experiments import apply_manifests, delete_manifests, rendered_objects  # noqa: E402
from tools.nodeimage.images import tensorflow_image  # noqa: E402

CLUSTER = paths.ClusterDir(paths.CLUSTER_ROOT / "bench-program")
SERVER = "srv-00"
SOURCE = "tests/team_programs/tf2-ps"
STEPS = 3000
RESOURCES = {"chief": "200m", "ps": "400m", "worker": "500m"}
MEMORY = "1Gi"
RUNS = 2
GOAL = 0.95
WAIT_S = 600
HAND_NAMESPACE = "hand-written"
JOBSET_API = "jobset.x-k8s.io/v1alpha2"


def stack_values() -> dict[str, Any]:
    return {
        "tfk8s:nodePools": [{"name": "servers", "nodes": [SERVER]}],
        "tfk8s:cluster": {
            "placement": "colocated",
            "image": tensorflow_image().reference,
            "ps": {"replicas": 2, "pool": "servers", "cpu": RESOURCES["ps"], "memory": MEMORY},
            "workers": {"replicas": 2, "pool": "servers", "cpu": RESOURCES["worker"], "memory": MEMORY},
            "chief": {"cpu": RESOURCES["chief"], "memory": MEMORY},
        },
        "tfk8s:program": {"source": SOURCE, "command": ["python", "train.py"], "args": ["--steps", str(STEPS)]},
    }


def hand_written() -> list[dict[str, Any]]:
    """What a team writes by hand for the same program: no tfk8s in it."""
    counts = {"chief": 1, "ps": 2, "worker": 2}
    hosts = {
        role: [f"program-{role}-0-{i}.program.{HAND_NAMESPACE}.svc:2222" for i in range(count)]
        for role, count in counts.items()
    }
    cluster = json.dumps(hosts, separators=(",", ":"))

    def job(role: str) -> dict[str, Any]:
        compose = (
            f"export TF_CONFIG='{{\"cluster\":{cluster},\"task\":{{\"type\":\"{role}\",\"index\":'$JOB_COMPLETION_INDEX'}}}}'; "
            f"exec python train.py --steps {STEPS}"
        )
        return {
            "name": role,
            "replicas": 1,
            "template": {"spec": {
                "completionMode": "Indexed",
                "completions": counts[role],
                "parallelism": counts[role],
                "backoffLimit": 0,
                "template": {"spec": {
                    "restartPolicy": "Never",
                    "nodeSelector": {"kubernetes.io/hostname": SERVER},
                    "securityContext": {"runAsNonRoot": True, "runAsUser": 1000, "runAsGroup": 1000},
                    "containers": [{
                        "name": "tensorflow",
                        "image": tensorflow_image().reference,
                        "command": ["sh", "-c", compose],
                        "workingDir": "/program",
                        "env": [{"name": "HOME", "value": "/tmp"}, {"name": "PYTHONUNBUFFERED", "value": "1"}],
                        "ports": [{"containerPort": 2222}],
                        "resources": {"requests": {"cpu": RESOURCES[role], "memory": MEMORY},
                                      "limits": {"memory": MEMORY}},
                        "volumeMounts": [{"name": "program", "mountPath": "/program", "readOnly": True}],
                    }],
                    "volumes": [{"name": "program", "configMap": {"name": "program"}}],
                }},
            }},
        }

    program = PROJECT_ROOT / SOURCE
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": HAND_NAMESPACE}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "program", "namespace": HAND_NAMESPACE},
         "data": {path.name: path.read_text() for path in sorted(program.iterdir()) if path.is_file()}},
        {"apiVersion": JOBSET_API, "kind": "JobSet", "metadata": {"name": "program", "namespace": HAND_NAMESPACE},
         "spec": {
             "network": {"enableDNSHostnames": True, "publishNotReadyAddresses": True},
             "successPolicy": {"operator": "Any", "targetReplicatedJobs": ["chief"]},
             "replicatedJobs": [job(role) for role in counts],
         }},
    ]


def run_once(api: client.ApiClient, label: str, namespace: str, stack: str, manifests: list[dict]) -> dict[str, float]:
    """Apply, wait for the JobSet to complete, read the chief's examples/s, delete."""
    custom, core = client.CustomObjectsApi(api), client.CoreV1Api(api)
    started = time.monotonic()
    apply_manifests(api, stack, manifests)
    jobset = next(m["metadata"]["name"] for m in manifests if m["kind"] == "JobSet")
    while True:
        status = custom.get_namespaced_custom_object("jobset.x-k8s.io", "v1alpha2", namespace, "jobsets", jobset).get("status", {})
        if status.get("terminalState") == "Completed":
            break
        if status.get("terminalState") == "Failed" or time.monotonic() - started > WAIT_S:
            raise RuntimeError(f"{label}: not Completed: {status}")
        time.sleep(0.5)
    seconds = time.monotonic() - started
    (chief,) = [p for p in core.list_namespaced_pod(namespace).items if "-chief-" in p.metadata.name and p.status.phase == "Succeeded"]
    said = core.read_namespaced_pod_log(chief.metadata.name, namespace)
    line = next(text for text in reversed(said.splitlines()) if "examples/s" in text)
    examples = float(line.split(" examples/s")[0].rsplit(" ", 1)[1])
    delete_manifests(api, stack, manifests)
    print(f"  {label}: Completed {seconds:.1f} s after the apply, {examples:.0f} examples/s ({line.strip()})", flush=True)
    return {"seconds": seconds, "examples_per_sec": examples}


def main() -> int:
    host.require_root()
    with tempfile.TemporaryDirectory() as stacks:
        stack = str(Path(stacks) / "Pulumi.bench-program.yaml")
        Path(stack).write_text(yaml.safe_dump({"config": stack_values()}, sort_keys=False))
        experiment = load_experiment(stack)
        render(experiment, Path(stacks) / "out")
        ours = rendered_objects(experiment, Path(stacks) / "out")
        runs: dict[str, Callable[[client.ApiClient], dict[str, float]]] = {
            "tfk8s program stack": lambda api: run_once(api, "tfk8s program stack", experiment.namespace,
                                                        experiment.stack, ours),
            "hand-written JobSet": lambda api: run_once(api, "hand-written JobSet", HAND_NAMESPACE, "hand-written",
                                                        hand_written()),
        }
        started = time.monotonic()
        lifecycle.up(CLUSTER, real=[SERVER], tie_to_parent=True)
        print(f"cluster with real node {SERVER} up in {time.monotonic() - started:.0f} s", flush=True)
        figures: dict[str, list[dict[str, float]]] = {label: [] for label in runs}
        try:
            api = api_client(CLUSTER.kubeconfig)
            for _ in range(RUNS):
                for label, run in runs.items():
                    figures[label].append(run(api))
        finally:
            lifecycle.down(CLUSTER)

    medians = {label: {key: statistics.median(run[key] for run in found) for key in found[0]} for label, found in figures.items()}
    print(f"\nthe same TF2 program ({SOURCE}, {STEPS} steps, chief + 2 PS + 2 workers on {SERVER}), median of {RUNS}")
    print(f"{'run':<24}{'to Completed (s)':>18}{'examples/s':>12}")
    for label, median in medians.items():
        print(f"{label:<24}{median['seconds']:>18.1f}{median['examples_per_sec']:>12.0f}")
    ours, hand = medians["tfk8s program stack"], medians["hand-written JobSet"]
    speed = ours["examples_per_sec"] / hand["examples_per_sec"]
    time_ratio = hand["seconds"] / ours["seconds"]
    met = speed >= GOAL and time_ratio >= GOAL
    print(f"examples/s tfk8s / hand-written: {speed:.2f}; time to Completed hand-written / tfk8s: {time_ratio:.2f}")
    print(f"goal both >= {GOAL}: {'met' if met else 'MISSED'}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
