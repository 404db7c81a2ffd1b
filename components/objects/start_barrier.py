"""`tfk8s:cluster.startDeadline`: every task waits, before its program starts, until every task of
the experiment is running, for at most the deadline; past it, the experiment ends Failed.

An init container of each pod (plain dicts, no Pulumi here) polls the DNS name TF_CONFIG gives each
task: JobSet's headless Service publishes a pod's name as soon as the pod has an address (before it
is ready), so a name that does not resolve is a task not running: unschedulable, its image not
pulled, queued behind others. Past the deadline the container exits START_DEADLINE_EXIT, writing the
tasks it waited for as its termination message; the Pod failure policy fails that Job at once on
this exit of this container (components/objects/failure_rules.py), and the JobSet the experiment.
`status` names the tasks and the scheduler's reason.

A task's replacement (a lost worker's new pod) does not wait: the experiment started before, and
a worker that has finished (done: workers) has left DNS for good. The Job controller counts a
task's earlier failures in its pod's annotations (Jobs with backoffLimitPerIndex: the workers');
the barrier reads them through the downward API.

Without it, a task waits for its peers with no limit (TensorFlow's own behaviour). It needs
python3 in the image, which a TensorFlow image has.
"""

from __future__ import annotations

from typing import Any, Optional

from ..plan.experiment import Experiment
from ..spec.trainer_contract import CLUSTER_ENV, CLUSTER_FILE_ENV, TASK_NAME_SEPARATOR

Manifest = dict[str, Any]

START_BARRIER = "start-barrier"
START_DEADLINE_EXIT = 75  # EX_TEMPFAIL: the cluster could not give the experiment its servers in time
TERMINATION_LOG = "/dev/termination-log"
POLL_S = 1.0
# The task's earlier failures, counted and ignored (evictions), as the Job controller annotates a
# replacement pod; a pod of no earlier failure has none (the kubelet then gives "").
EARLIER_FAILURES = {
    "TFK8S_EARLIER_FAILURES": "batch.kubernetes.io/job-index-failure-count",
    "TFK8S_EARLIER_IGNORED_FAILURES": "batch.kubernetes.io/job-index-ignored-failure-count",
}
SEP = TASK_NAME_SEPARATOR  # between a task's role and index: ps-0
# A termination message holds 4 KiB: the first names, and how many more.
NAMES_SHOWN = 100

BARRIER_SCRIPT = f"""import json, os, socket, sys, time
if any(os.environ.get(name) not in (None, "", "0") for name in {sorted(EARLIER_FAILURES)!r}):
    sys.exit(0)  # a replacement: the experiment started before
deadline_s = float(sys.argv[1])
deadline = time.monotonic() + deadline_s
path = os.environ.get({CLUSTER_FILE_ENV!r})
cluster = json.load(open(path)) if path else json.loads(os.environ[{CLUSTER_ENV!r}])
waiting = {{f"{{role}}{SEP}{{index}}": address.rsplit(":", 1)[0]
           for role, addresses in cluster.items() for index, address in enumerate(addresses)}}
while True:
    for task, host in list(waiting.items()):
        try:
            socket.getaddrinfo(host, None)
            del waiting[task]
        except OSError:
            pass
    if not waiting:
        sys.exit(0)
    if time.monotonic() > deadline:
        names = sorted(waiting, key=lambda task: (task.rsplit("{SEP}", 1)[0], int(task.rsplit("{SEP}", 1)[1])))
        more = f" and {{len(names) - {NAMES_SHOWN}}} more" if len(names) > {NAMES_SHOWN} else ""
        said = f"not running within startDeadline ({{deadline_s:g}} s): {{', '.join(names[:{NAMES_SHOWN}])}}{{more}}"
        print(said, file=sys.stderr, flush=True)
        with open({TERMINATION_LOG!r}, "w") as log:
            log.write(said)
        sys.exit({START_DEADLINE_EXIT})
    time.sleep({POLL_S})
"""


def start_barrier(experiment: Experiment, main: Manifest, cluster_mounts: list[Manifest]) -> Optional[Manifest]:
    """The init container that waits for every task, from the task's main container (its image,
    its environment) and the mount of the cluster file, if any; None without a start deadline."""
    deadline = experiment.config.cluster.start_deadline
    if deadline is None:
        return None
    return {
        "name": START_BARRIER,
        "image": main["image"],
        "command": ["python3", "-c", BARRIER_SCRIPT, str(deadline)],
        "env": [
            {"name": name, "valueFrom": {"fieldRef": {"fieldPath": f"metadata.annotations['{annotation}']"}}}
            for name, annotation in sorted(EARLIER_FAILURES.items())
        ],
        "envFrom": main["envFrom"],
        "resources": {"requests": {"cpu": "10m", "memory": "64Mi"}, "limits": {"memory": "128Mi"}},
        "securityContext": main["securityContext"],
        "volumeMounts": cluster_mounts,
        "terminationMessagePolicy": "File",
    }
