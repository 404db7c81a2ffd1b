"""Runs the real Pulumi program (`__main__.py`) under recording mocks.

The program reads its config exactly as under the CLI (the engine's config
map, objects as JSON strings), so tests and the benchmark exercise the same
path a user's `pulumi preview` does, without the CLI or a cluster.
"""

from __future__ import annotations

import json
import runpy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import pulumi
from pulumi.runtime import config as runtime_config
from pulumi.runtime import settings as runtime_settings
from pulumi.runtime.mocks import MockMonitor
from pulumi.runtime.stack import wait_for_rpcs
from pulumi.runtime.sync_await import _sync_await

PROJECT_ROOT = Path(__file__).resolve().parent.parent
PROGRAM = PROJECT_ROOT / "__main__.py"


def plain(value: Any) -> Any:
    """Engine values as a manifest reader sees them: 2222.0 -> 2222, read-only -> dict."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    return value


@dataclass
class Registered:
    type: str
    name: str
    urn: str
    parent: str
    custom: bool
    dependencies: list[str]
    inputs: dict[str, Any]

    @property
    def manifest(self) -> dict[str, Any]:
        return plain(self.inputs)

    @property
    def kind(self) -> str:
        return self.type.rsplit(":", 1)[-1]


class RecordingMocks(pulumi.runtime.Mocks):
    def __init__(self) -> None:
        self.inputs: dict[tuple[str, str], dict[str, Any]] = {}

    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        self.inputs[(args.typ, args.name)] = args.inputs
        return f"{args.name}-id", args.inputs

    def call(self, args: pulumi.runtime.MockCallArgs):
        return {}


class RecordingMonitor(MockMonitor):
    """Also records each registration's parent and dependencies."""

    def __init__(self, mocks: RecordingMocks) -> None:
        super().__init__(mocks)
        self.registrations: list[tuple[Any, str]] = []

    def RegisterResource(self, request):
        response = super().RegisterResource(request)
        if request.type != "pulumi:pulumi:Stack":
            self.registrations.append((request, response.urn))
        return response


@dataclass
class ProgramRun:
    stack: str
    resources: list[Registered] = field(default_factory=list)
    outputs: dict[str, Any] = field(default_factory=dict)

    def of_kind(self, kind: str) -> list[Registered]:
        return [r for r in self.resources if r.custom and r.kind == kind]

    def manifests(self) -> list[dict[str, Any]]:
        return [r.manifest for r in self.resources if r.custom]

    def named(self, kind: str, name: str) -> dict[str, Any]:
        """The manifest of the `kind` object whose metadata.name is `name`."""
        for resource in self.of_kind(kind):
            if resource.manifest["metadata"]["name"] == name:
                return resource.manifest
        raise KeyError(f"no {kind} named {name}")

    def by_urn(self) -> dict[str, Registered]:
        return {r.urn: r for r in self.resources}

    def dependencies_of(self, resource: Registered) -> list[Registered]:
        by_urn = self.by_urn()
        return [by_urn[urn] for urn in resource.dependencies if urn in by_urn]


def engine_values(values: Mapping[str, Any]) -> dict[str, str]:
    """Config as the engine hands it to a program: objects and lists as JSON."""
    return {
        key: value if isinstance(value, str) else json.dumps(value) for key, value in values.items()
    }


def run_program(stack: str, values: Mapping[str, Any], preview: bool = False) -> ProgramRun:
    """Run `__main__.py` for `stack` with config `values`; raise what it raises."""
    mocks = RecordingMocks()
    monitor = RecordingMonitor(mocks)
    runtime_settings.reset_options(project="tfk8s", stack=stack, preview=preview)
    pulumi.runtime.set_mocks(mocks, project="tfk8s", stack=stack, preview=preview, monitor=monitor)
    runtime_config.set_all_config(engine_values(values))
    try:
        runpy.run_path(str(PROGRAM), run_name="__main__")
        _sync_await(wait_for_rpcs())
        root = runtime_settings.get_root_resource()
        outputs = {}
        for name, value in getattr(root, "outputs", {}).items():
            outputs[name] = _resolve(value)
    finally:
        runtime_config.set_all_config({})
    run = ProgramRun(stack=stack, outputs=outputs)
    for request, urn in monitor.registrations:
        run.resources.append(
            Registered(
                type=request.type,
                name=request.name,
                urn=urn,
                parent=request.parent,
                custom=bool(request.custom),
                dependencies=list(request.dependencies),
                inputs=dict(mocks.inputs.get((request.type, request.name), {})),
            )
        )
    return run


def reset_pulumi() -> None:
    runtime_settings.reset_options()
    runtime_config.set_all_config({})


def _resolve(value: Any) -> Any:
    if isinstance(value, pulumi.Output):
        return _sync_await(value.future())
    return value
