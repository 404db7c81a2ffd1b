"""More bad input as a new user writes it (issue 50): each row is one clear line on stderr naming the
stack, the key or flag and what is allowed, with the exit code of the one table; never a traceback,
never accepted silently. The rows of tests/cli/test_bad_inputs.py, continued with the same harness (tests/bad_inputs.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from components.cli.main import main
from tests.bad_inputs import PROGRAM_STACK, STACK, Case, assert_one_clear_line, edited, plan, tfjob, tfjob_file
from tests.harness import PROJECT_ROOT


def spread(selector: str) -> str:
    """STACK with its pool given by a selector, which only placement: spread takes."""
    return edited(edited(STACK, "nodes: [srv-00, srv-01]", f"selector: {selector}"), "colocated", "spread")


def with_program(*lines: str) -> str:
    return PROGRAM_STACK + "".join(f"    {line}\n" for line in lines)


def _with_restart_policy(job: dict, replica_type: str, policy: str) -> dict:
    job["spec"]["tfReplicaSpecs"][replica_type]["restartPolicy"] = policy
    return job


def import_with(*flags: str, job: dict | None = None):
    return lambda tmp_path: ["import-tfjob", tfjob_file(tmp_path, job or tfjob()), *flags]


BAD_INPUTS = {
    # A line break at the end of a name: Python's `$` matched before it, so the checks outside the
    # models let it through to the API server (or into a file name).
    "an env name ending in a line break": Case(
        plan(with_program('env: {"A\\n": x}')),
        2,
        r"^- tfk8s:program\.env: env name 'A\\n' must be letters, digits and '_', not starting with a digit$",
    ),
    "a selector value ending in a line break": Case(
        plan(spread('{pool: "ml\\n"}')),
        2,
        r"^- tfk8s:nodePools\[0\]\.selector: the value of 'pool', 'ml\\n', is not a label value",
    ),
    "a toleration key ending in a line break": Case(
        plan(
            edited(
                STACK,
                "workers: {replicas: 3, pool: servers}",
                'workers: {replicas: 3, pool: servers, tolerations: [{key: "dedicated\\n", operator: Exists}]}',
            )
        ),
        2,
        r"^- tfk8s:cluster\.workers\.tolerations\[0\]\.key: taint key 'dedicated\\n' is not a label key",
    ),
    "import-tfjob --stack ending in a line break": Case(
        import_with("--stack", "imported\n"),
        1,
        r"^import-tfjob: --stack 'imported\\n' is not a valid Pulumi stack name: letters, digits, '-', '_' and '\.'",
    ),
    "diagnose --write ending in a line break": Case(
        lambda tmp_path: ["diagnose", "scene1-case1", "--write", "next\n", "--kubeconfig", str(tmp_path / "none")],
        2,
        r"argument --write: 'next\\n' is not a stack name",
    ),
    "an env value referring to a name set below it": Case(
        plan(with_program("env: {B: '$(A)-x', A: x}")),
        2,
        r"^- tfk8s:program\.env\.B: \$\(A\) refers to A, which env sets after B: the kubelet expands only the "
        r"variables set before a value, so B would hold '\$\(A\)' as text; put A above B in env$",
    ),
    # A message that names the kind of thing the key is, and what to write instead.
    "a namespace that is no DNS label": Case(
        plan(edited(STACK, "placement: colocated", "placement: colocated\n    namespace: Team-A")),
        2,
        r"^- tfk8s:cluster\.namespace: must be a namespace \(a DNS label\): lower-case letters, digits and '-'",
    ),
    "imagePullSecrets as a pod spec writes them": Case(
        plan(edited(STACK, "placement: colocated", "placement: colocated\n    imagePullSecrets: [{name: regcred}]")),
        2,
        r"^- tfk8s:cluster\.imagePullSecrets\[0\]: should be text, not a mapping: write the name itself, 'regcred'$",
    ),
    "an image given as a list": Case(
        plan(edited(STACK, "placement: colocated", "placement: colocated\n    image: [tensorflow/tensorflow:2.21.0]")),
        2,
        r"^- tfk8s:cluster\.image: should be text, not a list$",
    ),
    # Text where a number is meant, and text that is no range of exit codes: said as such, not as
    # "a valid integer" (failOn takes ranges too) or "no duration" (startDeadline takes seconds).
    "failOn: [64-], a range without its end": Case(
        plan(
            edited(
                STACK, "workers: {replicas: 3, pool: servers}", "workers: {replicas: 3, pool: servers, failOn: [64-]}"
            )
        ),
        2,
        r"^- tfk8s:cluster\.workers\.failOn\[0\]: must be an exit code \(1 to 255\) or a range of them such as 64-78 "
        r"\(got '64-'\)$",
    ),
    "failOn: ['2'], a code quoted": Case(
        plan(
            edited(
                STACK, "workers: {replicas: 3, pool: servers}", "workers: {replicas: 3, pool: servers, failOn: ['2']}"
            )
        ),
        2,
        r"^- tfk8s:cluster\.workers\.failOn\[0\]: must be a number, not text: write 2 unquoted \(got '2'\)$",
    ),
    "startDeadline: '600', seconds quoted": Case(
        plan(edited(STACK, "placement: colocated", "placement: colocated\n    startDeadline: '600'")),
        2,
        r"^- tfk8s:cluster\.startDeadline: must be a number of seconds, not text: write 600 unquoted, or 600s \(got '600'\)$",
    ),
    # A path pasted with a space or a line break at its end: Kubernetes would make a folder named with it.
    "a volume's mountPath ending in a space": Case(
        plan(with_program("volumes: [{claim: data, mountPath: '/data '}]")),
        2,
        r"^- tfk8s:program\.volumes\[0\]\.mountPath: mountPath '/data ' starts or ends with a space or a line break, "
        r"which would be part of the folder's name; write '/data'",
    ),
    "a workingDir ending in a line break": Case(
        plan(with_program('workingDir: "/opt/app\\n"')),
        2,
        r"^- tfk8s:program\.workingDir: workingDir '/opt/app\\n' starts or ends with a space or a line break",
    ),
    # $(NAME) in an env value that the kubelet can never expand: passed on as literal text.
    "an env value naming no variable": Case(
        plan(with_program("env: {DATA: '$(DATA_DIR)/train'}")),
        2,
        r"^- tfk8s:program\.env\.DATA: \$\(DATA_DIR\) names no variable a task has, so DATA would hold it as text; "
        r"use one of JOB_NAME, .*, TF_CONFIG or a name of env",
    ),
    "an env value naming itself": Case(
        plan(with_program("env: {PATH: '$(PATH):/opt/bin'}")),
        2,
        r"^- tfk8s:program\.env\.PATH: \$\(PATH\) refers to PATH itself, so it would hold '\$\(PATH\)' as text$",
    ),
    # A checkpoint folder the chief can never write: its pod's root filesystem is read-only.
    "checkpointDir a folder outside the chief's scratch": Case(
        plan(edited(STACK, "tfk8s:trainer: {}", "tfk8s:trainer: {checkpointDir: /data/checkpoints}")),
        2,
        r"^- tfk8s:trainer\.checkpointDir: '/data/checkpoints' is a folder of the chief's pod outside its scratch "
        r"folder \(/scratch\), and the pod's root filesystem is read-only",
    ),
    # A folder name pasted with its line break: render would make a folder named with it.
    "render --out ending in a line break": Case(
        lambda tmp_path: ["render", "scene1-case1", "--out", f"{tmp_path}/rendered\n"],
        2,
        r"^render: --out '.*/rendered\\n' has a control character \(a line break or a tab\) in it",
    ),
    # A TFJob value its own API refuses: named by its field, not carried as something else.
    "a TFJob env value that is a number": Case(
        import_with(
            "--stack",
            "imported",
            job=tfjob(PS={"replicas": 1, "container": {"env": [{"name": "PORT", "value": 8080}]}}),
        ),
        1,
        r"spec\.tfReplicaSpecs\.PS\.template\.spec\.containers\[0\]\.env\[0\]\.value is the number 8080; it must be text: "
        r"quote it; nothing written$",
    ),
    "a TFJob restartPolicy TFJob does not know": Case(
        import_with("--stack", "imported", job=_with_restart_policy(tfjob(), "Worker", "Sometimes")),
        1,
        r"spec\.tfReplicaSpecs\.Worker\.restartPolicy is the text 'Sometimes'; TFJob takes Always, OnFailure, Never "
        r"or ExitCode; nothing written$",
    ),
    "a TFJob successPolicy TFJob does not know": Case(
        import_with("--stack", "imported", job={**tfjob(), "spec": {**tfjob()["spec"], "successPolicy": "AnyWorker"}}),
        1,
        r"spec\.successPolicy is the text 'AnyWorker'; TFJob takes '' \(worker 0's success ends it\) or AllWorkers",
    ),
    "a namespace's name that is no DNS label, as a mapping": Case(
        plan(
            edited(STACK, "placement: colocated", "placement: colocated\n    namespace: {name: Team-A, existing: true}")
        ),
        2,
        r"^- tfk8s:cluster\.namespace\.name: must be a namespace \(a DNS label\)",
    ),
    "a namespace given as a list: its two forms named": Case(
        plan(edited(STACK, "placement: colocated", "placement: colocated\n    namespace: [team]")),
        2,
        r"^- tfk8s:cluster\.namespace: should be a namespace's name, or \{name: <namespace>, existing: true\}",
    ),
    "an env value given as a list: its two forms named": Case(
        plan(with_program("env: {A: [x]}")),
        2,
        r"^- tfk8s:program\.env\.A: should be text or \{secret, key\}",
    ),
}


@pytest.mark.parametrize("case", [pytest.param(case, id=name) for name, case in BAD_INPUTS.items()])
def test_a_bad_input_is_one_clear_line_and_its_exit_code(case: Case, tmp_path, capsys, monkeypatch):
    assert_one_clear_line(case, tmp_path, capsys, monkeypatch)


def test_env_references_to_tfk8s_variables_and_earlier_env_names_are_taken(tmp_path, capsys):
    """tfk8s sets env in the stack file's order, under plan, render and the Pulumi program alike
    (tests/objects/test_env_order.py), after its own variables: the kubelet expands a reference to any
    of those set before the value."""
    stack = with_program("env: {Z: x, B: '$(Z)-$(TF_CONFIG)-$(PS_HOSTS)-$(TFK8S_CLUSTER)', C: '$$(LITERAL)'}")
    assert main(["plan", str(_written(tmp_path, stack))]) == 0, capsys.readouterr().err


def test_a_value_set_with_secret_is_never_read_for_references():
    """A --secret value reaches the task through a Secret, never expanded: '$(' in a password is its own,
    accepted (as the engine passes it, decrypted) and never named."""
    from components.objects.loading import load_experiment_values
    from components.plan.trainer_bundle import load_trainer_bundle
    from components.spec.stack_files import read_stack_values
    from tests.harness import PROJECT_ROOT

    _, values = read_stack_values("scene1-case1")
    values = {key: value for key, value in values.items() if key != "tfk8s:trainer"}
    values["tfk8s:cluster"] = {**values["tfk8s:cluster"], "ps": {"replicas": 1, "pool": "servers", "memory": "1Gi"}}
    values["tfk8s:program"] = {"command": ["python", "t.py"], "env": {"DB_PASSWORD": "pa$(ss)word"}}
    experiment = load_experiment_values(
        "team", values, load_trainer_bundle(PROJECT_ROOT), secret_keys={"tfk8s:program"}
    )
    assert experiment.secret_env == {"DB_PASSWORD"}


def _written(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "Pulumi.env-order.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("folder", ["ckpt", "/scratch/ckpt", "gs://team/ckpt", "default"])
def test_a_checkpoint_folder_the_chief_writes_is_taken(folder, tmp_path, capsys):
    """The scratch folder (a relative path is under it, the working directory) and a remote URL."""
    stack = edited(STACK, "tfk8s:trainer: {}", f"tfk8s:trainer: {{checkpointDir: '{folder}'}}")
    assert main(["plan", str(_written(tmp_path, stack))]) == 0, capsys.readouterr().err


@pytest.mark.parametrize("variable", ["STACKS=", "PARTITIONS=", "STEPS= "])
def test_make_report_without_a_variable_prints_its_usage(variable):
    """Not argparse's words about a flag the user never typed (`argument --stacks: expected at least one
    argument`). The environments are taken as they are (-o): the usage line comes before anything runs."""
    result = subprocess.run(
        [
            "make",
            "--no-print-directory",
            "-o",
            ".venv/.installed",
            "-o",
            ".venv-trainer/.installed",
            "report",
            variable,
        ],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert "usage: make report [STACKS='<stack> ...'] [PARTITIONS='<partition> ...'] [STEPS=<steps>]" in result.stderr
    assert "argument" not in result.stderr and result.stdout == ""
