"""A kubeconfig file, checked before the Kubernetes client reads it: the client's own errors for a file that is
not YAML or not a kubeconfig are tracebacks from deep inside it, naming neither the file nor what is wrong."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import yaml

from components.spec.strict_yaml import yaml_problem
from components.spec.user_files import UnreadableFile, read_user_text

KUBECONFIG_LISTS = ("clusters", "contexts", "users")


def kubeconfig_problem(path: Path) -> Optional[str]:
    """Why `path` is not a kubeconfig the client can read (a phrase to follow its name), or None."""
    try:
        text = read_user_text(path)
    except UnreadableFile as why:
        return str(why)
    try:
        # As kubectl reads it: no stricter (a key given twice is kubectl's business, not tfk8s's).
        document = yaml.safe_load(text)
    except yaml.YAMLError as error:
        return f"is not YAML: {yaml_problem(error)}"
    if not isinstance(document, dict):
        return f"is not a kubeconfig: it holds {_kind(document)}, not a mapping of clusters, contexts and users"
    for key in KUBECONFIG_LISTS:
        entries = document.get(key)
        if entries is None:
            continue
        if not isinstance(entries, list):
            return f"is not a kubeconfig: its {key} is {_kind(entries)}, not a list"
        for index, entry in enumerate(entries):
            if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                return f"is not a kubeconfig: its {key}[{index}] is not a mapping with a name"
    if not document.get("clusters") and not document.get("contexts"):
        return "is not a kubeconfig: it lists no clusters and no contexts"
    return None


def _kind(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, list):
        return "a YAML list"
    if isinstance(value, dict):
        return "a YAML mapping"
    if isinstance(value, str):
        return "a YAML string"
    return f"a YAML {type(value).__name__}"
