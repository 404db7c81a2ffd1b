"""What `pulumi preview` checks in a team's namespace before anything is created (pure: the
reading is components/resources/team_namespace.py's).

A stack in a team's namespace (`cluster.namespace: {name, existing: true}`) names objects it
does not create: the namespace itself, Secrets (`program.env` values from a Secret, the image's
pull Secrets) and claims (`program.volumes`). One that is missing would leave the pods waiting
(CreateContainerConfigError, ImagePullBackOff, Pending) with nothing created to say why: it is
refused at preview, naming it and the namespace. One the user may not read is a warning, since
the pods' service account may still read it. The namespace's Pod Security level is shown:
tfk8s's pods meet `restricted` either way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from ..plan.experiment import Experiment
from ..spec.models import CONFIG_NAMESPACE

POD_SECURITY_ENFORCE = "pod-security.kubernetes.io/enforce"


@dataclass(frozen=True)
class NamedObject:
    kind: str  # Namespace, Secret or PersistentVolumeClaim
    name: str
    key: str  # the stack key that names it


class Forbidden(Exception):
    """The user may not read the object (403); its message says which permission is missing."""


class Unreadable(Exception):
    """The cluster did not answer."""


# (kind, name) -> the object as the API server has it, or None when there is none; raises
# Forbidden or Unreadable.
Reader = Callable[[str, str], Optional[dict[str, Any]]]


@dataclass
class Findings:
    errors: list[str] = field(default_factory=list)  # refused: nothing is created
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def named_objects(experiment: Experiment) -> list[NamedObject]:
    """The team's objects the stack names in its namespace, each once, in the stack's order."""
    ns = CONFIG_NAMESPACE
    named = [
        NamedObject("Secret", secret, f"{ns}:cluster.imagePullSecrets")
        for secret in experiment.config.cluster.image_pull_secrets
    ]
    program = experiment.program
    if program is not None:
        named += [
            NamedObject("Secret", value.secret, f"{ns}:program.env.{name}")
            for name, value in program.env.items()
            if not isinstance(value, str)
        ]
        named += [
            NamedObject("PersistentVolumeClaim", volume.claim, f"{ns}:program.volumes[{index}].claim")
            for index, volume in enumerate(program.volumes)
        ]
    unique: dict[tuple[str, str], NamedObject] = {}
    for obj in named:
        unique.setdefault((obj.kind, obj.name), obj)
    return list(unique.values())


def team_namespace_findings(experiment: Experiment, read: Reader) -> Findings:
    """What to refuse, warn about and show before an experiment goes up in a team's namespace."""
    findings = Findings()
    if not experiment.shares_namespace:
        return findings
    namespace, where = experiment.namespace, f"stack '{experiment.stack}'"
    try:
        found = read("Namespace", namespace)
    except (Forbidden, Unreadable) as error:
        findings.warnings.append(f"{where}: namespace {namespace}'s Pod Security level is not known: {error}")
    else:
        if found is None:
            findings.errors.append(
                f"{CONFIG_NAMESPACE}:cluster.namespace: namespace '{namespace}' does not exist, and with existing: "
                "true tfk8s never creates it; create it (or ask for it), or drop existing: true to let tfk8s "
                "create and own it"
            )
            return findings
        labels = (found.get("metadata") or {}).get("labels") or {}
        level = labels.get(POD_SECURITY_ENFORCE)
        enforced = f"enforces Pod Security level {level}" if level else "enforces no Pod Security level"
        findings.notes.append(
            f"{where}: namespace {namespace} {enforced}; tfk8s's pods meet the restricted level either way"
        )
    for obj in named_objects(experiment):
        try:
            if read(obj.kind, obj.name) is None:
                findings.errors.append(
                    f"{obj.key}: {obj.kind} '{obj.name}' does not exist in namespace "
                    f"'{namespace}'; create it there before pulumi up"
                )
        except (Forbidden, Unreadable) as error:
            findings.warnings.append(
                f"{where}: whether {obj.kind} '{obj.name}' ({obj.key}) exists in namespace "
                f"'{namespace}' is not checked: {error}"
            )
    return findings
