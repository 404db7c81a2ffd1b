"""Before anything is registered: a queued experiment that Kueue could never admit is refused
(the rule is components/objects/admission.py), its ClusterQueue read from the cluster the default
Kubernetes provider talks to.

That cluster is the provider's: `kubernetes:kubeconfig` (a path or the file's text) and
`kubernetes:context` from the stack's config, else $KUBECONFIG, else ~/.kube/config. Where it
cannot be read (no kubeconfig, no answer), `pulumi preview` says so in a warning and goes on: the
provider then fails, or succeeds, on its own terms.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Optional

import pulumi
import yaml
from pulumi.runtime import settings
from pulumi.runtime.mocks import MockMonitor

from components.objects.admission import never_admitted
from components.plan.experiment import Experiment
from components.spec.models import StackConfigError

KUEUE_GROUP, KUEUE_VERSION = "kueue.x-k8s.io", "v1beta1"
READ_TIMEOUT_S = 10


class ClusterUnreadable(Exception):
    """The provider's cluster could not be read; the check is skipped."""


def refuse_never_admitted(experiment: Experiment) -> None:
    """StackConfigError when Kueue could never admit the queued experiment; nothing for one without a queue."""
    queue = experiment.config.cluster.queue
    if queue is None or isinstance(settings.get_monitor(), MockMonitor):
        return  # under unit-test mocks there is no cluster to read
    try:
        cluster_queue = read_cluster_queue(queue)
    except ClusterUnreadable as error:
        pulumi.log.warn(f"stack '{experiment.stack}': whether Kueue could admit the experiment through ClusterQueue "
                        f"'{queue}' is not checked: {error}")
        return
    refusal = never_admitted(experiment, cluster_queue)
    if refusal is not None:
        raise StackConfigError(refusal)


def read_cluster_queue(name: str) -> Optional[dict[str, Any]]:
    """The ClusterQueue as the API server has it; None when there is none."""
    from kubernetes import client, config
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    provider = pulumi.Config("kubernetes")
    kubeconfig, context = provider.get("kubeconfig"), provider.get("context")
    try:
        if kubeconfig is not None and not Path(kubeconfig).expanduser().is_file():
            api = config.new_client_from_config_dict(yaml.safe_load(kubeconfig), context=context)
        else:
            path = kubeconfig or os.environ.get("KUBECONFIG", "").split(os.pathsep)[0] or "~/.kube/config"
            api = config.new_client_from_config(config_file=str(Path(path).expanduser()), context=context)
    except (config.ConfigException, OSError, yaml.YAMLError, TypeError, AttributeError) as error:
        raise ClusterUnreadable(f"no kubeconfig to read the cluster with ({error})") from None
    api.configuration.retries = False
    try:
        with api:
            return client.CustomObjectsApi(api).get_cluster_custom_object(
                KUEUE_GROUP, KUEUE_VERSION, "clusterqueues", name, _request_timeout=READ_TIMEOUT_S
            )
    except ApiException as error:
        if error.status == 404:
            return None
        raise ClusterUnreadable(f"the API server answered {error.status} {error.reason}") from None
    except (HTTPError, OSError) as error:
        raise ClusterUnreadable(f"the API server does not answer ({error})") from None
