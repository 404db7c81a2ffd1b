"""The private APIs of Pulumi and pulumi-kubernetes tfk8s relies on (components/resources/private_apis.py),
each checked for what tfk8s takes from it: a test here fails the day a dependency changes one."""

from __future__ import annotations

import importlib.metadata
import re

import pulumi
from pulumi.runtime import config as runtime_config

from components.resources import private_apis
from tests.harness import RecordingMonitor, reset_pulumi


def test_the_kubernetes_sdks_version_is_the_installed_packages():
    version = private_apis.kubernetes_sdk_version()
    installed = importlib.metadata.version("pulumi-kubernetes")
    # The SDK writes it as semver (4.25.0, or 4.25.0-alpha.N for a build), the package index as PEP 440.
    assert re.match(r"^\d+\.\d+\.\d+", version) and version.split("-")[0] == re.match(r"^\d+\.\d+\.\d+", installed)[0]


def test_the_kubernetes_sdks_defaults_pin_its_provider_version():
    defaults = private_apis.kubernetes_resource_defaults()
    assert isinstance(defaults, pulumi.ResourceOptions)
    assert defaults.version == private_apis.kubernetes_sdk_version()


def test_every_config_key_and_which_are_secret_are_read_from_the_engines_config():
    try:
        runtime_config.set_all_config({"tfk8s:cluster": '{"a": 1}', "tfk8s:token": "s", "other:key": "x"},
                                      ["tfk8s:token"])
        assert private_apis.engine_config() == {"tfk8s:cluster": '{"a": 1}', "tfk8s:token": "s", "other:key": "x"}
        assert private_apis.engine_secret_keys() == {"tfk8s:token"}
    finally:
        reset_pulumi()
