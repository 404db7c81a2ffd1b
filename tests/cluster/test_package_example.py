"""The package a platform team installs (issue 42, item 1): examples/platform-team, installed from
the wheel `make dist` writes into a fresh virtual environment, previewed by the real Pulumi engine.

Here rather than in tests/package because it needs the toolchain's CLI and provider, which
`make test-cluster` builds first and `make test-program` does not. It needs no control plane: the
example's provider is given a cluster that does not exist, and the preview goes on without it.
"""

from __future__ import annotations

import pytest

from tests.package.wheel import EXAMPLE_RESOURCES, UNREACHABLE_KUBECONFIG, installed_wheel, preview_example

pytestmark = pytest.mark.slow


def test_the_platform_team_example_previews_under_the_real_engine_from_the_wheel(tmp_path):
    installed = installed_wheel(tmp_path / "package")
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(UNREACHABLE_KUBECONFIG, encoding="utf-8")

    preview = preview_example(installed, tmp_path / "engine", kubeconfig)

    previewed = {
        (resource["type"].rsplit(":", 1)[-1], resource["urn"].rsplit("::", 1)[-1]) for resource in preview["resources"]
    }
    assert {*EXAMPLE_RESOURCES, ("JobSet", "ranking-tf")} <= previewed
    # Every Kubernetes object is the component's (its URN runs through TFExperiment), and all are new.
    objects = [r for r in preview["resources"] if r["type"].startswith("kubernetes:") and "providers" not in r["type"]]
    assert objects and all("TFExperiment$" in r["urn"] for r in objects)
    assert preview["changes"] == {"create": len(preview["resources"])}
