"""Previews a Pulumi project's __main__.py under the real engine, from the project's own virtual
environment: `venv/bin/python -I preview_driver.py PROJECT TOOLS_BIN STATE KUBECONFIG`.

Run isolated (-I), it sees the packages of that environment only, never the checkout: the
project imports tfk8s from the wheel installed there. The CLI and the Kubernetes provider are
the toolchain's (`make toolchain`); no Python language host is built there, so the program runs
inline through the Automation API, as tools/engine runs the project's own. Prints one JSON line:
each resource's type and URN as the engine previewed it, and the change summary.
"""

from __future__ import annotations

import json
import runpy
import sys
from pathlib import Path

import yaml
from pulumi import automation as auto
from tfk8s.components.resources.private_apis import kubernetes_sdk_version


def install_provider(tools_bin: Path, home: Path) -> None:
    """The engine looks the provider up in its plugin cache by the version the SDK asks for."""
    plugin = home / "plugins" / f"resource-kubernetes-v{kubernetes_sdk_version()}" / "pulumi-resource-kubernetes"
    plugin.parent.mkdir(parents=True, exist_ok=True)
    plugin.symlink_to(tools_bin / "pulumi-resource-kubernetes")


def preview(project: Path, tools_bin: Path, state: Path, kubeconfig: Path) -> dict:
    home, backend = state / "home", state / "backend"
    backend.mkdir(parents=True)
    install_provider(tools_bin, home)
    options = auto.LocalWorkspaceOptions(
        work_dir=str(project),
        pulumi_home=str(home),
        env_vars={
            "PULUMI_BACKEND_URL": backend.as_uri(),
            "PULUMI_CONFIG_PASSPHRASE": "",
            "KUBECONFIG": str(kubeconfig),
            "PULUMI_SKIP_UPDATE_CHECK": "true",
            "PULUMI_IGNORE_AMBIENT_PLUGINS": "true",
            "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
        },
        pulumi_command=auto.PulumiCommand(root=str(tools_bin.parent)),
    )
    program = project / "__main__.py"
    stack = auto.create_or_select_stack(
        "dev",
        project_name=yaml.safe_load((project / "Pulumi.yaml").read_text(encoding="utf-8"))["name"],
        program=lambda: runpy.run_path(str(program), run_name="__main__"),
        opts=options,
    )
    previewed: list[dict] = []

    def record(event: auto.EngineEvent) -> None:
        if event.resource_pre_event is not None:
            metadata = event.resource_pre_event.metadata
            previewed.append({"type": metadata.type, "urn": metadata.urn, "op": str(metadata.op.value)})

    result = stack.preview(on_event=record, on_output=lambda line: print(line, file=sys.stderr))
    return {"resources": previewed, "changes": result.change_summary}


if __name__ == "__main__":
    project, tools_bin, state, kubeconfig = (Path(argument).resolve() for argument in sys.argv[1:5])
    print(json.dumps(preview(project, tools_bin, state, kubeconfig)))
