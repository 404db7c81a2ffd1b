"""A TFJob manifest, read: the TFJob (the first of a multi-document file), its roles and each role's
TensorFlow container; anything that is not a `kubeflow.org/v1` TFJob is refused by name."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any, Optional

import yaml

from ..objects.jobset import QUEUE_LABEL
from ..spec.kubernetes_limits import DNS1123_LABEL_RE, DNS1123_SUBDOMAIN_RE
from ..spec.strict_yaml import ManifestLoader, described, load_all_yaml, yaml_problem
from .manifest_shapes import CONTAINER, POD, RUN_POLICY, ShapeError, check_shape

TFJOB_API = "kubeflow.org/v1"
# Run settings early v1 TFJobs gave in spec, later ones in spec.runPolicy.
LEGACY_RUN_KEYS = ("cleanPodPolicy", "ttlSecondsAfterFinished", "activeDeadlineSeconds", "backoffLimit")
# TFJob's replica types, as its controller compares them (case-insensitively), to tfk8s's roles.
ROLE_OF_REPLICA_TYPE = {"chief": "chief", "master": "chief", "ps": "ps", "worker": "worker", "evaluator": "evaluator"}
# The container TFJob's controller configures: its default container name.
TF_CONTAINER = "tensorflow"
# What other kinds a user may hand over by mistake, by the name they know them by.
# Looked up by a document's apiVersion and kind as its YAML holds them: any value, or none.
OTHER_KINDS: dict[tuple[object, object], str] = {
    ("kubeflow.org/v2", "TrainJob"): "a Kubeflow Trainer v2 TrainJob (Trainer v2 has no TensorFlow runtime)",
    (
        "trainer.kubeflow.org/v1alpha1",
        "TrainJob",
    ): "a Kubeflow Trainer v2 TrainJob (Trainer v2 has no TensorFlow runtime)",
    ("kubeflow.org/v1", "PyTorchJob"): "a Kubeflow PyTorchJob",
    ("kubeflow.org/v1", "MPIJob"): "a Kubeflow MPIJob",
    ("kubeflow.org/v2beta1", "MPIJob"): "a Kubeflow MPIJob",
    ("kubeflow.org/v1", "XGBoostJob"): "a Kubeflow XGBoostJob",
    ("kubeflow.org/v1", "PaddleJob"): "a Kubeflow PaddleJob",
    ("kubeflow.org/v1", "JAXJob"): "a Kubeflow JAXJob",
}


class NotImportable(ValueError):
    """Nothing usable can come of this input; the message names the file, the field and what is allowed."""


@dataclass(frozen=True)
class Note:
    """A field of the TFJob that the stack does not carry, and what tfk8s does instead."""

    path: str
    instead: str

    def __str__(self) -> str:
        return f"not carried: {self.path}: {self.instead}"


@dataclass(frozen=True)
class Replica:
    """One replica type of the TFJob, as the role tfk8s gives it."""

    role: str  # chief | ps | worker
    path: str  # spec.tfReplicaSpecs.<Type>, for messages
    replicas: int
    restart_policy: Optional[str]
    pod: dict[str, Any]  # template.spec
    container: dict[str, Any]
    container_path: str


@dataclass
class TFJob:
    name: str
    namespace: Optional[str]
    spec: dict[str, Any]
    replicas: dict[str, Replica]  # by role
    notes: list[Note] = field(default_factory=list)


def read_tfjob(text: str, source: str) -> TFJob:
    """The first TFJob of `text` (one YAML document or several); NotImportable, naming `source`, for
    anything else."""
    try:
        documents = [document for document in load_all_yaml(text, ManifestLoader) if document is not None]
    except yaml.YAMLError as error:
        raise NotImportable(f"{source}: not YAML: {yaml_problem(error)}") from None
    if not documents:
        raise NotImportable(f"{source}: empty: no Kubernetes object in it, so no TFJob")
    kinds = []
    for document in documents:
        if not isinstance(document, dict):
            raise NotImportable(f"{source}: not a Kubernetes object ({described(document)}, not a mapping)")
        api, kind = document.get("apiVersion"), document.get("kind")
        if kind == "TFJob" and api == TFJOB_API:
            return _tfjob(document, source)
        kinds.append(OTHER_KINDS.get((api, kind)) or f"a {api or '(no apiVersion)'} {kind or '(no kind)'}")
    found = kinds[0] if len(kinds) == 1 else f"{len(kinds)} objects ({', '.join(kinds)})"
    raise NotImportable(
        f"{source}: no {TFJOB_API} TFJob in it: it holds {found}; import-tfjob reads {TFJOB_API} TFJobs"
    )


def _tfjob(document: dict[str, Any], source: str) -> TFJob:
    metadata = _mapping(document.get("metadata"), f"{source}: metadata")
    name = metadata.get("name")
    name = "(unnamed)" if name in (None, "") else name
    if not isinstance(name, str):
        raise NotImportable(f"{source}: metadata.name is {described(name)}; a TFJob's name is text")
    if name != "(unnamed)" and not DNS1123_SUBDOMAIN_RE.match(name):
        raise NotImportable(
            f"{source}: metadata.name is {name!r}, which Kubernetes refuses: lower-case letters, digits, '-' and '.'"
        )
    namespace_given = metadata.get("namespace")
    if namespace_given is not None and not (
        isinstance(namespace_given, str) and DNS1123_LABEL_RE.match(namespace_given)
    ):
        raise NotImportable(
            f"{source}: metadata.namespace is {described(namespace_given)}, which Kubernetes refuses: "
            "a namespace's name, lower-case letters, digits and '-'"
        )
    where = f"{source}: TFJob '{name}'"
    spec = _mapping(document.get("spec"), f"{where}: spec")
    specs = _mapping(spec.get("tfReplicaSpecs"), f"{where}: spec.tfReplicaSpecs")
    _shaped(spec, {"runPolicy": RUN_POLICY}, "spec", where)
    if not specs:
        raise NotImportable(f"{where}: no replicas: spec.tfReplicaSpecs is empty; it needs PS and Worker")
    run_policy = spec.get("runPolicy") or {}
    for key in LEGACY_RUN_KEYS:
        if key in spec and key in run_policy and spec[key] != run_policy[key]:
            raise NotImportable(
                f"{where}: spec.{key} ({spec[key]!r}) and spec.runPolicy.{key} ({run_policy[key]!r}) differ; "
                f"a TFJob of {TFJOB_API} reads spec.runPolicy's: remove spec.{key}"
            )
    job = TFJob(name, namespace_given, spec, {})
    unknown: list[str] = []
    for replica_type, replica_spec in specs.items():
        path = f"spec.tfReplicaSpecs.{replica_type}"
        kind = str(replica_type).lower()
        role = ROLE_OF_REPLICA_TYPE.get(kind)
        if role is None:
            if kind not in _UNCARRIED_REPLICA_TYPES:
                _refuse_a_misspelled_replica_type(str(replica_type), f"{where}: {path}")
                unknown.append(str(replica_type))
            job.notes.append(
                Note(
                    path,
                    _UNCARRIED_REPLICA_TYPES.get(
                        kind, "an unknown replica type; tfk8s runs a chief, PS and workers only"
                    ),
                )
            )
            continue
        replica_spec = _mapping(replica_spec, f"{where}: {path}")
        count = replica_spec.get("replicas", 1)  # TFJob's default
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise NotImportable(f"{where}: {path}.replicas is {count!r}; it must be a whole number of 0 or more")
        if count == 0:
            continue
        if role in job.replicas:
            other = job.replicas[role].path
            if other.lower() == path.lower():
                raise NotImportable(
                    f"{where}: {path} and {other} are one replica type given twice (TFJob's controller "
                    "reads replica types whatever their case): keep one"
                )
            raise NotImportable(f"{where}: {path} and {other} are both given: a TFJob has one Chief or Master")
        if role in ("chief", "evaluator") and count != 1:
            raise NotImportable(f"{where}: {path}.replicas is {count}; a TFJob's {replica_type} has 1 replica")
        if str(replica_type).lower() == "master":
            job.notes.append(
                Note(
                    path,
                    "runs as tfk8s's chief, and TF_CONFIG names it 'chief', not 'master': "
                    "TensorFlow's resolvers take either; a program comparing its task type with "
                    "'master' must accept 'chief'",
                )
            )
        template = _mapping(replica_spec.get("template"), f"{where}: {path}.template")
        pod = _mapping(template.get("spec"), f"{where}: {path}.template.spec")
        _shaped(pod, POD, f"{path}.template.spec", where)
        container_index = _tf_container(pod, f"{where}: {path}.template.spec.containers")
        container_path = f"{path}.template.spec.containers[{container_index}]"
        _shaped(pod["containers"][container_index], CONTAINER, container_path, where)
        policy = replica_spec.get("restartPolicy")
        if policy is not None and policy not in RESTART_POLICIES:
            # Read as one it is not, its note would say what that policy does.
            raise NotImportable(
                f"{where}: {path}.restartPolicy is {described(policy)}; TFJob takes "
                f"{', '.join(RESTART_POLICIES[:-1])} or {RESTART_POLICIES[-1]}"
            )
        job.replicas[role] = Replica(
            role,
            path,
            count,
            policy,
            pod,
            pod["containers"][container_index],
            container_path,
        )
        for key in sorted(map(str, set(replica_spec) - {"replicas", "restartPolicy", "template"})):
            job.notes.append(Note(f"{path}.{key}", "tfk8s does not know this field"))
        template_metadata = _mapping(template.get("metadata"), f"{where}: {path}.template.metadata")
        for key in sorted(map(str, template_metadata)):
            job.notes.append(Note(f"{path}.template.metadata.{key}", "tfk8s labels and annotates its pods itself"))
    job.notes += _metadata_notes(metadata)
    success = spec.get("successPolicy")
    if success is not None and success not in SUCCESS_POLICIES:
        raise NotImportable(
            f"{where}: spec.successPolicy is {described(success)}; TFJob takes '' (worker 0's success ends it) "
            "or AllWorkers"
        )
    if "worker" not in job.replicas:
        found = f"; it has {', '.join(unknown)}, which TFJob does not know" if unknown else ""
        raise NotImportable(
            f"{where}: spec.tfReplicaSpecs has no Worker replicas{found}: tfk8s runs an experiment's workers "
            "(with PS, or workers only), and this TFJob has none"
        )
    return job


# TFJob's replica types, as its documentation spells them.
REPLICA_TYPES = ("Chief", "Master", "PS", "Worker", "Evaluator")
# What TFJob's API takes for a replica's restartPolicy and for spec.successPolicy.
RESTART_POLICIES = ("Always", "OnFailure", "Never", "ExitCode")
SUCCESS_POLICIES = ("", "AllWorkers")


def _refuse_a_misspelled_replica_type(replica_type: str, where: str) -> None:
    """A replica type one typo from TFJob's own (`Wrker`) is refused naming both: carried on as an
    unknown type, its tasks would be dropped, and the TFJob refused for missing what it has."""
    close = difflib.get_close_matches(replica_type.lower(), [known.lower() for known in REPLICA_TYPES], n=1, cutoff=0.6)
    if close:
        meant = next(known for known in REPLICA_TYPES if known.lower() == close[0])
        raise NotImportable(
            f"{where}: '{replica_type}' is not a TFJob replica type (did you mean '{meant}'?); TFJob's are "
            f"{', '.join(REPLICA_TYPES)}"
        )


def _shaped(value: dict[str, Any], schema: dict[str, Any], path: str, where: str) -> None:
    try:
        check_shape(value, schema, path)
    except ShapeError as error:
        raise NotImportable(f"{where}: {error}") from None


def _mapping(value: Any, where: str) -> dict[Any, Any]:
    """`value` where a mapping belongs (nothing: an empty one); NotImportable naming the field otherwise."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise NotImportable(f"{where} is {described(value)}; it must be a mapping")
    return value


# What the API server writes into an object it returns: nothing of the user's to carry.
SERVER_SET_METADATA = {"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "selfLink"}


def _metadata_notes(metadata: dict[str, Any]) -> list[Note]:
    notes = []
    for key in sorted(set(map(str, metadata)) - {"name", "namespace"} - SERVER_SET_METADATA):
        entries = metadata.get(key)
        names = sorted(map(str, entries)) if key in ("labels", "annotations") and isinstance(entries, dict) else [None]
        for name in names:
            path = f"metadata.{key}" + (f".{name}" if name else "")
            if name == QUEUE_LABEL:
                notes.append(
                    Note(
                        path,
                        "a LocalQueue; tfk8s:cluster.queue takes the ClusterQueue it points to, and "
                        "tfk8s makes its own LocalQueue",
                    )
                )
            else:
                notes.append(Note(path, "tfk8s labels and annotates its objects itself"))
    return notes


_UNCARRIED_REPLICA_TYPES: dict[str, str] = {}


def _tf_container(pod: dict[str, Any], where: str) -> int:
    containers = pod.get("containers") or []
    if not containers:
        raise NotImportable(f"{where}: no container; a TFJob's pod runs its program in the '{TF_CONTAINER}' container")
    named = [index for index, container in enumerate(containers) if container.get("name") == TF_CONTAINER]
    if named:
        return named[0]
    if len(containers) == 1:
        return 0
    raise NotImportable(
        f"{where}: {len(containers)} containers and none named '{TF_CONTAINER}', the one TFJob runs TensorFlow in"
    )
