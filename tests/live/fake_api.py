"""An API server on loopback that answers what `status` and `top` ask with the objects a test gives,
and refuses what the test says the user may not read, with the Status object Kubernetes writes.

The commands run as users run them (`main([...])` with `--kubeconfig`), through the real
Kubernetes client, so what the test asserts is what a user would read.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator, Optional
from urllib.parse import unquote, urlsplit

from components.plan import labels as L
from components.plan.experiment import Experiment

USER = "system:serviceaccount:ml:alice"
STARTED = datetime(2026, 11, 24, 2, 0, tzinfo=timezone.utc)


def forbidden(verb: str, resource: str, group: str = "", namespace: Optional[str] = None, name: str = "") -> tuple[int, dict]:
    """The API server's 403 for `verb` on `resource` (authorizer's wording), as a route's answer."""
    where = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
    kind = resource.split("/")[0] + (f".{group}" if group else "")
    subject = f'{kind} "{name}"' if name else kind
    return 403, {
        "kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Forbidden", "code": 403,
        "message": f'{subject} is forbidden: User "{USER}" cannot {verb} resource "{resource}" in API group "{group}" {where}',
    }


def not_found(message: str = "the server could not find the requested resource") -> tuple[int, dict]:
    return 404, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404, "message": message}


def unavailable() -> tuple[int, dict]:
    return 503, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "ServiceUnavailable", "code": 503,
                 "message": "the server is currently unable to handle the request"}


def listed(kind: str, items: list[dict]) -> tuple[int, dict]:
    return 200, {"kind": f"{kind}List", "apiVersion": "v1", "metadata": {}, "items": items}


def discovery(*groups: str) -> tuple[int, dict]:
    """`GET /apis`: the groups the cluster serves."""
    return 200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
        {"name": group, "versions": [{"groupVersion": f"{group}/v1", "version": "v1"}],
         "preferredVersion": {"groupVersion": f"{group}/v1", "version": "v1"}}
        for group in groups
    ]}


def task_pods(experiment: Experiment, nodes: dict[str, str]) -> dict[str, dict]:
    """Task -> its running pod as a JobSet makes it, on `nodes[task]`."""
    pods = {}
    for group in experiment.groups:
        for offset, task in enumerate(group.tasks):
            pods[task.name] = {
                "metadata": {
                    "name": f"tf-{group.name}-0-{offset}-x{offset:03d}",
                    "namespace": experiment.namespace,
                    "creationTimestamp": (STARTED + timedelta(seconds=offset)).isoformat(),
                    "labels": {L.COMPONENT: task.name.rsplit("-", 1)[0], L.WORKLOAD: group.name, L.COMPLETION_INDEX: str(offset)},
                },
                "spec": {"nodeName": nodes[task.name], "containers": [{"name": "tensorflow"}]},
                "status": {"phase": "Running"},
            }
    return pods


@dataclass
class FakeCluster:
    """`routes`: path -> (HTTP status, JSON body, or text); what is not routed answers 404.
    `asked`: every path requested, in order."""

    kubeconfig: str
    routes: dict[str, tuple[int, Any]] = field(default_factory=dict)
    asked: list[str] = field(default_factory=list)

    def experiment_routes(self, experiment: Experiment, pods: dict[str, dict], jobset: Optional[dict] = None,
                          chief_log: str = "") -> None:
        """What status reads in the experiment's namespace: its pods, Jobs, events, JobSet, the chief's log."""
        namespace = experiment.namespace
        self.routes[f"/api/v1/namespaces/{namespace}/pods"] = listed("Pod", list(pods.values()))
        self.routes[f"/apis/batch/v1/namespaces/{namespace}/jobs"] = listed("Job", [])
        self.routes[f"/api/v1/namespaces/{namespace}/events"] = listed("Event", [])
        self.routes[f"/apis/jobset.x-k8s.io/v1alpha2/namespaces/{namespace}/jobsets/{experiment.names.jobset}"] = (
            200, jobset if jobset is not None else {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                                                    "metadata": {"name": experiment.names.jobset}, "spec": {}, "status": {}})
        chief = pods.get("chief-0")
        if chief is not None:
            self.routes[f"/api/v1/namespaces/{namespace}/pods/{chief['metadata']['name']}/log"] = (200, chief_log)

    def asked_for(self, fragment: str) -> list[str]:
        return [path for path in self.asked if fragment in path]


def serve(tmp_path: Path) -> Iterator[FakeCluster]:
    """Start the fake API server; yields the cluster whose routes the test fills."""
    cluster = FakeCluster(kubeconfig=str(tmp_path / "kubeconfig"))

    class Answer(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the http.server interface
            path = unquote(urlsplit(self.path).path).rstrip("/") or "/"
            cluster.asked.append(path)
            status, body = cluster.routes.get(path, not_found())
            text = body if isinstance(body, str) else json.dumps(body)
            data = text.encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/plain" if isinstance(body, str) else "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    Path(cluster.kubeconfig).write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{server.server_address[1]}"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
    }))
    try:
        yield cluster
    finally:
        server.shutdown()
        server.server_close()
