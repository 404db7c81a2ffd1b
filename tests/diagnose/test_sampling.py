"""What `diagnose` reads of a running experiment over its window (components/live/diagnose.py): the
figures the bottleneck rules get, from the same sources as `top`, against a fake API server through
the real client, with a clock the test moves (no real waiting)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from types import SimpleNamespace
from typing import Callable, Iterator, Optional

import pytest

from components.live.cluster_access import with_cluster
from components.live.diagnose import Sampled, sample_experiment, sample_times
from components.live.diagnose_figures import NetworkCounter, network_rate, shard_bytes, step_time
from components.live.usage import cpu_allowed
from components.objects.loading import load_experiment
from components.plan.experiment import Experiment
from tests.live.fake_api import FakeCluster, forbidden, listed, not_found, serve, task_pods
from trainer.log_lines import event_line, progress_line

STACK = "scene1-case1-hot-none"  # 3 PS (cpu 200m), 2 workers (400m) and the chief (200m) on srv-00, colocated
NAMESPACE = "tf-scene1-case1-hot-none"
METRICS_PATH = f"/apis/metrics.k8s.io/v1beta1/namespaces/{NAMESPACE}/pods"
SUMMARY_PATH = "/api/v1/nodes/srv-00/proxy/stats/summary"
T0 = datetime(2026, 11, 24, 2, 30, tzinfo=timezone.utc)
# Each sample's CPU: ps-0 holds the unpartitioned table and works; the others idle.
CPU = {"chief-0": 0.05, "ps-0": 0.19, "ps-1": 0.01, "ps-2": 0.01, "worker-0": 0.3, "worker-1": 0.35}


class Clock:
    """The sampling clock: `sleep` moves it, and before each sample `before_sample(index)` sets what the
    cluster answers then; `read_s`: how long each sample's reading takes."""

    def __init__(self, before_sample: Callable[[int], None], read_s: float = 0.0) -> None:
        self.now, self.sleeps, self.read_s, self.before_sample = 100.0, [], read_s, before_sample

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        self.before_sample(len(self.sleeps) - 1)
        self.now += self.read_s


@pytest.fixture
def cluster(tmp_path) -> Iterator[FakeCluster]:
    yield from serve(tmp_path)


@pytest.fixture
def experiment() -> Experiment:
    return load_experiment(STACK)


def running(cluster: FakeCluster, experiment: Experiment, chief_log: str = "") -> dict[str, dict]:
    """Every task's pod running on srv-00, with the CPU request the stack gives its role."""
    pods = task_pods(experiment, {task.name: "srv-00" for group in experiment.groups for task in group.tasks})
    requests = {"chief": "200m", "ps": "200m", "worker": "400m", "evaluator": "200m"}
    for task, pod in pods.items():
        pod["spec"]["containers"][0]["resources"] = {"requests": {"cpu": requests[task.split("-")[0]], "memory": "1Gi"}}
        pod["status"]["containerStatuses"] = [{"name": "tensorflow", "restartCount": 0, "ready": True, "image": "i",
                                               "imageID": "", "state": {"running": {}}}]
    cluster.experiment_routes(experiment, pods, chief_log=chief_log)
    cluster.routes["/api/v1/nodes"] = listed("Node", [{"metadata": {"name": "srv-00"}}])
    cluster.routes["/api/v1/nodes/srv-00"] = (200, {"metadata": {"name": "srv-00"}, "status": {"allocatable": {"cpu": "3500m"}}})
    return pods


def pod_metrics(pods: dict[str, dict], cpu: dict[str, float], namespace: str = NAMESPACE) -> tuple[int, dict]:
    return listed("PodMetrics", [
        {"metadata": {"name": pods[task]["metadata"]["name"], "namespace": namespace},
         "timestamp": "2026-11-24T02:33:19Z", "window": "10.5s",
         "containers": [{"name": "tensorflow", "usage": {"cpu": f"{round(cores * 1e9)}n", "memory": "400000Ki"}}]}
        for task, cores in cpu.items()
    ])


def summary(pods: dict[str, dict], cpu: dict[str, float], at: datetime, network: dict[str, int]) -> tuple[int, dict]:
    """srv-00's Summary API document: each pod's CPU, and its network counters as read at `at`."""
    return 200, {"node": {"nodeName": "srv-00"}, "pods": [
        {"podRef": {"name": pods[task]["metadata"]["name"], "namespace": NAMESPACE},
         "cpu": {"usageNanoCores": round(cores * 1e9)}, "memory": {"workingSetBytes": 400 * 2**20},
         "network": {"time": at.strftime("%Y-%m-%dT%H:%M:%SZ"), "name": "eth0",
                     "rxBytes": network[task] // 2, "txBytes": network[task] - network[task] // 2}}
        for task, cores in cpu.items()
    ]}


def sampled(cluster: FakeCluster, experiment: Experiment, clock: Clock, seconds: float = 45.0) -> Sampled:
    result: dict[str, Sampled] = {}

    def action(api) -> int:
        result["sampled"] = sample_experiment(api, experiment, seconds, 5.0, clock, clock.sleep)
        return 0

    assert with_cluster(experiment, cluster.kubeconfig, None, action) == 0
    return result["sampled"]


def by_task(sampled: Sampled) -> dict:
    assert sampled.measured is not None
    return {task.task: task for task in sampled.measured.tasks}


def test_through_the_metrics_api_each_task_gets_its_cpu_at_every_sample_and_what_it_may_use(cluster, experiment):
    pods = running(cluster, experiment)

    def figures(index: int) -> None:
        # ps-0 a little busier at every sample: the series is the samples', in order.
        cluster.routes[METRICS_PATH] = pod_metrics(pods, {**CPU, "ps-0": CPU["ps-0"] + index / 1000})

    result = sampled(cluster, experiment, Clock(figures))
    tasks = by_task(result)
    assert sorted(tasks) == ["chief-0", "ps-0", "ps-1", "ps-2", "worker-0", "worker-1"]
    assert tasks["ps-0"].cpu_series == tuple(round(0.19 + index / 1000, 3) for index in range(10))
    assert tasks["worker-1"].cpu_series == (0.35,) * 10
    assert tasks["ps-0"].cpu_allowed == 0.2 and tasks["worker-0"].cpu_allowed == 0.4  # the requests
    assert tasks["ps-0"].role == "ps" and tasks["ps-0"].node == "srv-00" and tasks["ps-0"].running
    assert tasks["ps-0"].network_bytes_per_s is None  # the metrics API counts no bytes
    measured = result.measured
    assert (measured.seconds, measured.samples, measured.source) == (45.0, 10, "metrics.k8s.io")
    assert [(s.server, s.cores) for s in measured.servers] == [("srv-00", 3.5)]
    assert any(note.startswith("network: not read: only the kubelet summary counts a pod's bytes") for note in result.window.notes)
    assert cluster.asked_for("/proxy/") == [], "no node proxy where the metrics API answers"


def test_where_the_metrics_api_is_absent_the_kubelet_summary_gives_cpu_and_network(cluster, experiment):
    pods = running(cluster, experiment)
    cluster.routes[METRICS_PATH] = not_found()

    def figures(index: int) -> None:
        # The kubelet reads a pod's counters every 10 s: samples 0-1 read the same, then 2-3, ...
        read_at = T0 + timedelta(seconds=10 * (index // 2))
        sent = {task: 1_000_000 + 40_000 * 10 * (index // 2) for task in CPU}  # 40 kB/s each
        sent["ps-0"] = 5_000_000 + 2_500_000 * 10 * (index // 2)  # the hot PS: 2.5 MB/s
        cluster.routes[SUMMARY_PATH] = summary(pods, CPU, read_at, sent)

    tasks = by_task(result := sampled(cluster, experiment, Clock(figures)))
    assert result.measured.source == "kubelet summary"
    assert tasks["ps-0"].network_bytes_per_s == 2_500_000.0 and tasks["worker-0"].network_bytes_per_s == 40_000.0
    assert tasks["ps-0"].cpu_series == (0.19,) * 10
    assert any("instead of the metrics API: the cluster serves no metrics.k8s.io" in note for note in result.window.notes)
    assert not any(note.startswith("network: not read") for note in result.window.notes)


def test_a_task_whose_pod_was_replaced_or_not_running_in_the_window_did_not_run_it_whole(cluster, experiment):
    pods = running(cluster, experiment)
    first_worker = dict(pods["worker-0"]["metadata"])

    def figures(index: int) -> None:
        cluster.routes[METRICS_PATH] = pod_metrics(pods, CPU)
        if index == 4:  # worker-0's pod replaced by a new one
            pods["worker-0"]["metadata"] = {**first_worker, "name": "tf-worker-0-0-0-new",
                                            "creationTimestamp": (T0 + timedelta(hours=1)).isoformat()}
            cluster.experiment_routes(experiment, pods)
        if index == 6:  # worker-1 restarted in place
            pods["worker-1"]["status"]["containerStatuses"][0]["restartCount"] = 1
            cluster.experiment_routes(experiment, pods)

    tasks = by_task(sampled(cluster, experiment, Clock(figures)))
    assert not tasks["worker-0"].running and not tasks["worker-1"].running
    assert tasks["ps-0"].running and tasks["chief-0"].running


def test_where_nodes_may_not_be_read_the_servers_cores_are_unknown_and_the_permission_is_named(cluster, experiment):
    pods = running(cluster, experiment)
    cluster.routes["/api/v1/nodes"] = forbidden("list", "nodes")
    cluster.routes["/api/v1/nodes/srv-00"] = forbidden("get", "nodes", name="srv-00")
    result = sampled(cluster, experiment, Clock(lambda index: cluster.routes.update({METRICS_PATH: pod_metrics(pods, CPU)})))
    assert [(s.server, s.cores) for s in result.measured.servers] == [("srv-00", None)]
    note = next(note for note in result.window.notes if note.startswith("servers' CPU not read"))
    assert "`get` on `nodes` cluster-wide for system:serviceaccount:ml:alice" in note


def test_an_experiment_that_ends_in_the_window_is_diagnosed_from_the_samples_before(cluster, experiment):
    pods = running(cluster, experiment)
    jobset_path = next(path for path in cluster.routes if "/jobsets/" in path)

    def figures(index: int) -> None:
        cluster.routes[METRICS_PATH] = pod_metrics(pods, CPU)
        if index == 3:
            cluster.routes[jobset_path] = (200, {"metadata": {"name": experiment.names.jobset}, "spec": {},
                                                 "status": {"terminalState": "Completed"}})

    clock = Clock(figures)
    result = sampled(cluster, experiment, clock)
    assert result.window.ended == "Succeeded" and result.phase == "Succeeded"
    assert result.measured.samples == 3 and result.measured.seconds == 10.0
    assert len(clock.sleeps) == 4, "no sample after the end"


def test_an_experiment_that_ended_before_the_first_sample_has_nothing_measured(cluster, experiment):
    running(cluster, experiment)
    jobset_path = next(path for path in cluster.routes if "/jobsets/" in path)
    cluster.routes[jobset_path] = (200, {"metadata": {"name": "x"}, "spec": {}, "status": {"terminalState": "Failed"}})
    result = sampled(cluster, experiment, Clock(lambda index: None))
    assert result.measured is None and result.window.ended == "Failed" and result.window.samples == ()


def test_samples_keep_to_the_clock_however_long_a_reading_takes(cluster, experiment):
    pods = running(cluster, experiment)
    clock = Clock(lambda index: cluster.routes.update({METRICS_PATH: pod_metrics(pods, CPU)}), read_s=1.5)
    result = sampled(cluster, experiment, clock, seconds=30.0)
    assert clock.sleeps == [0.0] + [3.5] * 6, "each wait is the rest of its 5 s"
    assert [round(sample.at_s, 1) for sample in result.window.samples] == [1.5, 6.5, 11.5, 16.5, 21.5, 26.5, 31.5]


def test_tfk8s_trainer_gets_its_step_time_from_the_chiefs_progress_lines_in_the_window(cluster, experiment):
    stamp = lambda seconds: (T0 + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S.%f000Z")  # noqa: E731
    log = "\n".join([
        f"{stamp(0)} {progress_line(100, 0.6, 900.0)}",
        f"{stamp(1)} {event_line('checkpoint', step=100)}",
        f"{stamp(20)} {progress_line(150, 0.5, 910.0)}",
        f"{stamp(40)} {progress_line(200, 0.4, 905.0)}",
    ]) + "\n"
    pods = running(cluster, experiment, chief_log=log)
    result = sampled(cluster, experiment, Clock(lambda index: cluster.routes.update({METRICS_PATH: pod_metrics(pods, CPU)})))
    assert result.measured.trainer is not None
    assert result.measured.trainer.step_time_s == 0.4  # 40 s for 100 steps
    assert result.measured.trainer.ps_shard_bytes == {}  # no summary before the chief finished
    log_reads = [path for path in cluster.asked if path.endswith("/log")]
    assert log_reads, "the chief's log is read"


@pytest.mark.parametrize("seconds, every, offsets", [
    pytest.param(45, 5, [0, 5, 10, 15, 20, 25, 30, 35, 40, 45], id="45 s: ten samples"),
    pytest.param(32, 5, [0, 5, 10, 15, 20, 25, 30, 32], id="the window's end is sampled too"),
    pytest.param(30, 5, [0, 5, 10, 15, 20, 25, 30], id="30 s: seven"),
])
def test_sample_times(seconds, every, offsets):
    assert sample_times(seconds, every) == offsets


def container(limits: Optional[dict] = None, requests: Optional[dict] = None) -> SimpleNamespace:
    return SimpleNamespace(resources=SimpleNamespace(limits=limits, requests=requests))


@pytest.mark.parametrize("containers, allowed", [
    pytest.param([container(requests={"cpu": "200m"})], 0.2, id="a request"),
    pytest.param([container(limits={"cpu": "2"}, requests={"cpu": "500m"})], 2.0, id="a limit over a request"),
    pytest.param([container(requests={"cpu": "1"}), container(limits={"cpu": "250m"})], 1.25, id="summed over containers"),
    pytest.param([container(requests={"memory": "1Gi"}), container()], None, id="no CPU given: unbounded"),
    pytest.param([container(limits={"cpu": "0"}, requests={"cpu": "1"})], 0.0, id="a limit of 0 is a limit"),
])
def test_what_a_pod_may_use(containers, allowed):
    assert cpu_allowed(containers) == allowed


@pytest.mark.parametrize("counters, rate", [
    pytest.param([NetworkCounter(0, 100), NetworkCounter(10, 1100)], 100.0, id="two readings"),
    pytest.param([None, NetworkCounter(0, 100), None, NetworkCounter(20, 100)], 0.0, id="silent, with gaps"),
    pytest.param([NetworkCounter(0, 100)], None, id="one reading"),
    pytest.param([NetworkCounter(5, 100), NetworkCounter(5, 100)], None, id="the same reading twice"),
    pytest.param([NetworkCounter(0, 5000), NetworkCounter(10, 100)], None, id="counters back to 0: a new pod"),
])
def test_network_rate(counters, rate):
    assert network_rate(counters) == rate


def test_no_step_time_without_two_progress_lines_at_different_steps():
    line = f"2026-11-24T02:30:00Z {progress_line(100, 0.6, 900.0)}"
    assert step_time("") is None and step_time(line) is None
    assert step_time(line + "\n" + line.replace("02:30:00", "02:30:09")) is None
    assert step_time(progress_line(100, 0.6, 900.0)) is None, "no timestamps: no time"


def test_the_bytes_each_ps_holds_come_from_the_chiefs_summary():
    summary = event_line("summary", steps=600, bytes_per_ps=[256_000_000, 1_024, 1_024])
    assert shard_bytes(f"2026-11-24T02:30:00.5Z {summary}") == {"ps-0": 256_000_000, "ps-1": 1_024, "ps-2": 1_024}
    assert shard_bytes(summary) == shard_bytes(f"2026-11-24T02:30:00.5Z {summary}")
    assert shard_bytes(event_line("summary", steps=1)) == {} and shard_bytes("") == {}
