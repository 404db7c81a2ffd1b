"""An experiment's stack in the engine's own local workspace: its state, plugins and config.

Nothing here touches the user's ~/.pulumi or the project's stack files: the
engine's home, its file backend and the workspace it reads the stack's config
from all live under one folder (.cluster/pulumi/ by default, beside the local
cluster they describe).
"""

from __future__ import annotations

import functools
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import yaml
from pulumi import automation as auto
from semver import VersionInfo

from components.resources.entry_point import collector_restored
from components.resources.entry_point import main as tfk8s_program
from components.resources.private_apis import kubernetes_sdk_version
from components.spec.atomic_files import write_text_atomic
from components.spec.secrets import encrypted_paths
from components.spec.stack_files import PROJECT_ROOT, read_stack_values, stack_path
from components.spec.strict_yaml import TextKeepingDumper
from tools.localcluster.paths import CLUSTER_ROOT
from tools.toolchain.versions import recorded_versions

from . import interrupted

# `make toolchain` builds .tools/bin/pulumi (the Automation API runs <root>/bin/pulumi)
# and .tools/bin/pulumi-resource-kubernetes.
TOOLS_ROOT = PROJECT_ROOT / ".tools"
PROVIDER = TOOLS_ROOT / "bin" / "pulumi-resource-kubernetes"
# The policy pack as an analyzer plugin the CLI starts itself (no Python language host).
POLICY_PACK = PROJECT_ROOT / "policy" / "analyzer"
PROJECT_FILE = PROJECT_ROOT / "Pulumi.yaml"


class ToolchainPulumi(auto.PulumiCommand):
    """The CLI `make toolchain` built, of the version versions.env records (its build stamps it, and
    tests/cluster/test_engine.py checks it): the Automation API is told that version instead
    of running `pulumi version` to learn it, a tenth of a second of every engine run's start."""

    def __init__(self) -> None:  # the parent's own runs `pulumi version`: nothing of it is needed
        self.command = str(TOOLS_ROOT / "bin" / "pulumi")
        self.version = VersionInfo.parse(recorded_versions()["PULUMI_VERSION"].removeprefix("v"))


class EngineError(Exception):
    """What keeps the engine from starting, in one line."""


@dataclass(frozen=True)
class EngineDirs:
    root: Path

    @property
    def state(self) -> Path:
        """The file backend: one checkpoint per stack."""
        return self.root / "state"

    @property
    def home(self) -> Path:
        """PULUMI_HOME: the engine's own, so a user's ~/.pulumi is never read or written."""
        return self.root / "home"

    @property
    def workspace(self) -> Path:
        """Pulumi.yaml and each stack's Pulumi.<stack>.yaml, as the engine reads them."""
        return self.root / "workspace"


DEFAULT_DIRS = EngineDirs(CLUSTER_ROOT / "pulumi")


def project_name() -> str:
    return yaml.safe_load(PROJECT_FILE.read_text(encoding="utf-8"))["name"]


# How the stack file says which secrets provider encrypted its `secure:` values (the passphrase
# provider's salt, or another provider and its key).
SECRETS_PROVIDER_KEYS = ("secretsprovider", "encryptedkey", "encryptionsalt")
PASSPHRASE_VARIABLES = ("PULUMI_CONFIG_PASSPHRASE", "PULUMI_CONFIG_PASSPHRASE_FILE")


def write_stack_settings(stack_or_path: str, workspace: Path, kubeconfig: Path) -> str:
    """Copy the stack file's config into the workspace, with the local cluster's kubeconfig as the
    Kubernetes provider's (unless the stack names one); the stack's name.

    The engine writes the stack's secrets salt (`encryptionsalt`) into the file it
    reads: a copy keeps that out of the project's stack files, and the salt it
    wrote before is kept, as the stack's state was encrypted with it. A stack file that holds
    secrets (`pulumi config set --secret`, `make pulumi`) has its own salt, with which they were
    encrypted: that one is copied. The program reads the provider's kubeconfig from the config
    too (components/resources/admission.py): an inline program runs in this process, which has no
    $KUBECONFIG of the engine's.
    """
    stack, config = read_stack_values(stack_or_path)
    config = {**config}
    config.setdefault("kubernetes:kubeconfig", str(kubeconfig.resolve()))
    settings_file = workspace / f"Pulumi.{stack}.yaml"
    own = _secrets_provider(stack_document(stack_or_path))
    if not own and settings_file.exists():
        own = _secrets_provider(yaml.safe_load(settings_file.read_text(encoding="utf-8")))
    if encrypted_paths(config) and not passphrase_given():
        raise EngineError(
            f"stack '{stack}' holds secrets (set with `pulumi config set --secret`): set "
            "PULUMI_CONFIG_PASSPHRASE (or PULUMI_CONFIG_PASSPHRASE_FILE) to the passphrase they were set with"
        )
    workspace.mkdir(parents=True, exist_ok=True)
    # Text as text for the engine's YAML 1.2 too (a quoted '1e-3' in the stack file stays quoted).
    settings = yaml.dump({**own, "config": config}, Dumper=TextKeepingDumper, sort_keys=False)
    write_text_atomic(settings_file, settings)
    return stack


def stack_document(stack_or_path: str) -> dict[str, Any]:
    """The stack file as a whole (its config already read and checked by read_stack_values)."""
    document = yaml.safe_load(stack_path(stack_or_path).read_text(encoding="utf-8"))
    return document if isinstance(document, dict) else {}


def _secrets_provider(document: Any) -> dict[str, Any]:
    if not isinstance(document, dict):
        return {}
    return {key: document[key] for key in SECRETS_PROVIDER_KEYS if key in document}


def install_provider(home: Path) -> None:
    """Put the built provider in the engine's plugin cache under the version the program asks for.

    The `pulumi-kubernetes` package asks for the provider plugin of its own version, a
    release, and the engine takes plugins from its plugin cache only (not from $PATH:
    PULUMI_IGNORE_AMBIENT_PLUGINS), where `pulumi plugin install` would put that release.
    The built provider is the commit before the release (tools/toolchain/versions.env): it
    stands in for that release only, and an SDK of another version is refused here rather
    than run against a provider it was not made for.
    """
    if not PROVIDER.exists():
        raise EngineError(f"{PROVIDER} is missing: run `make toolchain` first")
    version = kubernetes_sdk_version()
    release = recorded_versions()["PULUMI_KUBERNETES_RELEASE"]
    if version != release:
        raise EngineError(
            f"pulumi-kubernetes {version} is installed, but the provider `make toolchain` builds stands in for "
            f"{release} only (tools/toolchain/versions.env): install requirements.txt's pin"
        )
    plugin = home / "plugins" / f"resource-kubernetes-v{version}" / PROVIDER.name
    plugin.parent.mkdir(parents=True, exist_ok=True)
    if not plugin.is_symlink() or plugin.resolve() != PROVIDER.resolve():
        # Made under a temporary name and renamed over the old one: two engine runs that start
        # together in one state folder (`make up` of two stacks) both link it without a race.
        staged = plugin.with_name(f"{plugin.name}.{os.getpid()}")
        staged.unlink(missing_ok=True)
        staged.symlink_to(PROVIDER)
        staged.replace(plugin)


def passphrase_given() -> bool:
    return any(os.environ.get(name) for name in PASSPHRASE_VARIABLES)


def passphrase_env() -> dict[str, str]:
    """The user's passphrase as the CLI is given it: the variable, else the file's content (read
    here, trimmed as the CLI trims it: the CLI takes a variable that is set, even empty, over
    the file), else empty."""
    if os.environ.get("PULUMI_CONFIG_PASSPHRASE"):
        return {"PULUMI_CONFIG_PASSPHRASE": os.environ["PULUMI_CONFIG_PASSPHRASE"]}
    passphrase_file = os.environ.get("PULUMI_CONFIG_PASSPHRASE_FILE")
    if passphrase_file:
        try:
            return {"PULUMI_CONFIG_PASSPHRASE": Path(passphrase_file).read_text(encoding="utf-8").strip()}
        except (OSError, UnicodeDecodeError) as error:
            raise EngineError(f"PULUMI_CONFIG_PASSPHRASE_FILE {passphrase_file} cannot be read: {error}") from None
    return {"PULUMI_CONFIG_PASSPHRASE": ""}


def engine_env(kubeconfig: Path, dirs: EngineDirs) -> dict[str, str]:
    return {
        "PULUMI_BACKEND_URL": dirs.state.resolve().as_uri(),
        # A stack without secrets needs no passphrase: it is empty unless the user gives one. A
        # stack with secrets is refused without one (write_stack_settings).
        **passphrase_env(),
        # The default Kubernetes provider reads KUBECONFIG: the local cluster's.
        "KUBECONFIG": str(kubeconfig.resolve()),
        # Everything the engine needs is built here; it would only try the network.
        "PULUMI_SKIP_UPDATE_CHECK": "true",
        "PULUMI_IGNORE_AMBIENT_PLUGINS": "true",
        "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
    }


def engine_stack(
    stack_or_path: str, kubeconfig: Path, dirs: EngineDirs = DEFAULT_DIRS, program: Callable[[], None] = tfk8s_program
) -> auto.Stack:
    """The stack (created on first use) in the engine's workspace, running `program` inline: tfk8s's
    own, the project's __main__.py, unless a team's program around it is given."""
    cli = TOOLS_ROOT / "bin" / "pulumi"
    if not cli.exists():
        raise EngineError(f"{cli} is missing: run `make toolchain` first")
    if not kubeconfig.exists():
        raise EngineError(f"no local cluster: {kubeconfig} is missing (start one with `make cluster-up STACK=<stack>`)")
    stack = write_stack_settings(stack_or_path, dirs.workspace, kubeconfig)
    dirs.state.mkdir(parents=True, exist_ok=True)
    install_provider(dirs.home)
    name = project_name()
    options = auto.LocalWorkspaceOptions(
        work_dir=str(dirs.workspace),
        pulumi_home=str(dirs.home),
        env_vars=engine_env(kubeconfig, dirs),
        project_settings=auto.ProjectSettings(name=name, runtime="python"),
        pulumi_command=ToolchainPulumi(),
    )
    if program is tfk8s_program:
        # The program reads which values are secrets from the stack file the engine was given.
        program = functools.partial(tfk8s_program, stack_file=stack_path(stack_or_path))
    return auto.create_or_select_stack(stack, project_name=name, program=program, opts=options)


COMMANDS = ("preview", "up", "destroy")


def run_engine(stack: auto.Stack, command: str, **options: Any) -> Any:
    """`command` on the stack, as `make preview|up|destroy` runs it: the policy pack on
    preview and up, after putting right what a killed earlier run left. Raises auto.CommandError
    when the engine fails (it printed why), EngineError when another run holds the stack."""
    if command not in COMMANDS:
        raise ValueError(f"unknown engine command {command!r}: one of {', '.join(COMMANDS)}")
    if command != "destroy":
        options.setdefault("policy_packs", [str(POLICY_PACK)])
    say = options.get("on_error") or _to_stderr
    # What a run killed half-way left (interrupted.py): its lock, its unfinished operations.
    project = project_name()
    try:
        interrupted.release_a_killed_runs_lock(stack, project, say)
    except interrupted.StackHeld as held:
        raise EngineError(str(held)) from None
    pending = interrupted.say_what_is_pending(stack, project, command, say)
    # The inline program pauses this process's garbage collector for its run (entry_point.py);
    # this process goes on, so it gets the collector back as it had it.
    with collector_restored():
        result = getattr(stack, command)(**options)
    interrupted.settle_pending_creates(stack, command, pending, say)
    return result


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
