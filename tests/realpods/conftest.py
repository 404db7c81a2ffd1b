"""Experiments in real pods: two real kubelet nodes (containerd, runc, pod bridge, CoreDNS).

The servers srv-00 and srv-01 are real nodes of one local cluster for the
whole session. It needs the toolchain, the node images and root; without them
every test here fails with the command that provides them, so CI cannot pass
without having run pods. At the end the cluster is stopped and the host is
checked to be as it was: no process, mount, bridge, cgroup, iptables chain,
nftables table, bound nfqueue or sysctl of ours left.
"""

from __future__ import annotations

import contextlib
import copy
import gc
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

import pytest
from kubernetes import client
from kubernetes.stream import stream
from kubernetes.utils import parse_quantity

from components.live.status import read_jobset
from components.objects.loading import load_experiment
from components.objects.render import render
from components.plan import labels as L
from tests.harness import reset_pulumi
from trainer.log_lines import read_event
from tools.localcluster import host, host_claim, lifecycle, netfilter, paths, realnodes, training_operator
from tools.localcluster.client import api_client
from tools.localcluster.experiments import apply_manifests, delete_manifests, rendered_objects
from tools.localcluster.experiment_pods import wait_for_pods
from tools.localcluster.podlogs import timestamped_log
from tools.localcluster.worker_loss import task_pod
from tools.nodeimage.images import tensorflow_image

REAL_CLUSTER = paths.ClusterDir(paths.CLUSTER_ROOT / "realpods")
REAL_SERVERS = ("srv-00", "srv-01")
POD_WAIT_S = 180.0
TRAIN_WAIT_S = 300.0
# What a user types to have the chief finish now (docs/local-cluster.md): SIGUSR1 to its PID 1.
FINISH_COMMAND = ("sh", "-c", "kill -USR1 1")
# A run the test ends itself once it saw what it waits for: never a step count raced against it.
UNTIL_STOPPED = 10**7

# Sized for two real nodes of this machine (2 CPUs each): a chief, up to 2 PS and 2 workers. Each
# task's TensorFlow start is 6 to 9 CPU-seconds: a test runs as few tasks as what it shows needs.
# Both real nodes run on this one host and each advertises all of its cores, so the scheduler would
# place twice what the host has: what a test runs at once is checked against the host itself
# (`within_the_host`), and a test that runs more says why it may (the `oversubscribed` mark).
SMALL_CLUSTER = {
    "image": tensorflow_image().reference,
    "chief": {"cpu": "300m", "memory": "1Gi"},
}
SMALL_TRAINER = {"embeddingRows": 20000, "batchSize": 128, "partition": "auto"}


LIFECYCLE_TESTS = "test_real_node_lifecycle.py"
HOST_CORES = os.cpu_count() or 1
# What the pods may hold of the host's memory: the rest is the control plane's, the kubelets',
# containerd's and the tests' that run beside the real pods (make test's below-real-pods).
HOST_MEMORY_SHARE = 0.75
OVERSUBSCRIBED = "oversubscribed"  # the mark (pytest.ini)


def pytest_collection_modifyitems(items):
    """The failed-start test runs first, before the session's real cluster starts: one set of
    real nodes owns the pod bridge at a time (a stable sort keeps every other test's order)."""
    items.sort(key=lambda item: item.path.name != LIFECYCLE_TESTS)


@pytest.fixture(autouse=True)
def _reset_pulumi_runtime():
    yield
    reset_pulumi()
    gc.enable()


def scaled_to_real_nodes(
    ps_pool: str, worker_pool: str, trainer: dict[str, Any], *, ps: int = 2, workers: int = 2
) -> Callable[[dict], None]:
    """A seed stack's shape on the real servers: `ps` PS, `workers` workers, the local image, a small model."""

    def edit(values: dict[str, Any]) -> None:
        pools = {pool["name"]: pool for pool in values["tfk8s:nodePools"]}
        pools[ps_pool]["nodes"] = [REAL_SERVERS[0]]
        pools[worker_pool]["nodes"] = [REAL_SERVERS[1] if worker_pool != ps_pool else REAL_SERVERS[0]]
        cluster = values["tfk8s:cluster"]
        cluster.update(copy.deepcopy(SMALL_CLUSTER))
        cluster["ps"] = {"replicas": ps, "pool": ps_pool, "cpu": "300m"}
        cluster["workers"] = {"replicas": workers, "pool": worker_pool, "cpu": "400m", "memory": "1Gi"}
        values["tfk8s:trainer"] = {**SMALL_TRAINER, **trainer}

    return edit


@dataclass
class TaskLog:
    """A container's log as the kubelet keeps it: (timestamp, line) pairs."""

    lines: list[tuple[float, str]]

    def events(self, name: Optional[str] = None) -> list[tuple[float, dict]]:
        found = []
        for stamp, line in self.lines:
            event = read_event(line)
            if event is not None and (name is None or event["event"] == name):
                found.append((stamp, event))
        return found

    def first(self, text: str, after: float = 0.0) -> Optional[float]:
        """When the first line holding `text` was logged (after `after`, seconds since the epoch)."""
        return next((stamp for stamp, line in self.lines if text in line and stamp > after), None)


@dataclass(frozen=True)
class HostLoad:
    """What the pods on the real nodes request at once, against the one host both nodes run on."""

    cpu_by_node: dict[str, float]
    memory_bytes: float

    @property
    def cpu(self) -> float:
        return sum(self.cpu_by_node.values())

    def over(self) -> Optional[str]:
        """What the pods request past the host; None where they fit."""
        memory_limit = HOST_MEMORY_SHARE * os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        nodes = ", ".join(f"{node} {cpu:.2f}" for node, cpu in sorted(self.cpu_by_node.items()))
        if self.cpu > HOST_CORES:
            return f"{self.cpu:.2f} CPUs ({nodes}) on the host's {HOST_CORES} cores"
        if self.memory_bytes > memory_limit:
            return f"{self.memory_bytes / 2**30:.1f} GiB of memory, past {memory_limit / 2**30:.1f} GiB of the host's"
        return None


def host_load(core: client.CoreV1Api) -> HostLoad:
    """The CPU and memory requests of every pod on the real nodes that has not ended."""
    cpu_by_node: dict[str, float] = {}
    memory = 0.0
    for pod in core.list_pod_for_all_namespaces().items:
        if pod.spec.node_name not in REAL_SERVERS or (pod.status and pod.status.phase in ("Succeeded", "Failed")):
            continue
        for container in pod.spec.containers:
            requests = (container.resources and container.resources.requests) or {}
            cpu_by_node[pod.spec.node_name] = cpu_by_node.get(pod.spec.node_name, 0.0) + float(
                parse_quantity(requests.get("cpu", "0"))
            )
            memory += float(parse_quantity(requests.get("memory", "0")))
    return HostLoad(cpu_by_node, memory)


@dataclass
class RealCluster:
    kubeconfig: Path
    stacks_dir: Path
    # Why the running test may request more than the host has (its `oversubscribed` mark); None: it may not.
    oversubscribed: Optional[str] = None

    def within_the_host(self) -> None:
        """Fail where the pods now running request more than the host has and the test does not say why
        it may: two real nodes on one host share its cores, and a test tuned on an idle machine fails
        on a busier or slower one (a TFJob run beside its import did, its chief exiting 1)."""
        over = host_load(self.core).over()
        if over is not None and self.oversubscribed is None:
            pytest.fail(
                f"the pods running now request {over}: run the experiments one after the other, or mark the"
                f" test @pytest.mark.{OVERSUBSCRIBED}(why) with what each needs and why its checks hold"
            )

    @property
    def api(self) -> client.ApiClient:
        return api_client(self.kubeconfig)

    @property
    def core(self) -> client.CoreV1Api:
        return client.CoreV1Api(self.api)

    def apply(self, stack: str, out: Path, wait: bool = True) -> None:
        experiment = load_experiment(stack)
        render(experiment, out, force=True)  # the test's folder may hold its other files
        apply_manifests(self.api, experiment.stack, rendered_objects(experiment, out))
        if wait:
            wait_for_pods(self.api, experiment, POD_WAIT_S)
            self.within_the_host()

    @contextlib.contextmanager
    def running(self, stack: str, out: Path) -> Iterator[str]:
        """Apply `stack` and wait for its pods; delete it afterwards. Yields its namespace."""
        self.apply(stack, out)
        try:
            yield load_experiment(stack).namespace
        finally:
            self.delete(stack, out)

    def delete(self, stack: str, out: Path) -> None:
        """Delete `stack`'s objects; it returns once every pod of the experiment is gone, so that the
        next test has the CPU back. The namespace controller's sweep goes on meanwhile (a whole delete
        took 6.4 to 7.9 s): an apply into a namespace still terminating waits for its end."""
        experiment = load_experiment(stack)
        render(experiment, out, force=True)  # the test's folder may hold its other files
        delete_manifests(self.api, experiment.stack, rendered_objects(experiment, out), wait_for_namespace=False)

    def pods(self, stack: str, role: str) -> list[Any]:
        experiment = load_experiment(stack)
        selector = L.selector_text(experiment.stack, (role,))
        return self.core.list_namespaced_pod(experiment.namespace, label_selector=selector).items

    def log(self, namespace: str, pod: str, previous: bool = False) -> TaskLog:
        return TaskLog(timestamped_log(self.core, namespace, pod, previous=previous))

    def chief_summary(self, stack: str, timeout_s: float = TRAIN_WAIT_S) -> tuple[dict, Any]:
        """Wait until the chief's Job completes; its summary and its pod."""
        experiment = load_experiment(stack)
        batch = client.BatchV1Api(self.api)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            jobs = batch.list_namespaced_job(experiment.namespace, label_selector=f"{L.WORKLOAD}=chief").items
            if not jobs:  # a JobSet restarting the experiment recreates it
                time.sleep(1.0)
                continue
            (job,) = jobs
            if job.status.succeeded:
                pod = next(p for p in self.pods(stack, "chief") if p.status.phase == "Succeeded")
                summary = self.log(experiment.namespace, pod.metadata.name).events("summary")[-1][1]
                return summary, pod
            if job.status.failed and job.status.failed > experiment.config.cluster.chief.restarts:
                pytest.fail(f"the chief's Job failed: {job.status}")
            time.sleep(1.0)
        pods = [(p.metadata.name, p.status.phase) for p in self.pods(stack, "chief")]
        pytest.fail(f"the chief did not complete within {timeout_s:.0f} s: {pods}")

    def jobset(self, stack: str) -> dict:
        return read_jobset(self.api, load_experiment(stack))

    def task_pod(self, stack: str, role: str, index: int) -> Any:
        """The current pod of task `<role>-<index>`."""
        return task_pod(self.core, load_experiment(stack), role, index)

    def running_chief(self, stack: str, other_than: Optional[str] = None) -> Any:
        """The chief's running pod (a new one, when `other_than` names the one it replaced)."""
        deadline = time.monotonic() + POD_WAIT_S
        while time.monotonic() < deadline:
            for pod in self.pods(stack, "chief"):
                if pod.status.phase == "Running" and pod.metadata.name != other_than and pod.metadata.deletion_timestamp is None:
                    return pod
            time.sleep(0.5)
        pytest.fail(f"no running chief pod{f' other than {other_than}' if other_than else ''} within {POD_WAIT_S:.0f} s")

    def finish(self, stack: str) -> None:
        """Ask the running chief to finish where it stands, as a user would (SIGUSR1 to its PID 1)."""
        chief = self.running_chief(stack)
        stream(
            self.core.connect_get_namespaced_pod_exec, chief.metadata.name, chief.metadata.namespace,
            command=list(FINISH_COMMAND), stderr=True, stdout=True, stdin=False, tty=False,
        )

    def running_logs(self, stack: str, role: str, other_than: Optional[str] = None):
        """The logs of `role`'s running pods (not pod `other_than`); a pod still creating its container has none."""
        namespace = load_experiment(stack).namespace
        for pod in self.pods(stack, role):
            if pod.status.phase == "Running" and pod.metadata.name != other_than:
                try:
                    yield self.log(namespace, pod.metadata.name)
                except client.ApiException:
                    continue  # the container is starting

    def wait_for_event(
        self, stack: str, event: str, timeout_s: float = TRAIN_WAIT_S, other_than: Optional[str] = None, **match: Any
    ) -> dict:
        """Wait until the running chief (not pod `other_than`) logs `event` whose fields match (a value,
        or a predicate); the event."""

        def matches(found: dict) -> bool:
            return all(value(found.get(key)) if callable(value) else found.get(key) == value for key, value in match.items())

        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for log in self.running_logs(stack, "chief", other_than):
                for _, found in log.events(event):
                    if matches(found):
                        return found
            time.sleep(0.5)
        pytest.fail(f"the chief logged no {event} {match} within {timeout_s:.0f} s")

    def wait_for_log(self, stack: str, role: str, text: str, timeout_s: float = POD_WAIT_S) -> None:
        """Wait until a running pod of `role` has logged `text`."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if any(log.first(text) is not None for log in self.running_logs(stack, role)):
                return
            time.sleep(0.5)
        pytest.fail(f"no {role} pod logged '{text}' within {timeout_s:.0f} s")


def host_snapshot() -> dict[str, Any]:
    """What the tests must leave as they found it."""
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    return {
        "sysctls": {name: Path("/proc/sys", name).read_text().strip() for name in host.CHANGED_SYSCTLS},
        "iptables": {table: host._chains(table) for table in host.IPTABLES_TABLES},
        "nftables": _nftables_tables(),
        "nfqueues": sorted(netfilter.bound_queues()),
        "links": sorted(line.split(":")[1].strip().split("@")[0] for line in links.splitlines()),
        "mounts": [str(p) for p in host.mounts_under(paths.CLUSTER_ROOT)],
        "cgroups": sorted(str(p) for h in host.cgroup_hierarchies() for p in h.glob("tfk8s-*")),
        "folders": {folder: host._entries(Path(folder)) for folder in host.FIXED_HOST_FOLDERS},
        "processes": sorted(_our_processes()),
        "claim folder": host_claim.CLAIM.parent.exists(),
    }


def _nftables_tables() -> list[str]:
    """Every nftables table but iptables-nft's own (kubelet's iptables calls make those where they
    are missing, and they stay, empty of its chains, which "iptables" compares)."""
    iptables_families = {family for family, name in netfilter.FAMILIES.items() if name in ("ip", "ip6")}
    return [
        str(table)
        for table in netfilter.tables()
        if not (table.family in iptables_families and table.name in (*host.IPTABLES_TABLES, "raw", "security"))
    ]


def _our_processes() -> list[str]:
    """Processes that name the cluster folder or the toolchain: control plane, kubelets,
    containerd and its shims (a pod's processes keep its node's cgroup, checked apart)."""
    found = []
    markers = (str(paths.CLUSTER_ROOT).encode(), str(paths.TOOLS_BIN).encode())
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if any(marker in command for marker in markers):
            words = command.replace(b"\0", b" ").decode(errors="replace")
            found.append(f"{entry.name} {words[:120]}")
    return found


def require_real_node_prerequisites() -> None:
    """Fail (not skip) without what real nodes need: CI must not pass without having run pods."""
    # Kubeflow's training operator too: the migration test runs a TFJob beside its import.
    needed = (*paths.BINARIES, training_operator.NAME)
    missing = [f"{name} (make toolchain)" for name in needed if not (paths.TOOLS_BIN / name).is_file()]
    missing += realnodes.missing_prerequisites()
    if os.geteuid() != 0:
        missing.append("root (containerd, kubelet, a bridge and cgroups)")
    if missing:
        pytest.fail("real pods need: " + "; ".join(missing))


@pytest.fixture(scope="session")
def real_cluster(tmp_path_factory) -> RealCluster:
    require_real_node_prerequisites()
    before = host_snapshot()
    stacks_dir = tmp_path_factory.mktemp("stacks")
    lifecycle.up(REAL_CLUSTER, real=REAL_SERVERS, tie_to_parent=True, say=print, tfjob=True)
    try:
        yield RealCluster(REAL_CLUSTER.kubeconfig, stacks_dir)
    finally:
        lifecycle.down(REAL_CLUSTER)
        after = host_snapshot()
        assert after == before, "the real nodes left the host changed"


@pytest.fixture(autouse=True)
def _host_budget(request):
    """The running test's `oversubscribed` reason, for RealCluster.within_the_host."""
    if "real_cluster" not in request.fixturenames:
        yield
        return
    cluster = request.getfixturevalue("real_cluster")
    mark = request.node.get_closest_marker(OVERSUBSCRIBED)
    cluster.oversubscribed = mark.args[0] if mark else None
    yield
    cluster.oversubscribed = None


def local_volume_folder(cluster: RealCluster) -> Path:
    """The host folder of the local_volume fixture's PersistentVolume."""
    return Path(cluster.kubeconfig).parent / "volumes" / "checkpoints"


@pytest.fixture
def local_volume(real_cluster):
    """A StorageClass and a local PersistentVolume on srv-00, as an administrator would provide."""
    storage = client.StorageV1Api(real_cluster.api)
    folder = local_volume_folder(real_cluster)
    shutil.rmtree(folder, ignore_errors=True)  # an earlier test's checkpoints would be resumed from
    folder.mkdir(parents=True)
    storage.create_storage_class(
        {
            "metadata": {"name": "tfk8s-local"},
            "provisioner": "kubernetes.io/no-provisioner",
            "volumeBindingMode": "WaitForFirstConsumer",
            "reclaimPolicy": "Retain",
        }
    )
    real_cluster.core.create_persistent_volume(
        {
            "metadata": {"name": "checkpoints-srv-00"},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"],
                "persistentVolumeReclaimPolicy": "Retain",
                "storageClassName": "tfk8s-local",
                "local": {"path": str(folder)},
                "nodeAffinity": {
                    "required": {
                        "nodeSelectorTerms": [
                            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [REAL_SERVERS[0]]}]}
                        ]
                    }
                },
            },
        }
    )
    yield "tfk8s-local"
    real_cluster.core.delete_persistent_volume("checkpoints-srv-00")
    storage.delete_storage_class("tfk8s-local")
    # The volume stays while a claim in a namespace still terminating holds it (its protection
    # finalizer): the next test makes one of the same name.
    deadline = time.monotonic() + POD_WAIT_S
    while any(pv.metadata.name == "checkpoints-srv-00" for pv in real_cluster.core.list_persistent_volume().items):
        assert time.monotonic() < deadline, f"volume checkpoints-srv-00 still there after {POD_WAIT_S:.0f} s"
        time.sleep(0.5)
