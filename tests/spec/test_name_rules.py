"""Kubernetes' names and image references, one rule each (components/spec/kubernetes_limits.py): the
models refuse exactly the names Kubernetes' own validation refuses, and take an image apart with the
same parser that says whether the kubelet can pull it."""

from __future__ import annotations

import pytest
import yaml
from pydantic import TypeAdapter, ValidationError

from components.cli.main import main
from components.spec import kubernetes_limits as K
from components.spec.images import image_problem, is_pinned
from components.spec.quantities import DnsLabel, DnsSubdomain, LabelValue
from tests.spec.test_cross_key_rules import cluster, plan
from tests.stack_variants import write_variant

NAMES = [
    "srv-00",
    "a",
    "srv-00.rack-1",
    "a..b",
    "a.-b",
    "a-.b",
    ".a",
    "a.",
    "-a",
    "Srv-00",
    "a_b",
    "a b",
    "",
    "Tesla-P40",
    "x" * 63,
    "x" * 64,
    ".".join(["x" * 63] * 4)[:253],
    ".".join(["x" * 63] * 4)[:252] + "xx",
]


def accepted(annotation: object, name: str) -> bool:
    try:
        TypeAdapter(annotation).validate_python(name)
    except ValidationError:
        return False
    return True


@pytest.mark.parametrize(
    "annotation, problem",
    [
        pytest.param(DnsLabel, K.dns1123_label_problem, id="DNS label: pools, namespaces, queues"),
        pytest.param(DnsSubdomain, K.dns1123_subdomain_problem, id="DNS subdomain: nodes, Secrets, claims, classes"),
        pytest.param(LabelValue, K.label_value_problem, id="label value"),
    ],
)
@pytest.mark.parametrize("name", [pytest.param(name, id=repr(name)[:30]) for name in NAMES])
def test_the_models_take_a_name_where_kubernetes_does(annotation, problem, name):
    assert accepted(annotation, name) == (problem(name) is None), problem(name)


@pytest.mark.parametrize(
    "image, pinned",
    [
        pytest.param("tensorflow/tensorflow:2.21.0", True, id="a tag"),
        pytest.param("localhost:5000/trainer@sha256:" + "0" * 64, True, id="a registry's port and a digest"),
        pytest.param("tensorflow/tensorflow:latest@sha256:" + "0" * 64, True, id="latest with a digest"),
        pytest.param("localhost:5000/trainer", False, id="a registry's port, no tag"),
        pytest.param("tensorflow/tensorflow:latest", False, id="latest"),
        pytest.param("Team/TF:2.21.0", False, id="no image reference: pins nothing"),
    ],
)
def test_what_pins_an_image_is_read_by_the_one_parser(image, pinned):
    assert is_pinned(image) == pinned


def test_an_image_that_is_no_reference_is_refused_as_such_not_as_unpinned():
    assert (image_problem("Team/TF:2.21.0") or "").startswith("is no image reference the kubelet can pull")
    assert image_problem("tensorflow/tensorflow:latest") == "must be pinned to a tag other than latest or a digest"
    assert image_problem("tensorflow/tensorflow:2.21.0") is None


def test_an_image_pull_secret_is_named_as_any_secret_is(tmp_path, capsys):
    """A Secret's name is a DNS subdomain (253 characters, parts joined by '.'), not a DNS label: every
    task's pod pulls with it."""
    stack = write_variant(tmp_path, "scene1-case2", "pull", cluster(imagePullSecrets=["regcred.v2"]))
    assert main(["render", stack, "-o", "yaml"]) == 0
    jobsets = [document for document in yaml.safe_load_all(capsys.readouterr().out) if document["kind"] == "JobSet"]
    pods = [job["template"]["spec"]["template"]["spec"] for job in jobsets[0]["spec"]["replicatedJobs"]]
    assert pods and all(pod["imagePullSecrets"] == [{"name": "regcred.v2"}] for pod in pods), pods


@pytest.mark.parametrize("name", ["Regcred", "a_b", "regcred..v2"])
def test_an_image_pull_secret_kubernetes_refuses_is_refused_naming_the_key(name, tmp_path, capsys):
    code, err = plan(tmp_path, capsys, cluster(imagePullSecrets=["regcred", name]))
    assert code == 2, err
    assert (
        "  - tfk8s:cluster.imagePullSecrets[1]: must be a Secret's name: lower-case letters, digits, '-' and '.', "
        "starting and ending with a letter or digit"
    ) in err, err
    assert f"(got '{name}')" in err, err
