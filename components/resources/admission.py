"""Before anything is registered: a queued experiment that Kueue could never admit is refused
(the rule is components/objects/admission.py), its ClusterQueue read from the cluster the default
Kubernetes provider talks to (components/resources/provider_cluster.py).
"""

from __future__ import annotations

from typing import Any, Optional, cast

import pulumi

from ..objects.admission import never_admitted
from ..plan.experiment import Experiment
from ..spec.models import StackConfigError
from .provider_cluster import (
    READ_TIMEOUT_S,
    ClusterReader,
    ClusterUnreadable,
)

KUEUE_GROUP, KUEUE_VERSION = "kueue.x-k8s.io", "v1beta1"


def refuse_never_admitted(experiment: Experiment, cluster: ClusterReader) -> None:
    """StackConfigError when Kueue could never admit the queued experiment, its ClusterQueue read from
    `cluster`; nothing for one without a queue, or without a cluster to read."""
    queue = experiment.config.cluster.queue
    if queue is None:
        return
    try:
        api = cluster.api_client()
        if api is None:
            return
        cluster_queue = read_cluster_queue(api, queue)
    except ClusterUnreadable as error:
        pulumi.log.warn(
            f"stack '{experiment.stack}': whether Kueue could admit the experiment through ClusterQueue "
            f"'{queue}' is not checked: {error}"
        )
        return
    refusal = never_admitted(experiment, cluster_queue)
    if refusal is not None:
        raise StackConfigError(refusal)


def read_cluster_queue(api: Any, name: str) -> Optional[dict[str, Any]]:
    """The ClusterQueue as the API server has it; None when there is none."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    try:
        with api:
            # The ClusterQueue is answered as decoded JSON: a dict.
            return cast(
                dict[str, Any],
                client.CustomObjectsApi(api).get_cluster_custom_object(
                    KUEUE_GROUP, KUEUE_VERSION, "clusterqueues", name, _request_timeout=READ_TIMEOUT_S
                ),
            )
    except ApiException as error:
        if error.status == 404:
            return None
        raise ClusterUnreadable(f"the API server answered {error.status} {error.reason}") from None
    except (HTTPError, OSError) as error:
        raise ClusterUnreadable(f"the API server does not answer ({error})") from None
