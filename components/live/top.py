"""`python -m components top <stack>`: each task's CPU and memory, the PS imbalance, the chief's progress.

CPU and memory come from the kubelet's Summary API, read through the API
server's node proxy (`/api/v1/nodes/<node>/proxy/stats/summary`), one request
per node the experiment runs on. Why the Summary API and not the metrics API
(metrics.k8s.io): every kubelet serves it, while the metrics API needs
metrics-server installed, which many training clusters (and tfk8s's local
cluster) do not have; both carry the same figures (metrics-server reads them
from the kubelet). It needs the `get` verb on `nodes/proxy`, and no port beyond
the API server's. A node without a kubelet (kwok) or whose kubelet does not
answer is named as reporting no metrics: its tasks show no figures, not zeros.

The progress is the chief's last progress line (or its summary once it
finished), read from its log through the API server, against the steps the
stack asks for.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any, Callable, Optional, TextIO

from components.objects.api_errors import api_error_text
from components.live.status import pod_log, read_status, with_cluster
from components.live.usage import PodUsage, TaskUsage, TopView, chief_progress, pod_usage, top_text
from components.plan.experiment import Experiment

KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"
SUMMARY_TIMEOUT_S = 10.0
# Enough of the chief's log to hold its last progress line between checkpoint and worker events.
CHIEF_LOG_LINES = 40


class NodeMetricsUnavailable(Exception):
    """A node serves no Summary API; the message says why."""


def node_summary(core: Any, node: str) -> dict[str, Any]:
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    try:
        response = core.connect_get_node_proxy_with_path(
            node, "stats/summary", _preload_content=False, _request_timeout=SUMMARY_TIMEOUT_S
        )
        return json.loads(response.data)
    except (ApiException, HTTPError, ValueError) as error:
        raise NodeMetricsUnavailable(_why_no_metrics(core, node, error)) from None


def _why_no_metrics(core: Any, node: str, error: Exception) -> str:
    from kubernetes.client.exceptions import ApiException

    try:
        annotations = core.read_node(node).metadata.annotations or {}
    except ApiException:
        annotations = {}
    if KWOK_NODE_ANNOTATION in annotations:
        return "a kwok node (no kubelet, so no Summary API)"
    if isinstance(error, ApiException):
        said = api_error_text(error.status, error.reason, error.body)
        return f"its kubelet's Summary API did not answer through the API server ({said})"
    return f"its kubelet's Summary API did not answer through the API server ({error})"


def read_top(api: Any, experiment: Experiment) -> TopView:
    from kubernetes import client

    core = client.CoreV1Api(api)
    status = read_status(api, experiment)
    usage: dict[tuple[str, str], PodUsage] = {}
    without_metrics: dict[str, str] = {}
    for node in sorted({t.node for t in status.tasks if t.node is not None}):
        try:
            usage.update(pod_usage(node_summary(core, node)))
        except NodeMetricsUnavailable as why:
            without_metrics[node] = str(why)
    tasks = []
    for task in status.tasks:
        pod = status.pods.get(task.task)
        found = usage.get((experiment.namespace, pod.metadata.name)) if pod is not None and task.node else None
        tasks.append(
            TaskUsage(
                task.task,
                task.node,
                found.cpu_cores if found is not None else None,
                found.memory_bytes if found is not None else None,
            )
        )
    # The task that reports progress: the chief, or worker 0 where it acts as chief (done: workers).
    reporter = status.pods.get("chief-0") or status.pods.get("worker-0")
    steps_asked = experiment.config.trainer.steps if experiment.program is None else None
    progress = chief_progress(pod_log(core, reporter, lines=CHIEF_LOG_LINES), steps_asked)
    return TopView(
        experiment.stack, experiment.namespace, status.phase.name, status.phase.detail, tasks, progress, without_metrics
    )


def watch(
    read: Callable[[], TopView], every_s: Optional[float], as_json: bool, out: Optional[TextIO] = None
) -> int:
    """Print the view once, or every `every_s` seconds until the experiment ends. 0 unless it failed.
    `out`: standard output as it is when called (a default bound at import would keep the one of then)."""
    out = out or sys.stdout
    clear = "\033[H\033[J" if every_s and not as_json and out.isatty() else ""
    while True:
        view = read()
        if as_json:
            # One object per line under --watch, so that a reader can take each as it comes.
            print(json.dumps(view.to_json(), indent=None if every_s else 2), file=out, flush=True)
        else:
            print(clear + top_text(view) + ("\n" if every_s and not clear else ""), file=out, flush=True)
        if not every_s or view.ended:
            break
        time.sleep(every_s)
    if every_s and not as_json:
        detail = f" ({view.phase_detail})" if view.phase_detail else ""
        print(f"the experiment ended: {view.phase}{detail}", file=out, flush=True)
    return 1 if view.phase == "Failed" else 0


def cluster_top(
    experiment: Experiment, kubeconfig: Optional[str], context: Optional[str], every_s: Optional[float], as_json: bool
) -> int:
    return with_cluster(experiment, kubeconfig, context, lambda api: watch(lambda: read_top(api, experiment), every_s, as_json))
