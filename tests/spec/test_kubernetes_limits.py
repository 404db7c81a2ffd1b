"""Kubernetes' and Linux's own limits, checked at `plan` before anything reaches the API server: the
rules as Kubernetes' validation states them, then each stack key that carries a value to one of them."""

from __future__ import annotations

from typing import Any

import pytest

from components.spec import kubernetes_limits as K
from tests.spec.test_cross_key_rules import IMAGE, Edit, chain, cluster, key, plan, program, role, trainer

# --------------------------------------------------------------------------
# The rules (k8s.io/apimachinery pkg/util/validation), each with the values either side of it.


@pytest.mark.parametrize(
    "label_key, ok",
    [
        pytest.param("app", True, id="a name"),
        pytest.param("cloud.google.com/gke-nodepool", True, id="a prefix and a name"),
        pytest.param("My_Name.v2", True, id="upper case, '_' and '.' in the name"),
        pytest.param("n" * 63, True, id="a name of 63"),
        pytest.param("n" * 64, False, id="a name of 64"),
        pytest.param(f"{'p' * 63}.{'q' * 63}.{'r' * 63}.{'s' * 61}/n", True, id="a prefix of 253"),
        pytest.param(f"{'p' * 63}.{'q' * 63}.{'r' * 63}.{'s' * 62}/n", False, id="a prefix of 254"),
        pytest.param("a/b/c", False, id="two slashes"),
        pytest.param("/name", False, id="an empty prefix"),
        pytest.param("example.com/", False, id="an empty name"),
        pytest.param("Example.com/name", False, id="an upper-case prefix"),
        pytest.param("-name", False, id="a name starting with '-'"),
        pytest.param("gke nodepool", False, id="a space"),
        pytest.param("", False, id="empty"),
    ],
)
def test_a_label_key_is_a_qualified_name(label_key, ok):
    assert (K.label_key_problem(label_key) is None) == ok, K.label_key_problem(label_key)


@pytest.mark.parametrize(
    "value, ok",
    [
        pytest.param("", True, id="empty"),
        pytest.param("Tesla-P40", True, id="letters, digits and '-'"),
        pytest.param("a_b.c", True, id="'_' and '.' inside"),
        pytest.param("v" * 63, True, id="63"),
        pytest.param("v" * 64, False, id="64"),
        pytest.param("_a", False, id="starting with '_'"),
        pytest.param("a.", False, id="ending with '.'"),
        pytest.param("a b", False, id="a space"),
        pytest.param("a/b", False, id="a slash"),
    ],
)
def test_a_label_value(value, ok):
    assert (K.label_value_problem(value) is None) == ok


@pytest.mark.parametrize(
    "name, ok",
    [
        pytest.param("srv-00", True, id="a label"),
        pytest.param("srv-00.rack-1.example", True, id="labels joined by dots"),
        pytest.param(".".join(["n" * 63] * 3) + "." + "n" * 61, True, id="253"),
        pytest.param(".".join(["n" * 63] * 3) + "." + "n" * 62, False, id="254"),
        pytest.param("a..b", False, id="an empty part"),
        pytest.param("a.-b", False, id="a part starting with '-'"),
        pytest.param("a-.b", False, id="a part ending with '-'"),
        pytest.param("Srv", False, id="upper case"),
    ],
)
def test_a_dns_1123_subdomain(name, ok):
    assert (K.dns1123_subdomain_problem(name) is None) == ok


@pytest.mark.parametrize(
    "config_key, ok",
    [
        pytest.param("token", True, id="a word"),
        pytest.param(".dockerconfigjson", True, id="a leading dot"),
        pytest.param("a-b_c.d", True, id="'-', '_' and '.'"),
        pytest.param("k" * 253, True, id="253"),
        pytest.param("k" * 254, False, id="254"),
        pytest.param(".", False, id="'.'"),
        pytest.param("..", False, id="'..'"),
        pytest.param("..data", False, id="starting with '..'"),
        pytest.param("a/b", False, id="a slash"),
    ],
)
def test_a_config_map_or_secret_key(config_key, ok):
    assert (K.config_map_key_problem(config_key) is None) == ok


@pytest.mark.parametrize(
    "image, ok",
    [
        pytest.param("tensorflow/tensorflow:2.21.0-gpu", True, id="a tag"),
        pytest.param("localhost:5000/tfk8s/trainer:dev", True, id="a registry with a port"),
        pytest.param("tensorflow/tensorflow@sha256:" + "0" * 64, True, id="a digest"),
        pytest.param("x:" + "t" * 128, True, id="a tag of 128"),
        pytest.param("x:" + "t" * 129, False, id="a tag of 129"),
        pytest.param("n" * 256 + ":1", False, id="a name of 256"),
        pytest.param("gcr.io/Team/trainer:1", False, id="upper case in the repository"),
        pytest.param("tensorflow/tensor flow:2", False, id="a space inside"),
        pytest.param(" tensorflow/tensorflow:2.21.0", False, id="a space before"),
        pytest.param("tensorflow/tensorflow:2.21.0\n", False, id="a line break after"),
        pytest.param("tensorflow//tensorflow:2", False, id="an empty part"),
    ],
)
def test_an_image_reference(image, ok):
    assert (K.image_reference_problem(image) is None) == ok


def test_one_exec_string_holds_131072_bytes_with_its_nul_counted_in_utf_8():
    assert K.exec_string_problem("a" * (K.MAX_ARG_STRLEN - 1)) is None
    assert K.exec_string_problem("a" * K.MAX_ARG_STRLEN).startswith(
        "is 131,073 bytes, and Linux passes at most 131,072"
    )
    # Bytes, not characters: 'é' is two.
    assert K.exec_string_problem("é" * (K.MAX_ARG_STRLEN // 2)) is not None


# --------------------------------------------------------------------------
# Each stack key that carries a value to a rule.

LONG = "x" * K.MAX_ARG_STRLEN  # one byte past one exec string, with its NUL
ARG = "y" * 120_000  # within one exec string


def pools(*pool: dict[str, Any]) -> Edit:
    return lambda values: values.update({"tfk8s:nodePools": [{"name": "servers", "nodes": ["srv-00"]}, *pool]})


def toleration(**given: Any) -> Edit:
    return role("workers", replicas=50, pool="servers", tolerations=[given])


def env(**variables: Any) -> Edit:
    return program(env=variables)


# A DNS subdomain, as the models say it (Kubernetes' pattern: kubernetes_limits.DNS1123_SUBDOMAIN_PATTERN).
PARTS = (
    "lower-case letters, digits, '-' and '.', starting and ending with a letter or digit, each part between dots too"
)

REFUSED = [
    pytest.param(
        pools({"name": "managed", "selector": {"cloud.google.com/gke nodepool": "tf"}}),
        "tfk8s:nodePools[1].selector: label key 'cloud.google.com/gke nodepool' is not a label key",
        id="selector: a label key with a space",
    ),
    pytest.param(
        pools({"name": "managed", "selector": {"pool": "v" * 64}}),
        "tfk8s:nodePools[1].selector: the value of 'pool', 'vvv",
        id="selector: a label value of 64",
    ),
    pytest.param(
        pools({"name": "racks", "nodes": ["srv-10..rack"]}),
        "tfk8s:nodePools[1].nodes[0]: must be a node name: " + PARTS + " (got 'srv-10..rack')",
        id="a node name with an empty part",
    ),
    pytest.param(
        key("tensorboard", {"image": IMAGE, "logDir": "gs://b/t", "allowFrom": [{"podLabels": {"a/b/c": "x"}}]}),
        "tfk8s:tensorboard.allowFrom[0].podLabels: label key 'a/b/c' has more than one '/'",
        id="allowFrom: a label key with two slashes",
    ),
    pytest.param(
        key("tensorboard", {"image": IMAGE, "logDir": "gs://b/t", "allowFrom": [{"podLabels": {"app": "-x"}}]}),
        "tfk8s:tensorboard.allowFrom[0].podLabels: the value of 'app', '-x', is not a label value",
        id="allowFrom: a label value starting with '-'",
    ),
    pytest.param(
        toleration(key="dedicated team", operator="Exists"),
        "tfk8s:cluster.workers.tolerations[0].key: taint key 'dedicated team' is not a label key",
        id="a toleration's key with a space",
    ),
    pytest.param(
        toleration(key="dedicated", value="ml team"),
        "tfk8s:cluster.workers.tolerations[0].value: taint value 'ml team' is not a label value",
        id="a toleration's value with a space",
    ),
    pytest.param(
        cluster(image="tensorflow/tensorflow:2.21.0 "),
        "tfk8s:cluster.image: image 'tensorflow/tensorflow:2.21.0 ' has a space or a line break at either end",
        id="an image with a trailing space",
    ),
    pytest.param(
        cluster(gpuImage="Team/TF:2.21.0-gpu", workers={"replicas": 50, "pool": "servers", "gpus": 1}),
        "tfk8s:cluster.gpuImage: image 'Team/TF:2.21.0-gpu' is no image reference the kubelet can pull",
        id="a GPU image in upper case",
    ),
    pytest.param(
        key("tensorboard", {"image": "tensorboard:2.21 .0", "logDir": "gs://b/t"}),
        "tfk8s:tensorboard.image: image 'tensorboard:2.21 .0' is no image reference the kubelet can pull",
        id="TensorBoard's image with a space",
    ),
    pytest.param(
        cluster(priorityClass="batch..low"),
        "tfk8s:cluster.priorityClass: must be a PriorityClass's name: " + PARTS + " (got 'batch..low')",
        id="a PriorityClass name with an empty part",
    ),
    pytest.param(
        role("chief", checkpointVolume={"size": "20Gi", "storageClass": "fast.-ssd"}),
        "tfk8s:cluster.chief.checkpointVolume.storageClass: must be a StorageClass's name: " + PARTS,
        id="a StorageClass name with a part starting with '-'",
    ),
    pytest.param(
        key("logs", {"storageClass": "a..b"}),
        "tfk8s:logs.storageClass: must be a StorageClass's name: " + PARTS + " (got 'a..b')",
        id="the log archive's StorageClass",
    ),
    pytest.param(
        program(volumes=[{"claim": "data..set", "mountPath": "/data"}]),
        "tfk8s:program.volumes[0].claim: must be a PersistentVolumeClaim's name: " + PARTS,
        id="a claim name with an empty part",
    ),
    pytest.param(
        env(TOKEN={"secret": "team..token", "key": "token"}),
        "tfk8s:program.env.TOKEN.secret: must be a Secret's name: " + PARTS,
        id="a Secret name with an empty part",
    ),
    pytest.param(
        env(TOKEN={"secret": "team-token", "key": "k" * 254}),
        "tfk8s:program.env.TOKEN.key: key 'kkk",
        id="a Secret key of 254",
    ),
    pytest.param(
        env(TOKEN={"secret": "team-token", "key": "..data"}),
        "tfk8s:program.env.TOKEN.key: key '..data' is not a ConfigMap or Secret key",
        id="a Secret key starting with '..'",
    ),
    pytest.param(
        program(args=["--vocabulary", LONG]),
        "tfk8s:program.args[1]: 'xxx",
        id="an argument past MAX_ARG_STRLEN",
    ),
    pytest.param(
        program(roles={"worker": {"command": ["python3", LONG]}}),
        "tfk8s:program.roles.worker.command[1]: 'xxx",
        id="a role's command past MAX_ARG_STRLEN",
    ),
    pytest.param(
        env(VOCABULARY=LONG),
        "tfk8s:program.env.VOCABULARY: the variable is 131,084 bytes, and Linux passes at most 131,072",
        id="an env value past MAX_ARG_STRLEN",
    ),
    pytest.param(
        program(args=["y" * (K.MAX_ARG_STRLEN - 8)] * 17),
        "tfk8s:program: command, args and env come to 2,228,",
        id="args past ARG_MAX together",
    ),
    pytest.param(
        program(args=[ARG] * 5),
        "tfk8s:program: its command, args and env are written into every pod template, and the experiment's "
        "JobSet holds the pod template of each of its 3 roles (chief, ps, worker), 1,800,066 bytes of them "
        "together; etcd stores at most 1,572,864 bytes in one object",
        id="a JobSet past etcd's object size",
    ),
    pytest.param(
        chain(program(args=[ARG] * 14), cluster(workload="statefulset")),
        "tfk8s:program: its command, args and env are written into every pod template, and a StatefulSet holds "
        "its role's pod template, 1,680,031 bytes of them",
        id="a StatefulSet past etcd's object size",
    ),
    pytest.param(
        trainer(data="gs://bucket/" + "d" * K.MAX_ARG_STRLEN),
        "tfk8s:trainer: the settings reach every task as one environment variable (TFK8S_TRAINER), which is 131,",
        id="a data pattern past MAX_ARG_STRLEN",
    ),
    pytest.param(
        key("tensorboard", {"image": IMAGE, "logDir": "gs://bucket/" + "t" * K.MAX_ARG_STRLEN}),
        "tfk8s:tensorboard.logDir: 'gs://bucket/ttt",
        id="a logDir past MAX_ARG_STRLEN",
    ),
    pytest.param(
        chain(pools(), cluster(placeBy="hostname"), lambda v: v["tfk8s:nodePools"][0].update(nodes=["n" * 64])),
        "tfk8s:nodePools[0].nodes[0]: node 'nnn",
        id="placeBy: hostname with a node name of 64",
    ),
]


@pytest.mark.parametrize("edit, message", REFUSED)
def test_a_value_past_kubernetes_limits_is_refused_naming_its_key(edit, message, tmp_path, capsys):
    code, err = plan(tmp_path, capsys, edit)
    assert code == 2, err
    assert err.startswith("stack 'combo' has an invalid configuration:\n"), err
    assert [line for line in err.splitlines() if line.startswith(f"  - {message}")], err


def test_a_long_value_is_shown_cut_with_its_length(tmp_path, capsys):
    _, err = plan(tmp_path, capsys, program(args=[LONG]))
    assert f"... ({K.MAX_ARG_STRLEN:,} characters) is {K.MAX_ARG_STRLEN + 1:,} bytes" in err
    assert len(err) < 1000


def test_placing_by_hostname_a_node_name_of_63_plans(tmp_path, capsys):
    edit = chain(pools(), cluster(placeBy="hostname"), lambda v: v["tfk8s:nodePools"][0].update(nodes=["n" * 63]))
    code, err = plan(tmp_path, capsys, edit)
    assert code == 0, err


def test_a_statefulset_holds_one_roles_template_so_what_overflows_a_jobset_plans(tmp_path, capsys):
    code, err = plan(tmp_path, capsys, chain(program(args=[ARG] * 5), cluster(workload="statefulset")))
    assert code == 0, err


def test_values_at_the_limits_plan(tmp_path, capsys):
    edit = chain(
        pools({"name": "managed", "selector": {"example.com/" + "k" * 63: "v" * 63}}),
        program(
            args=["a" * (K.MAX_ARG_STRLEN - 1)],
            env={"TOKEN": {"secret": "team-token", "key": "k" * 253}},
        ),
    )
    code, err = plan(tmp_path, capsys, edit)
    assert code == 0, err


# A Secret's worth of values set with --secret: 7 of 120,000 bytes, 840,000 together (MaxSecretSize is 1 MiB),
# each within MAX_ARG_STRLEN and all within ARG_MAX; three pod templates' worth of them would be 2,520,000.
SECRET_VALUES = {f"KEY_{index}": str(index) * 120_000 for index in range(7)}


def _experiment_with_env(secret: bool):
    """scene1-case1 running a program with SECRET_VALUES in env, as the Pulumi program is handed them:
    decrypted, the engine holding tfk8s:program as a secret and the stack file saying which values are."""
    import copy

    from components.objects.loading import load_experiment_values
    from components.plan.trainer_bundle import load_trainer_bundle
    from components.spec.stack_files import PROJECT_ROOT, read_stack_values

    stack, values = read_stack_values("scene1-case1")
    values = copy.deepcopy(values)
    values.pop("tfk8s:trainer")
    values["tfk8s:cluster"]["ps"]["memory"] = "1Gi"
    values["tfk8s:program"] = {"command": ["python", "train.py"], "env": {**SECRET_VALUES, "LEVEL": "debug"}}
    encrypted = {f"tfk8s:program.env.{name}" for name in SECRET_VALUES} if secret else set()
    return load_experiment_values(
        stack,
        values,
        load_trainer_bundle(PROJECT_ROOT),
        secret_keys={"tfk8s:program"} if secret else (),
        known_encrypted=encrypted,
    )


def test_values_set_with_secret_are_not_counted_in_a_pod_templates_size():
    """The pod template names the Secret and its key; the value is read by the kubelet, never written in the
    JobSet, which stays far below what etcd stores."""
    import json

    from components.objects.experiment_objects import experiment_objects

    experiment = _experiment_with_env(secret=True)
    assert experiment.secret_env == set(SECRET_VALUES)
    (jobset,) = [obj.manifest for obj in experiment_objects(experiment) if obj.manifest["kind"] == "JobSet"]
    assert len(jobset["spec"]["replicatedJobs"]) == 3
    text = json.dumps(jobset)
    assert all(value not in text for value in SECRET_VALUES.values())
    assert len(text) < K.MAX_OBJECT_BYTES // 10


def test_the_same_values_in_plain_text_are_written_in_every_template_and_refused():
    from components.spec.models import StackConfigError

    with pytest.raises(StackConfigError, match=r"etcd stores at most 1,572,864 bytes in one object"):
        _experiment_with_env(secret=False)
