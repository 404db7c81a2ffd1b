"""The cluster the default Kubernetes provider talks to, read before anything is registered.

That cluster is the provider's: `kubernetes:kubeconfig` (a path or the file's text) and
`kubernetes:context` from the stack's config, else the files of $KUBECONFIG, merged as kubectl and the
provider merge them, else ~/.kube/config. Where it
cannot be read (no kubeconfig, no answer), a check says so in a warning and `pulumi preview`
goes on: the provider then fails, or succeeds, on its own terms.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional, Protocol

import pulumi
import yaml

from ..access.kubeconfig import KubeconfigError, kubeconfig_files, new_api_client, read_kubeconfig

READ_TIMEOUT_S = 10


class ClusterUnreadable(Exception):
    """The provider's cluster could not be read; the check is skipped."""


class ClusterReader(Protocol):
    """Where the checks made before anything is registered read the cluster."""

    def api_client(self) -> Any:
        """A kubernetes ApiClient; None where there is no cluster to read (the checks are skipped);
        ClusterUnreadable where there should be one and it cannot be read (they warn, and are skipped)."""
        ...


class ProviderCluster:
    """The cluster the default Kubernetes provider talks to: the stack program's."""

    def api_client(self) -> Any:
        return provider_api_client()


class NoCluster:
    """No cluster to read: a program run under unit-test mocks, with nothing behind its provider."""

    def api_client(self) -> Any:
        return None


def provider_api_client() -> Any:
    """A kubernetes ApiClient for the default provider's cluster, without retries (a check waits
    READ_TIMEOUT_S at most); ClusterUnreadable when there is no kubeconfig to make one from.

    The kubeconfig is the provider's: `kubernetes:kubeconfig`, a path or the file's text, else the files
    kubectl reads ($KUBECONFIG's, merged, else ~/.kube/config: components/access/kubeconfig.py)."""
    from kubernetes import config

    provider = pulumi.Config("kubernetes")
    kubeconfig, context = provider.get("kubeconfig"), provider.get("context")
    text = _kubeconfig_text(kubeconfig)
    if text is not None:
        try:
            api = config.new_client_from_config_dict(text, context=context)
        except (config.ConfigException, TypeError, AttributeError, ValueError, KeyError) as error:
            raise ClusterUnreadable(f"kubernetes:kubeconfig cannot be used ({error})") from None
    else:
        try:
            files = kubeconfig_files(kubeconfig, "kubernetes:kubeconfig")
            api = new_api_client(read_kubeconfig(files, context))
        except KubeconfigError as why:
            raise ClusterUnreadable(f"no kubeconfig to read the cluster with ({why})") from None
    api.configuration.retries = False
    return api


def _kubeconfig_text(kubeconfig: Optional[str]) -> Optional[dict[str, Any]]:
    """`kubernetes:kubeconfig` given as the file's text (what the provider also takes); None for a path."""
    if kubeconfig is None or Path(kubeconfig).expanduser().is_file():
        return None
    try:
        document = yaml.safe_load(kubeconfig)
    except yaml.YAMLError:
        return None
    return document if isinstance(document, dict) else None
