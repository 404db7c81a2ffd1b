"""The cluster the default Kubernetes provider talks to, read before anything is registered.

That cluster is the provider's: `kubernetes:kubeconfig` (a path or the file's text) and
`kubernetes:context` from the stack's config, else $KUBECONFIG, else ~/.kube/config. Where it
cannot be read (no kubeconfig, no answer), a check says so in a warning and `pulumi preview`
goes on: the provider then fails, or succeeds, on its own terms.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pulumi
import yaml
from pulumi.runtime import settings
from pulumi.runtime.mocks import MockMonitor

READ_TIMEOUT_S = 10


class ClusterUnreadable(Exception):
    """The provider's cluster could not be read; the check is skipped."""


def cluster_is_mocked() -> bool:
    """Under unit-test mocks there is no cluster to read."""
    return isinstance(settings.get_monitor(), MockMonitor)


def provider_api_client() -> Any:
    """A kubernetes ApiClient for the default provider's cluster, without retries (a check waits
    READ_TIMEOUT_S at most); ClusterUnreadable when there is no kubeconfig to make one from."""
    from kubernetes import config

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
    return api
