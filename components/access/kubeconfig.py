"""The kubeconfig a command reads, found and merged as kubectl finds and merges it, and checked before the
Kubernetes client reads it: the client's own errors for a file that is not YAML or not a kubeconfig are
tracebacks from deep inside it, naming neither the file nor what is wrong.

Which files: `--kubeconfig` (or the stack's `kubernetes:kubeconfig`), else every file `$KUBECONFIG` lists
(kubectl merges them: the first file to name a cluster, context or user wins, and the first that sets
current-context), else ~/.kube/config. `status`, `top` and the Pulumi program's reads before `preview`
(components/resources/provider_cluster.py) all take their cluster from here, so they read the one the
provider and kubectl would.

The client also runs a user's exec plugin (the program that fetches credentials, `aws eks get-token`) as it
loads the file; when the plugin cannot run it logs the error on the root logger (an `ERROR:root:` line of
its own on stderr) and goes on without credentials, so the failure would surface later as an API server
that does not answer or refuses. `new_api_client` keeps that log and names the plugin instead.
"""

from __future__ import annotations

import logging
import os
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Optional

import yaml

from ..spec.strict_yaml import described, yaml_problem
from ..spec.user_files import UnreadableFile, read_user_text

KUBECONFIG_LISTS = ("clusters", "contexts", "users")
DEFAULT_KUBECONFIG = "~/.kube/config"


class KubeconfigError(ValueError):
    """The kubeconfig cannot be used; the message says why, to follow the file's name."""


@dataclass(frozen=True)
class KubeconfigFiles:
    """The files a command reads its cluster from, in kubectl's order, and why those."""

    paths: tuple[Path, ...]
    why: str  # "given with --kubeconfig", "from $KUBECONFIG", "the default; ..."

    @property
    def shown(self) -> str:
        return os.pathsep.join(map(str, self.paths))


def kubeconfig_files(given: Optional[str], given_as: str = "--kubeconfig") -> KubeconfigFiles:
    """The kubeconfig files kubectl would read: `given` (a path), else every file $KUBECONFIG lists that
    exists (all of them where none does, so that the error names them), else ~/.kube/config.
    KubeconfigError for a given path that is empty (`--kubeconfig "$UNSET"`, which the client would
    quietly take for ~/.kube/config, another cluster perhaps)."""
    if given is not None:
        if not given.strip():
            raise KubeconfigError(
                f"{given_as} is empty; give a kubeconfig file's path, or leave {given_as} out for $KUBECONFIG, "
                f"then {DEFAULT_KUBECONFIG}"
            )
        return KubeconfigFiles((Path(given).expanduser(),), f"given with {given_as}")
    listed = [Path(entry).expanduser() for entry in os.environ.get("KUBECONFIG", "").split(os.pathsep) if entry]
    if listed:
        existing = [path for path in listed if path.exists()]
        return KubeconfigFiles(tuple(existing or listed), "from $KUBECONFIG")
    return KubeconfigFiles(
        (Path(DEFAULT_KUBECONFIG).expanduser(),), f"the default; set {given_as} or $KUBECONFIG for another"
    )


@dataclass(frozen=True)
class Kubeconfig:
    """A kubeconfig whose shape the client can read, and the context it is read for."""

    files: KubeconfigFiles
    context_name: Optional[str]  # as given: None for the merged current-context
    document: dict[str, Any]  # the files merged as kubectl merges them
    context: dict[str, Any]

    @property
    def path(self) -> str:
        """The file (or the files, as $KUBECONFIG lists them) it was read from."""
        return self.files.shown

    def exec_plugin(self) -> Optional[tuple[str, str]]:
        """The context's user and the command of its exec plugin; None where it has none."""
        user_name = self.context.get("user")
        credentials = (_named(self.document.get("users"), user_name) or {}).get("user")
        plugin = credentials.get("exec") if isinstance(credentials, dict) else None
        if not isinstance(plugin, dict):
            return None
        return str(user_name), str(plugin.get("command"))


def read_kubeconfig(files: KubeconfigFiles, context: Optional[str]) -> Kubeconfig:
    """The kubeconfig of `files`, merged, for `context` (None: its current-context); KubeconfigError where
    the client could not read it or would not find the context or its cluster."""
    documents = []
    for path in files.paths:
        try:
            documents.append(_document(path))
        except KubeconfigError as why:
            raise KubeconfigError(f"{path}: {why}" if len(files.paths) > 1 else str(why)) from None
    document = merged(documents)
    if not document.get("clusters") and not document.get("contexts"):
        # One file of several may hold users alone; all of them together must name a cluster.
        raise KubeconfigError(
            f"is not a kubeconfig: {'they list' if len(documents) > 1 else 'it lists'} no clusters and no contexts"
        )
    chosen = _context(document, context)
    cluster = chosen.get("cluster")
    if isinstance(cluster, str) and _named(document.get("clusters"), cluster) is None:
        raise KubeconfigError(
            f"context '{_chosen_name(document, context)}' names cluster '{cluster}', which it does not list; "
            f"it has: {_names(document.get('clusters'))}"
        )
    user = chosen.get("user")
    if isinstance(user, str) and user and _named(document.get("users"), user) is None:
        # The client would go on without credentials, and the API server's refusal would be all it said.
        raise KubeconfigError(
            f"context '{_chosen_name(document, context)}' names user '{user}', which it does not list; "
            f"it has: {_names(document.get('users'))}"
        )
    _check_server(_named(document.get("clusters"), cluster) or {}, cluster)
    return Kubeconfig(files, context, document, chosen)


def _check_server(entry: dict[str, Any], name: Any) -> None:
    """A server the client can reach: a URL with its scheme (without one, the client warns with its
    own source line and then fails to connect)."""
    server = (entry.get("cluster") or {}).get("server") if isinstance(entry.get("cluster"), dict) else None
    if not isinstance(server, str) or not server.startswith(("https://", "http://")):
        shown = "no server" if server in (None, "") else f"server {server!r}"
        raise KubeconfigError(
            f"cluster '{name}' has {shown}: it must be the API server's URL, such as https://host:6443"
        )


def merged(documents: list[dict[str, Any]]) -> dict[str, Any]:
    """Kubeconfig documents merged as kubectl merges $KUBECONFIG's files: the first to name an entry of
    a list wins, and so does the first to set current-context."""
    result: dict[str, Any] = {}
    for document in documents:
        for key, value in document.items():
            if key in KUBECONFIG_LISTS:
                names = {entry["name"] for entry in result.get(key, ())}
                result[key] = [*result.get(key, ()), *(entry for entry in value or () if entry["name"] not in names)]
            elif result.get(key) in (None, ""):
                result[key] = value
    return result


def _chosen_name(document: dict[str, Any], context: Optional[str]) -> Any:
    return context if context is not None else document.get("current-context")


def _document(path: Path) -> dict[str, Any]:
    try:
        text = read_user_text(path)
    except UnreadableFile as why:
        raise KubeconfigError(str(why)) from None
    try:
        # As kubectl reads it: no stricter (a key given twice is kubectl's business, not tfk8s's).
        document = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise KubeconfigError(f"is not YAML: {yaml_problem(error)}") from None
    if not isinstance(document, dict):
        raise KubeconfigError(
            f"is not a kubeconfig: it holds {described(document)}, not a mapping of clusters, contexts and users"
        )
    for key in KUBECONFIG_LISTS:
        entries = document.get(key)
        if entries is None:
            continue
        if not isinstance(entries, list):
            raise KubeconfigError(f"is not a kubeconfig: its {key} is {described(entries)}, not a list")
        for index, entry in enumerate(entries):
            if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                raise KubeconfigError(f"is not a kubeconfig: its {key}[{index}] is not a mapping with a name")
    return document


def _context(document: dict[str, Any], context: Optional[str]) -> dict[str, Any]:
    """The `context:` mapping of the context the client will use, or the one line where the client's own
    would be `Expected object with name y in <file>/contexts list`."""
    name = _chosen_name(document, context)
    named_by = "--context" if context is not None else "current-context"
    if name is None:
        raise KubeconfigError(f"it sets no current-context; give --context, one of: {_names(document.get('contexts'))}")
    entry = _named(document.get("contexts"), name)
    if entry is None:
        raise KubeconfigError(f"{named_by} '{name}' names no context; it has: {_names(document.get('contexts'))}")
    chosen = entry.get("context")
    if not isinstance(chosen, dict):
        raise KubeconfigError(f"its context '{name}' is {described(chosen)}, not a mapping of cluster and user")
    return chosen


def _named(entries: Any, name: Any) -> Optional[dict[str, Any]]:
    return next((entry for entry in entries or () if entry.get("name") == name), None)


def _names(entries: Any) -> str:
    return ", ".join(entry["name"] for entry in entries or ()) or "none"


class _Kept(logging.Handler):
    def __init__(self, messages: list[str]) -> None:
        super().__init__(logging.ERROR)
        self.messages = messages

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@contextmanager
def kept_client_log() -> Iterator[list[str]]:
    """The errors the client logs on the root logger meanwhile, kept from stderr: with a handler of its
    own, the root logger makes none for stderr (logging.error's basicConfig)."""
    messages: list[str] = []
    handler = _Kept(messages)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield messages
    finally:
        root.removeHandler(handler)


def credentials_failure(kubeconfig: Kubeconfig, logged: list[str]) -> str:
    """What the client logged when it could not get credentials, naming the exec plugin that failed."""
    said = (logged[-1].strip().splitlines() or ["no reason given"])[0]
    plugin = kubeconfig.exec_plugin()
    if plugin is None:
        return f"the Kubernetes client could not load its credentials: {said}"
    user, command = plugin
    return f"the exec plugin '{command}', which gets user '{user}' its credentials, failed: {said}"


def new_api_client(kubeconfig: Kubeconfig) -> Any:
    """The Kubernetes client of `kubeconfig`; KubeconfigError where it cannot be used."""
    from kubernetes import config

    with kept_client_log() as logged:
        try:
            # The client merges the files of a $KUBECONFIG-like list itself, as kubectl does, each file's
            # relative paths (certificates) taken from where it lies.
            api = config.new_client_from_config(config_file=kubeconfig.files.shown, context=kubeconfig.context_name)
        except (config.ConfigException, OSError, ValueError, TypeError, KeyError, AttributeError) as error:
            # The client reads the file's clusters, users and their certificate files without checking
            # their shapes: any of these is the kubeconfig's fault, told in one line.
            said = str(error).splitlines()[0] if str(error) else type(error).__name__
            raise KubeconfigError(f"cannot be used: {said}") from None
    if logged:
        raise KubeconfigError(credentials_failure(kubeconfig, logged))
    return api
