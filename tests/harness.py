"""Runs the real Pulumi program (`__main__.py`) under recording mocks.

The program reads its config exactly as under the CLI (the engine's config
map, objects as JSON strings), so tests and the benchmark exercise the same
path a user's `pulumi preview` does, without the CLI or a cluster.
"""

from __future__ import annotations

import json
import runpy
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Mapping, Sequence

import pulumi
from google.protobuf import json_format
from pulumi.runtime import config as runtime_config
from pulumi.runtime import rpc
from pulumi.runtime import settings as runtime_settings
from pulumi.runtime.mocks import MockMonitor
from pulumi.runtime.proto import resource_pb2
from pulumi.runtime.stack import wait_for_rpcs
from pulumi.runtime.sync_await import _sync_await

from components.resources import entry_point
from components.resources.provider_cluster import NoCluster

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


def by_identity(manifests) -> dict[tuple, dict[str, Any]]:
    """Manifests keyed by (kind, namespace, name): the engine registers resources
    as their dependencies resolve, not in program order."""
    return {(m["kind"], m["metadata"].get("namespace"), m["metadata"]["name"]): m for m in manifests}


@dataclass
class Registered:
    type: str
    name: str
    urn: str
    parent: str
    custom: bool
    dependencies: list[str]
    wire_inputs: Any
    # Outputs the program asked the engine to keep secret, beyond what it detects.
    secret_outputs: list[str] = field(default_factory=list)
    provider: str = ""  # the provider reference the resource was registered with
    retain_on_delete: bool = False  # `pulumi destroy` forgets it instead of deleting it

    @cached_property
    def inputs(self) -> dict[str, Any]:
        return dict(rpc.deserialize_properties(self.wire_inputs))

    @property
    def manifest(self) -> dict[str, Any]:
        return plain(self.inputs)

    @property
    def wire_text(self) -> str:
        """The inputs as the engine receives them (a secret wrapped in Pulumi's secret signature)."""
        return json_format.MessageToJson(self.wire_inputs)

    @property
    def kind(self) -> str:
        return self.type.rsplit(":", 1)[-1]


class EchoMocks(pulumi.runtime.Mocks):
    """Every resource's state is its inputs, as a provider's preview reports it."""

    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        return f"{args.name}-id", args.inputs

    def call(self, args: pulumi.runtime.MockCallArgs):
        return {}


class RecordingMonitor(MockMonitor):
    """Echoes each registration's inputs as its state and records it.

    Same answers as MockMonitor with EchoMocks, but the inputs go back as the
    very protobuf Struct that arrived: decoding and re-encoding every object
    in a thread would double the Python work a real engine does in Go, and
    the benchmark times the program, not the mock.
    """

    def __init__(self) -> None:
        super().__init__(EchoMocks())
        self.registrations: list[tuple[Any, str]] = []

    def RegisterResource(self, request):
        urn = self.make_urn(request.parent, request.type, request.name)
        if request.type == "pulumi:pulumi:Stack":
            return resource_pb2.RegisterResourceResponse(urn=urn)
        self.registrations.append((request, urn))
        resource_id = f"{request.name}-id" if request.custom else ""
        return resource_pb2.RegisterResourceResponse(urn=urn, id=resource_id, object=request.object)


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


def run_program(
    stack: str,
    values: Mapping[str, Any],
    preview: bool = False,
    monitor: RecordingMonitor | None = None,
    program: Path = PROGRAM,
    secret_keys: Sequence[str] = (),
) -> ProgramRun:
    """Run `program` (the project's `__main__.py`) for `stack` with config `values`; raise what it raises.

    Pass a `monitor` to see what was registered even when the program fails; `secret_keys`, the keys
    the engine would hold as secrets (set with `pulumi config set --secret`).
    """
    monitor = monitor or RecordingMonitor()
    runtime_settings.reset_options(project="tfk8s", stack=stack, preview=preview)
    pulumi.runtime.set_mocks(
        monitor.mocks, project="tfk8s", stack=stack, preview=preview, monitor=monitor
    )
    runtime_config.set_all_config(engine_values(values), list(secret_keys))
    # No cluster is behind the mocks' provider: the checks that read one are skipped, never pointed
    # at whatever cluster ~/.kube/config names.
    checks_read, entry_point.cluster_for_checks = entry_point.cluster_for_checks, NoCluster()
    try:
        runpy.run_path(str(program), run_name="__main__")
        _sync_await(wait_for_rpcs())
        root = runtime_settings.get_root_resource()
        outputs = {}
        for name, value in getattr(root, "outputs", {}).items():
            outputs[name] = _resolve(value)
    finally:
        runtime_config.set_all_config({}, [])
        entry_point.cluster_for_checks = checks_read
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
                wire_inputs=request.object,
                provider=request.provider,
                secret_outputs=list(request.additionalSecretOutputs),
                retain_on_delete=bool(request.retainOnDelete),
            )
        )
    return run


def reset_pulumi() -> None:
    runtime_settings.reset_options()
    runtime_config.set_all_config({}, [])


def _resolve(value: Any) -> Any:
    if isinstance(value, pulumi.Output):
        return _sync_await(value.future())
    return value
