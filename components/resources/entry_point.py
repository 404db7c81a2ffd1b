"""The Pulumi program: read the stack's config once, build the components, export."""

from __future__ import annotations

import contextlib
import gc
import json
from pathlib import Path
from typing import Any, Collection, Iterator, Mapping, Optional

import pulumi

from ..objects.loading import load_experiment_values
from ..plan.experiment import Experiment
from ..plan.trainer_bundle import load_trainer_bundle
from ..spec.env_order import in_stack_file_order
from ..spec.loading import is_near_namespace, load_stack_config
from ..spec.models import CONFIG_NAMESPACE, StackConfigError
from ..spec.secrets import encrypted_paths, split_secrets
from ..spec.stack_files import PROJECT_ROOT, read_stack_values, stack_path
from . import arguments, private_apis
from .admission import refuse_never_admitted
from .provider_cluster import ClusterReader, ProviderCluster
from .team_namespace import check_team_namespace
from .tf_experiment import experiment_outputs, register_experiment


def engine_config() -> dict[str, Any]:
    """All `tfk8s:*` values the engine passed, decoded.

    pulumi.Config reads one known key at a time; tfk8s needs every key of its
    namespace to reject typos, so it reads the runtime's config map.
    """
    values: dict[str, Any] = {}
    for key, raw in private_apis.engine_config().items():
        # A namespace one slip from tfk8s's is passed on too, so that it is refused, not ignored.
        if not key.startswith(f"{CONFIG_NAMESPACE}:") and not is_near_namespace(key.split(":", 1)[0]):
            continue
        try:
            values[key] = json.loads(raw) if isinstance(raw, str) else raw
        except json.JSONDecodeError:
            values[key] = raw  # a plain string value
    return values


def engine_secret_keys() -> set[str]:
    """The `tfk8s:*` keys the engine holds as secrets (set with `pulumi config set --secret`)."""
    return {key for key in private_apis.engine_secret_keys() if key.startswith(f"{CONFIG_NAMESPACE}:")}


def build(
    stack: str,
    values: Mapping[str, Any],
    opts: Optional[pulumi.ResourceOptions] = None,
    secret_keys: Collection[str] = (),
    known_encrypted: Optional[Collection[str]] = None,
    cluster: Optional[ClusterReader] = None,
) -> Experiment:
    """Validate, then register every resource of the experiment and export its plan.

    `opts` reaches every resource: an explicit `kubernetes.Provider` (`providers=[...]`),
    `transforms`, `aliases`. The project's __main__.py passes none (the default provider
    reads `kubernetes:context` / `kubernetes:kubeconfig` from the stack file); a program
    of one's own may pass them. On `cluster` (default: the default provider's), first: a queued
    experiment Kueue could never admit is refused, and so is one in a team's namespace that lacks
    what the stack names there.
    """
    arguments.check_instance("build", "stack", stack, str, "a str (the stack's name)")
    arguments.check_instance("build", "values", values, Mapping, "a mapping of the stack's tfk8s:* values")
    arguments.check_opts("build", opts)
    experiment = load_experiment_values(
        stack, values, load_trainer_bundle(PROJECT_ROOT), secret_keys=secret_keys, known_encrypted=known_encrypted
    )
    if opts is None or not (opts.provider or opts.providers):
        # With a provider of the program's own, which cluster it talks to is the program's business.
        cluster = cluster or ProviderCluster()
        refuse_never_admitted(experiment, cluster)
        check_team_namespace(experiment, cluster)
    node_pools, tf_cluster = register_experiment(experiment, opts)
    for name, value in experiment_outputs(experiment, tf_cluster, node_pools).items():
        pulumi.export(name, value)
    return experiment


# A Pulumi program is a short-lived process that builds one large object graph
# (every resource with its inputs, outputs and futures) and exits. CPython's
# cycle collector rescans that growing graph again and again, so each task
# added costs more than the last, whatever the thresholds; reference counting
# frees nearly all of the program's garbage anyway. So the collector is off
# while the program runs: benchmarks/program_under_mocks.py prints the time
# and peak memory this trades (2,000 workers: linear time, about a tenth more
# memory). It stays off after main() returns: the SDK sends the registrations
# after that, and the graph is there to rescan until the process ends. A
# process that runs the program inline and goes on restores it itself.


def pause_garbage_collector() -> None:
    gc.freeze()  # what the imports built is never scanned again either
    gc.disable()


@contextlib.contextmanager
def collector_restored() -> Iterator[None]:
    """Around an inline run of the program by a process that goes on (tools/engine, tune): the
    collector back as the process had it."""
    collecting = gc.isenabled()
    try:
        yield
    finally:
        gc.unfreeze()
        if collecting:
            gc.enable()


def stack_file_values(stack_file: Path) -> Optional[dict[str, Any]]:
    """The stack file's values as written, read once for what the engine's config no longer shows:
    values as plan checks them, the paths of its encrypted values, and env's order. None where there is
    no file (a program of one's own: its values are the program's, every plain env value of a secret
    key is kept secret, and env is in the engine's order)."""
    if not stack_file.is_file():
        return None
    _, values = read_stack_values(str(stack_file))
    return values


def refuse_as_plan_does(stack: str, written: Optional[Mapping[str, Any]]) -> None:
    """The stack file's values as written, checked as `plan` checks them: the engine passes them
    already parsed, a key left empty as null (which would read as its default at any depth) and
    `1:30` as the text YAML 1.2 makes of it, so preview and up alone would take what plan refuses
    (spec/as_written.py)."""
    if written is not None:
        secrets = split_secrets(stack, written)
        load_stack_config(stack, secrets.values, secrets.env_names)  # as plan: `secure:` leaves as text


# What the stack program's checks read: the default provider's cluster. A program run under
# unit-test mocks, with no cluster behind its provider, is given NoCluster (tests/harness.py).
cluster_for_checks: ClusterReader = ProviderCluster()


def main(stack_file: Optional[Path] = None) -> None:
    """The program for `stack_file` (default: stacks/Pulumi.<stack>.yaml, where the CLI reads it)."""
    pause_garbage_collector()
    stack = pulumi.get_stack()
    try:
        written = stack_file_values(stack_file or stack_path(stack))
        refuse_as_plan_does(stack, written)
        build(
            stack,
            in_stack_file_order(engine_config(), written),
            secret_keys=engine_secret_keys(),
            known_encrypted=None if written is None else encrypted_paths(written),
            cluster=cluster_for_checks,
        )
    except StackConfigError as error:
        # RunError: the CLI shows the message alone, without a Python traceback.
        raise pulumi.RunError(str(error)) from None
