"""Before `pulumi up` in a team's namespace: what the stack names there must exist."""

from __future__ import annotations

import copy

import pytest

from components.objects.loading import load_experiment_values
from components.objects.team_namespace import Forbidden, named_objects, team_namespace_findings
from components.plan.trainer_bundle import load_trainer_bundle
from components.spec.stack_files import PROJECT_ROOT, read_stack_values

PROGRAM = {
    "command": ["python", "train.py"],
    "env": {"TOKEN": {"secret": "team-token", "key": "token"}, "LEVEL": "debug",
            "AGAIN": {"secret": "team-token", "key": "other"}},
    "volumes": [{"claim": "training-data", "mountPath": "/data", "readOnly": True}],
}


def experiment(namespace, program=True):
    _, values = read_stack_values("scene1-case1")
    values = copy.deepcopy(values)
    values["tfk8s:cluster"].update(namespace=namespace, imagePullSecrets=["registry"])
    if program:
        del values["tfk8s:trainer"]
        values["tfk8s:cluster"]["image"] = "registry.example/team/ranker:1.0"
        values["tfk8s:cluster"]["ps"]["memory"] = "2Gi"
        values["tfk8s:program"] = PROGRAM
    return load_experiment_values("ranking-a", values, load_trainer_bundle(PROJECT_ROOT))


SHARED = {"name": "ml-team", "existing": True}
TEAMS = {
    ("Namespace", "ml-team"): {"metadata": {"labels": {"pod-security.kubernetes.io/enforce": "baseline"}}},
    ("Secret", "registry"): {"metadata": {}},
    ("Secret", "team-token"): {"metadata": {}},
    ("PersistentVolumeClaim", "training-data"): {"metadata": {}},
}


def reader(objects, forbidden=()):
    def read(kind, name):
        if (kind, name) in forbidden:
            raise Forbidden(f'403 Forbidden: {kind.lower()}s "{name}" is forbidden')
        return objects.get((kind, name))
    return read


def test_each_named_object_is_listed_once_with_the_key_that_names_it():
    assert [(o.kind, o.name, o.key) for o in named_objects(experiment(SHARED))] == [
        ("Secret", "registry", "tfk8s:cluster.imagePullSecrets"),
        ("Secret", "team-token", "tfk8s:program.env.TOKEN"),
        ("PersistentVolumeClaim", "training-data", "tfk8s:program.volumes[0].claim"),
    ]


def test_all_present_shows_the_pod_security_level_and_refuses_nothing():
    findings = team_namespace_findings(experiment(SHARED), reader(TEAMS))
    assert (findings.errors, findings.warnings) == ([], [])
    assert findings.notes == ["stack 'ranking-a': namespace ml-team enforces Pod Security level baseline; tfk8s's "
                              "pods meet the restricted level either way"]


@pytest.mark.parametrize("missing, error", [
    (("Secret", "team-token"), "tfk8s:program.env.TOKEN: Secret 'team-token' does not exist in namespace 'ml-team'; "
                               "create it there before pulumi up"),
    (("PersistentVolumeClaim", "training-data"),
     "tfk8s:program.volumes[0].claim: PersistentVolumeClaim 'training-data' does not exist in namespace 'ml-team'"),
    (("Secret", "registry"), "tfk8s:cluster.imagePullSecrets: Secret 'registry' does not exist in namespace 'ml-team'"),
    (("Namespace", "ml-team"), "tfk8s:cluster.namespace: namespace 'ml-team' does not exist, and with existing: true "
                               "tfk8s never creates it"),
])
def test_a_missing_object_is_refused_naming_it_and_the_namespace(missing, error):
    objects = {key: value for key, value in TEAMS.items() if key != missing}
    (found,) = team_namespace_findings(experiment(SHARED), reader(objects)).errors
    assert found.startswith(error)


def test_what_the_user_may_not_read_is_a_warning_not_a_refusal():
    findings = team_namespace_findings(experiment(SHARED), reader(TEAMS, forbidden={("Secret", "team-token")}))
    assert findings.errors == []
    assert findings.warnings == ["stack 'ranking-a': whether Secret 'team-token' (tfk8s:program.env.TOKEN) exists in "
                                 "namespace 'ml-team' is not checked: 403 Forbidden: secrets \"team-token\" is forbidden"]


def test_a_namespace_without_a_level_says_so_and_an_owned_one_is_not_read():
    no_level = {**TEAMS, ("Namespace", "ml-team"): {"metadata": {}}}
    (note,) = team_namespace_findings(experiment(SHARED), reader(no_level)).notes
    assert "namespace ml-team enforces no Pod Security level" in note

    def never(kind, name):
        raise AssertionError("a namespace tfk8s creates is not read")
    assert team_namespace_findings(experiment("ranking"), never).errors == []
