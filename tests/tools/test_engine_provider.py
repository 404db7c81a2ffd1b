"""The engine's Kubernetes provider (tools/engine/workspace.py install_provider): the provider
`make toolchain` builds stands in, in the engine's plugin cache, for the released
pulumi-kubernetes that requirements.txt pins, and for no other version."""

from __future__ import annotations

import pytest

from components.resources.private_apis import kubernetes_sdk_version
from tools.engine import workspace
from tools.toolchain.versions import recorded_versions


@pytest.fixture
def built_provider(tmp_path, monkeypatch):
    provider = tmp_path / "bin" / "pulumi-resource-kubernetes"
    provider.parent.mkdir()
    provider.write_text("#!/bin/sh\n")
    monkeypatch.setattr(workspace, "PROVIDER", provider)
    return provider


def test_the_pinned_sdk_is_the_release_the_built_provider_stands_in_for():
    release = recorded_versions()["PULUMI_KUBERNETES_RELEASE"]
    assert kubernetes_sdk_version() == release
    assert "-" not in release, "requirements.txt pins a release, not a commit's build"


def test_the_built_provider_is_found_where_the_engine_finds_the_releases_plugin(tmp_path, built_provider):
    home = tmp_path / "home"
    workspace.install_provider(home)
    plugin = home / "plugins" / f"resource-kubernetes-v{kubernetes_sdk_version()}" / "pulumi-resource-kubernetes"
    assert plugin.resolve() == built_provider.resolve()
    workspace.install_provider(home)  # again: unchanged
    assert plugin.resolve() == built_provider.resolve()


def test_an_sdk_of_another_version_is_refused_naming_both(tmp_path, built_provider, monkeypatch):
    monkeypatch.setattr(workspace, "kubernetes_sdk_version", lambda: "4.34.2")
    with pytest.raises(workspace.EngineError) as error:
        workspace.install_provider(tmp_path / "home")
    assert "4.34.2" in str(error.value) and recorded_versions()["PULUMI_KUBERNETES_RELEASE"] in str(error.value)
    assert not (tmp_path / "home" / "plugins").exists(), "nothing was installed"
