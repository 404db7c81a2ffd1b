"""The one place tfk8s reaches into Pulumi's and pulumi-kubernetes's private APIs: each use behind
a small function here, and tests/resources/test_private_apis.py fails the day a dependency
changes what it relies on (a renamed module, a function gone, another shape).

- pulumi-kubernetes's `_utilities`: the SDK's default resource options (its version pin and
  plugin source) for resources registered under raw tokens (kube.py), and that version, which
  the engine looks the provider plugin up by (tools/engine/workspace.py).
- Pulumi's runtime config map: every `tfk8s:*` key the engine passed, where `pulumi.Config`
  reads one known key at a time (tfk8s must see every key to refuse a typo), and which are secret.
"""

from __future__ import annotations

from typing import Any

import pulumi
from pulumi.runtime import config as _runtime_config
from pulumi_kubernetes import _utilities as _kubernetes_sdk


def kubernetes_resource_defaults() -> pulumi.ResourceOptions:
    """The options pulumi-kubernetes's typed resources get: its provider version and plugin source."""
    return _kubernetes_sdk.get_resource_opts_defaults()


def kubernetes_sdk_version() -> str:
    """The pulumi-kubernetes version, which is the provider plugin version the engine will ask for."""
    return str(_kubernetes_sdk.get_version())


def engine_config() -> dict[str, Any]:
    """Every config value the engine passed the program (raw: JSON text or a string), by key."""
    return {**_runtime_config.get_config_env(), **_runtime_config.CONFIG.get()}


def engine_secret_keys() -> set[str]:
    """The config keys the engine holds as secrets."""
    secret = set(_runtime_config.get_config_secret_keys_env())
    secret.update(key for key in _runtime_config.CONFIG.get() if _runtime_config.is_config_secret(key))
    return secret
