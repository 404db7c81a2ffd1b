"""`python -m components top <stack>`: each task's CPU and memory, the PS imbalance, the chief's progress.

CPU and memory come from one of two sources, and `top` says which it used
(`metrics_source` in `top --json`):

- the metrics API (`metrics.k8s.io`, served by metrics-server): one namespaced
  `list` of `pods.metrics.k8s.io` in the experiment's namespace, a right the
  namespace's `view`, `edit` and `admin` roles carry (metrics-server's
  aggregated reader role);
- where that API is absent (no APIService: 404; metrics-server down: 503), the
  kubelet's Summary API, read through the API server's node proxy
  (`/api/v1/nodes/<node>/proxy/stats/summary`), one request per node the
  experiment runs on. It needs `get` on `nodes/proxy`, cluster-wide, which
  Kubernetes' RBAC good practices warn also allows running commands in every
  pod on the node: only where the metrics API is absent is it asked for.

Both carry the same figures (metrics-server reads them from the kubelet).
Where neither can be read, `top` says why (a 403 names the missing permission)
and still shows the tasks and the progress. A node without a kubelet (kwok) or
whose kubelet does not answer is named as reporting no metrics: its tasks show
no figures, not zeros.

The progress is the chief's last progress line (or its summary once it
finished), read from its log through the API server, against the steps the
stack asks for.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, TextIO, cast

from ..objects.api_errors import api_error_text, missing_permission, status_of
from ..plan.experiment import Experiment
from ..plan.planner import Task
from ..spec.task_roles import EVALUATOR
from .cluster_access import with_cluster
from .status import ExperimentStatus, group_served, pod_log, read_status
from .usage import (
    KUBELET_SUMMARY,
    METRICS_API,
    PodKey,
    PodUsage,
    TaskUsage,
    TopView,
    chief_progress,
    cpu_allowed,
    last_evaluation,
    pod_metrics_usage,
    pod_usage,
    top_text,
)

KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"
SUMMARY_TIMEOUT_S = 10.0
METRICS_API_VERSION = "v1beta1"
# Enough of the chief's log to hold its last progress line between checkpoint and worker events.
CHIEF_LOG_LINES = 40


class NodeMetricsUnavailable(Exception):
    """A node serves no Summary API; the message says why."""


class UsageUnreadable(Exception):
    """Neither source of CPU and memory may be read; the message says why."""


class MetricsApiAbsent(Exception):
    """The cluster serves no metrics API; the message says why."""


class SummaryForbidden(Exception):
    """The user may not read the kubelets' Summary API; the message is the API server's refusal."""


@dataclass(frozen=True)
class Usage:
    """What one source said: each pod's figures, the nodes that reported none, and which source it was."""

    source: Optional[str]
    pods: dict[PodKey, PodUsage] = field(default_factory=dict)
    without_metrics: dict[str, str] = field(default_factory=dict)
    unreadable: Optional[str] = None
    metrics_api_absent: Optional[str] = None


def metrics_api_usage(api: Any, namespace: str) -> dict[PodKey, PodUsage]:
    """The namespace's PodMetrics; MetricsApiAbsent where the cluster serves none, UsageUnreadable
    where it does but may not be read."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    try:
        listed = client.CustomObjectsApi(api).list_namespaced_custom_object(
            METRICS_API, METRICS_API_VERSION, namespace, "pods", _request_timeout=SUMMARY_TIMEOUT_S
        )
    except ApiException as error:
        said = api_error_text(error.status, error.reason, error.body)
        if error.status == 404:
            raise MetricsApiAbsent(f"the cluster serves no {METRICS_API} ({said})") from None
        if error.status == 503:
            raise MetricsApiAbsent(f"{METRICS_API} is registered, but its server does not answer ({said})") from None
        # The authorizer answers before the API is looked up: a 403 may hide that there is none.
        if error.status == 403 and not group_served(api, METRICS_API):
            raise MetricsApiAbsent(f"the cluster serves no {METRICS_API} (no metrics-server)") from None
        raise UsageUnreadable(f"the metrics API ({METRICS_API}) refused: {said}") from None
    except HTTPError as error:
        raise UsageUnreadable(f"the metrics API ({METRICS_API}) did not answer: {error}") from None
    # The metrics API answers with a PodMetricsList as decoded JSON: a dict.
    return pod_metrics_usage(cast(Mapping[str, Any], listed))


def node_summary(core: Any, node: str) -> dict[str, Any]:
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    try:
        response = core.connect_get_node_proxy_with_path(
            node, "stats/summary", _preload_content=False, _request_timeout=SUMMARY_TIMEOUT_S
        )
        return json.loads(response.data)
    except ApiException as error:
        # Only the authorizer's 403 is the user's missing right; a 403 the API server relays from
        # the way to the node (an HTTP proxy that denies the node's address) is that node's alone.
        if error.status == 403 and _authorizer_refused(error):
            raise SummaryForbidden(api_error_text(error.status, error.reason, error.body)) from None
        raise NodeMetricsUnavailable(_why_no_metrics(core, node, error)) from None
    except (HTTPError, ValueError) as error:
        raise NodeMetricsUnavailable(_why_no_metrics(core, node, error)) from None


def _authorizer_refused(error: Any) -> bool:
    return missing_permission(str(status_of(error.body).get("message") or "")) is not None


def _is_kwok(core: Any, node: str) -> bool:
    from kubernetes.client.exceptions import ApiException

    try:
        annotations = core.read_node(node).metadata.annotations or {}
    except ApiException:
        annotations = {}  # where Nodes may not be read, the node is not named as kwok
    return KWOK_NODE_ANNOTATION in annotations


def _why_no_metrics(core: Any, node: str, error: Exception) -> str:
    from kubernetes.client.exceptions import ApiException

    if _is_kwok(core, node):
        return "a kwok node (no kubelet, so no Summary API)"
    if isinstance(error, ApiException):
        said = api_error_text(error.status, error.reason, error.body)
        return f"its kubelet's Summary API did not answer through the API server ({said})"
    return f"its kubelet's Summary API did not answer through the API server ({error})"


def read_usage(api: Any, experiment: Experiment, pods_on: dict[str, list[str]]) -> Usage:
    """Each pod's CPU and memory: from the metrics API where the cluster serves it, else from the
    kubelet summary of each node in `pods_on` (node -> the experiment's pods there)."""
    from kubernetes import client

    core = client.CoreV1Api(api)
    try:
        pods = metrics_api_usage(api, experiment.namespace)
        # A node none of whose pods has figures may be one metrics-server cannot read at all.
        silent = [node for node, names in pods_on.items() if not any((experiment.namespace, n) in pods for n in names)]
        kwok = {
            node: "a kwok node (no kubelet, so metrics-server reads nothing there)"
            for node in silent
            if _is_kwok(core, node)
        }
        return Usage(METRICS_API, pods, kwok)
    except UsageUnreadable as why:
        return Usage(None, unreadable=str(why))
    except MetricsApiAbsent as why:
        absent = str(why)
    pods, without_metrics = {}, {}
    for node in sorted(pods_on):
        try:
            pods.update(pod_usage(node_summary(core, node)))
        except NodeMetricsUnavailable as why:
            without_metrics[node] = str(why)
        except SummaryForbidden as why:
            return Usage(
                None,
                unreadable=(
                    f"{absent}, and the {KUBELET_SUMMARY} through the node proxy was refused: {why}; with "
                    "metrics-server "
                    f"on the cluster, `list` on `pods.{METRICS_API}` in namespace {experiment.namespace} is all top "
                    "needs"
                ),
            )
    return Usage(KUBELET_SUMMARY, pods, without_metrics, metrics_api_absent=absent)


@dataclass(frozen=True)
class PlacedUsage:
    status: ExperimentStatus
    pods_on: dict[str, list[str]]  # node -> the experiment's pods there
    usage: Usage


def read_placed_usage(api: Any, experiment: Experiment) -> PlacedUsage:
    """The experiment's status, where its pods are, and their CPU and memory: what `top` and each of
    `diagnose`'s samples read."""
    status = read_status(api, experiment)
    pods_on: dict[str, list[str]] = {}
    for task in status.tasks:
        pod = status.pods.get(task.task)
        if task.node is not None and pod is not None:
            pods_on.setdefault(task.node, []).append(pod.metadata.name)
    return PlacedUsage(status, pods_on, read_usage(api, experiment, pods_on))


def read_top(api: Any, experiment: Experiment) -> TopView:
    from kubernetes import client

    core = client.CoreV1Api(api)
    placed = read_placed_usage(api, experiment)
    status, usage = placed.status, placed.usage
    tasks = []
    for task in status.tasks:
        pod = status.pods.get(task.task)
        found = usage.pods.get((experiment.namespace, pod.metadata.name)) if pod is not None and task.node else None
        tasks.append(
            TaskUsage(
                task.task,
                task.node,
                found.cpu_cores if found is not None else None,
                found.memory_bytes if found is not None else None,
                cpu_allowed(pod.spec.containers or ()) if pod is not None else None,
            )
        )
    # The task that reports progress: the chief, or worker 0 where it acts as chief (done: workers).
    reporter = status.pods.get(Task(experiment.plan.deciding_role().name, 0).name)
    steps_asked = experiment.config.trainer.steps if experiment.program is None else None
    progress = chief_progress(pod_log(core, reporter, lines=CHIEF_LOG_LINES), steps_asked)
    evaluator = status.pods.get(Task(EVALUATOR.name, 0).name)
    evaluation = last_evaluation(pod_log(core, evaluator, lines=CHIEF_LOG_LINES))
    return TopView(
        experiment.stack,
        experiment.namespace,
        status.phase.name,
        status.phase.detail,
        tasks,
        progress,
        usage.without_metrics,
        usage.source,
        usage.unreadable,
        usage.metrics_api_absent,
        evaluation,
    )


def watch(read: Callable[[], TopView], every_s: Optional[float], as_json: bool, out: Optional[TextIO] = None) -> int:
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
    experiment: Experiment,
    kubeconfig: Optional[str],
    context: Optional[str],
    every_s: Optional[float],
    as_json: bool,
    stack_given: Optional[str] = None,
) -> int:
    return with_cluster(
        experiment,
        kubeconfig,
        context,
        lambda api: watch(lambda: read_top(api, experiment), every_s, as_json),
        stack_given,
    )
