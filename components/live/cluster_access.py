"""Reaching the experiment's cluster for the commands that read it (status, top, logs, tensorboard):
the kubeconfig looked for and checked, and one clear line (exit 2) where the cluster cannot be read:
no kubeconfig or not one, no answer, a refusal, or no JobSet for a stack that asks for one."""

from __future__ import annotations

import logging
import shlex
import sys
from pathlib import Path
from typing import Any, Callable, Optional, TextIO

from ..access.kubeconfig import (
    Kubeconfig,
    KubeconfigError,
    credentials_failure,
    kept_client_log,
    kubeconfig_files,
    new_api_client,
    read_kubeconfig,
)
from ..objects.api_errors import api_error_text
from ..plan.experiment import Experiment
from ..spec.stack_files import PROJECT_ROOT, looks_like_a_path

JOBSET_CRD = "jobsets.jobset.x-k8s.io"


class NoJobSetError(RuntimeError):
    """The stack asks for the JobSet model on a cluster without JobSet."""


def no_jobset_message(stack: str) -> str:
    return (
        f"stack '{stack}': the cluster has no JobSet ({JOBSET_CRD} is not installed); install JobSet "
        "(docs/lifecycle.md) or set tfk8s:cluster.workload: statefulset"
    )


class _ClusterUnreadable(Exception):
    """The cluster cannot be read; the message says why, to follow the stack's name."""


def _api_client(stack: str, kubeconfig: Optional[str], context: Optional[str]) -> tuple[Any, Kubeconfig]:
    """The client of the kubeconfig looked for, and the kubeconfig as checked; _ClusterUnreadable where
    there is none or it cannot be used. `stack`: as make's STACK takes it (make_stack)."""
    try:
        files = kubeconfig_files(kubeconfig)
    except KubeconfigError as why:
        raise _ClusterUnreadable(str(why)) from None
    if not any(path.exists() for path in files.paths):
        raise _ClusterUnreadable(
            f"no kubeconfig at {files.shown} ({files.why}); for the local cluster run "
            f"`make cluster-up {shlex.quote(f'STACK={stack}')}` and then `make status {shlex.quote(f'STACK={stack}')}` "
            "(which passes --kubeconfig .cluster/kubeconfig)"
        )
    try:
        checked = read_kubeconfig(files, context)
        return new_api_client(checked), checked
    except KubeconfigError as why:
        raise _ClusterUnreadable(f"kubeconfig {files.shown} ({files.why}): {why}") from None


def _answered(api: Any, kubeconfig: Kubeconfig, action: Callable[[Any], int]) -> int:
    """`action(api)`; _ClusterUnreadable where the API server does not answer or refuses."""
    from kubernetes import config
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError, MaxRetryError

    host = api.configuration.host
    with kept_client_log() as logged:
        try:
            return action(api)
        except MaxRetryError as error:
            reason = getattr(error.reason, "args", [error.reason])[-1]
            said = f"the API server at {host} does not answer ({reason})"
        except ApiException as error:
            said = f"the API server at {host} refused: {api_error_text(error.status, error.reason, error.body)}"
        except (config.ConfigException, HTTPError, OSError) as error:
            said = f"cannot read the cluster from {kubeconfig.path}: {error}"
    # Credentials that expired meanwhile, and an exec plugin that could not renew them: the cause, not its effect.
    raise _ClusterUnreadable(credentials_failure(kubeconfig, logged) if logged else said)


def make_stack(experiment: Experiment, stack_given: Optional[str]) -> str:
    """The stack as a hint's `make ... STACK=` names it: make runs in the project's folder, where a
    stack given by its path is found by the path from there (or the whole path), not by its name."""
    if stack_given is None or not looks_like_a_path(stack_given):
        return experiment.stack
    path = Path(stack_given).resolve()
    try:
        return str(path.relative_to(PROJECT_ROOT))
    except ValueError:
        return str(path)


def with_cluster(
    experiment: Experiment,
    kubeconfig: Optional[str],
    context: Optional[str],
    action: Callable[[Any], int],
    stack_given: Optional[str] = None,
    err: Optional[TextIO] = None,
) -> int:
    """Run `action(api)` against the cluster of `kubeconfig`/`context`; 2 with one clear line (on `err`,
    standard error by default) when the cluster cannot be read (no kubeconfig or not one, no answer, a
    refusal, no JobSet for a stack that asks for one). `stack_given`: the stack as the user gave it (a
    name, or a stack file's path)."""
    # One clear line for an API server that does not answer, not urllib3's retries and warnings.
    logging.getLogger("urllib3").setLevel(logging.ERROR)
    try:
        api, checked = _api_client(make_stack(experiment, stack_given), kubeconfig, context)
        api.configuration.retries = False
        return _answered(api, checked, action)
    except _ClusterUnreadable as why:
        print(f"stack '{experiment.stack}': {why}", file=err or sys.stderr)
        return 2
    except NoJobSetError as error:
        print(error, file=err or sys.stderr)
        return 2
