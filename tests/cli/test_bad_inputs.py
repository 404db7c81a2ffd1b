"""Every bad input to `python -m components` is one clear error naming what is wrong, never a traceback,
and every exit code means what the one table says (components/cli/exit_codes.py, docs/commands.md)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable, Iterator

import pytest
import yaml

from components.cli.exit_codes import EXIT_CODES
from components.cli.main import main
from components.objects.api_errors import api_error_text
from tests.bad_inputs import (
    PROGRAM_STACK,
    STACK,
    Case,
    assert_one_clear_line,
    edited,
    plan,
    stack_file,
    stacks_folder,
    tfjob,
    tfjob_file,
    worker_pod,
)
from tests.harness import PROJECT_ROOT
from tests.terminal import ctrl_c_as_in_a_terminal


def kubeconfig_file(tmp_path: Path, content: str | bytes) -> str:
    path = tmp_path / "kubeconfig"
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return str(path)


def deep_nesting(levels: int) -> str:
    return "[" * levels + "]" * levels


ALIAS_BOMB = (
    "a: &a [x, x, x, x, x, x, x, x, x]\n"
    "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
    "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
    "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
    "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\n"
    "f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]\n"
    "g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]\n"
) + STACK.replace("tfk8s:trainer: {}", "tfk8s:trainer: *g")

NOT_A_KUBECONFIG_LIST = "- name: c\n- name: d\n"


def kubeconfig_yaml(current_context: str = "a", user: str = "{token: t}") -> str:
    """Two contexts, a and b, of one cluster that nothing listens on."""
    return (
        f"apiVersion: v1\nkind: Config\ncurrent-context: {current_context}\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        f"users: [{{name: u, user: {user}}}]\n"
        "contexts: [{name: a, context: {cluster: c, user: u}}, {name: b, context: {cluster: c, user: u}}]\n"
    )


MISSING_EXEC_PLUGIN = kubeconfig_yaml(
    user="{exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: /nonexistent-helper}}"
)


def status_with(kubeconfig: str | bytes, command: str = "status", *flags: str) -> Callable[[Path], list[str]]:
    return lambda tmp_path: [command, "scene1-case1", "--kubeconfig", kubeconfig_file(tmp_path, kubeconfig), *flags]


def import_of(job: dict | str | bytes) -> Callable[[Path], list[str]]:
    return lambda tmp_path: ["import-tfjob", tfjob_file(tmp_path, job), "--stack", "imported", "--nodes", "n1"]


def import_as(stack: str) -> Callable[[Path], list[str]]:
    return lambda tmp_path: ["import-tfjob", tfjob_file(tmp_path, tfjob()), "--stack", stack, "--nodes", "n1"]


def claimed(claim: dict) -> dict:
    """tfjob() whose workers mount a volume of the persistentVolumeClaim `claim`."""
    job = worker_pod(volumes=[{"name": "data", "persistentVolumeClaim": claim}])
    job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["volumeMounts"] = [
        {"name": "data", "mountPath": "/data"}
    ]
    return job


def folder(tmp_path: Path) -> str:
    path = tmp_path / "Pulumi.folder.yaml"
    path.mkdir()
    return str(path)


BAD_INPUTS = {
    # Stack files that cannot be read: one line naming the path as given, exit 2.
    "a binary stack file": Case(plan(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), 2, r"stack file '.*Pulumi\.bad\.yaml': is binary, not text"),
    "a UTF-16 stack file": Case(plan(STACK.encode("utf-16")), 2, r"stack file '.*': is UTF-16 text; tfk8s reads UTF-8: save it as UTF-8"),
    "a Latin-1 stack file": Case(
        plan(STACK.replace("srv-01", "srv-\xe9").encode("latin-1")), 2,
        r"is not UTF-8 text \(byte 0xe9 at line 4, column 27\); save it as UTF-8",
    ),
    "a folder named as the stack file": Case(
        lambda tmp_path: ["plan", folder(tmp_path)], 2, r"stack file '.*Pulumi\.folder\.yaml': is a folder, not a file"
    ),
    "a missing path": Case(lambda tmp_path: ["plan", "/path/missing.yaml"], 2, r"^stack file '/path/missing\.yaml': no such file$"),
    "a missing relative path": Case(lambda tmp_path: ["plan", "experiments/mine.yml"], 2, r"^stack file 'experiments/mine\.yml': no such file$"),
    "an empty stack file": Case(plan(""), 2, r"stack file '.*': no 'config:' mapping \(the file is empty\)"),
    "a list at the top of the stack file": Case(plan("- config\n"), 2, r"no 'config:' mapping \(the file holds a list"),
    "config: []": Case(plan("config: []\n"), 2, r"no 'config:' mapping \('config:' holds a list\)"),
    "an empty stack name": Case(
        lambda tmp_path: ["plan", ""], 2, r"^the stack name is empty; give a stack of stacks/ \(known stacks: .*scene1-case1"
    ),
    "a stack name of spaces": Case(lambda tmp_path: ["diff", "scene1-case1", "  "], 2, r"^the stack name is empty"),
    "a config key that is not text": Case(plan(STACK + "  5: five\n"), 2, r"config key 5 is not text"),
    "nested past any stack file": Case(
        plan(edited(STACK, "tfk8s:trainer: {}", f"tfk8s:trainer: {deep_nesting(5000)}")), 2, r"nested more than 100 deep"
    ),
    "aliases expanding to millions of values": Case(plan(ALIAS_BOMB), 2, r"its aliases expand it to more than 1,000,000 values"),
    # Keys given twice: the second would silently win.
    "tfk8s:cluster given twice": Case(
        plan(STACK + "  tfk8s:cluster:\n    placement: isolated\n"), 2,
        r"the key 'tfk8s:cluster' is given twice \(lines 5 and 10\)",
    ),
    "workers given twice": Case(
        plan(edited(STACK, "    workers: {replicas: 3, pool: servers}\n",
                    "    workers: {replicas: 3, pool: servers}\n    workers: {replicas: 99, pool: servers}\n")), 2,
        r"the key 'workers' is given twice \(lines 8 and 9\)",
    ),
    # A namespace one slip from tfk8s's: its keys would be ignored.
    **{
        f"namespace {namespace}": Case(
            plan(edited(STACK, "tfk8s:trainer: {}", f"{namespace}:trainer: {{steps: 5}}")), 2,
            rf"{namespace}:trainer: unknown namespace '{namespace}' \(did you mean 'tfk8s:trainer'\?\)",
        )
        for namespace in ("tfk8", "tfks", "tf8s", "tfk8S", "tkf8s")
    },
    # Lists and values a program cannot use.
    "command: []": Case(
        plan(edited(PROGRAM_STACK, "command: [python, train.py]", "command: []")), 2,
        r"tfk8s:program: command is empty \(\[\]\), which runs nothing",
    ),
    "an empty first word of command": Case(
        plan(edited(PROGRAM_STACK, "command: [python, train.py]", "command: ['', train.py]")), 2,
        r"tfk8s:program: command\[0\] is empty",
    ),
    "args: [] without a command": Case(
        plan(edited(PROGRAM_STACK, "command: [python, train.py]", "args: []")), 2,
        r"tfk8s:program: args is empty \(\[\]\) with no command",
    ),
    "a role that overrides nothing": Case(
        plan(PROGRAM_STACK + "    roles: {ps: {}}\n"), 2, r"tfk8s:program\.roles\.ps: gives neither command nor args",
    ),
    "roles.ps.command: []": Case(
        plan(PROGRAM_STACK + "    roles: {ps: {command: []}}\n"), 2, r"tfk8s:program\.roles\.ps: command is empty",
    ),
    "tfk8s:program: with nothing under it": Case(
        plan(edited(PROGRAM_STACK, "  tfk8s:program:\n    command: [python, train.py]\n", "  tfk8s:program:\n")), 2,
        r"tfk8s:program: empty; give the program's keys",
    ),
    # What YAML reads otherwise than written: refused, named as written, with how to write it (issue 50, item 1).
    "ratio 1:10 unquoted (base 60)": Case(
        plan(edited(STACK, "ps: {replicas: 1, pool: servers}", "ratio: 1:10")), 2,
        r"tfk8s:cluster\.ratio: 1:10, unquoted, is the base-60 number 70 to YAML 1\.1 and not to YAML 1\.2 "
        r"\(Pulumi's\); quote it for the text: '1:10', or write the number 70$",
    ),
    "ttlSecondsAfterFinished: 1:30 (base 60)": Case(
        plan(edited(STACK, "placement: colocated", "placement: colocated\n    ttlSecondsAfterFinished: 1:30")), 2,
        r"tfk8s:cluster\.ttlSecondsAfterFinished: 1:30, unquoted, is the base-60 number 90 .* or write the number 90$",
    ),
    "strict: yes": Case(
        plan(edited(STACK, "placement: colocated", "placement: colocated\n    strict: yes")), 2,
        r"tfk8s:cluster\.strict: yes, unquoted, is the boolean true to YAML 1\.1 and the text 'yes' to YAML 1\.2 "
        r"\(Pulumi's\); write true or false, or quote it for the text: 'yes'$",
    ),
    "restarts: 010 (octal)": Case(
        plan(edited(STACK, "placement: colocated", "placement: colocated\n    restarts: 010")), 2,
        r"tfk8s:cluster\.restarts: 010, unquoted, is the octal number 8 to YAML 1\.1 .*quote it for the text: '010'",
    ),
    "steps: 1_000": Case(
        plan(edited(STACK, "tfk8s:trainer: {}", "tfk8s:trainer: {steps: 1_000}")), 2,
        r"tfk8s:trainer\.steps: 1_000, unquoted, is the number 1000 to YAML 1\.1 and not to YAML 1\.2",
    ),
    "an env value of 1.10": Case(
        plan(edited(PROGRAM_STACK, "command: [python, train.py]", "command: [python, train.py]\n    env: {V: 1.10}")), 2,
        r"^tfk8s:program\.env\.V: should be text or \{secret, key\} \(got 1\.10, which YAML reads as the number "
        r"1\.1\); quote it: '1\.10'$",
    ),
    "an env value of 8080": Case(
        plan(edited(PROGRAM_STACK, "command: [python, train.py]", "command: [python, train.py]\n    env: {PORT: 8080}")),
        2, r"^tfk8s:program\.env\.PORT: should be text or \{secret, key\} \(got 8080\); quote it: '8080'$",
    ),
    "an env value that is a date": Case(
        plan(edited(PROGRAM_STACK, "command: [python, train.py]", "command: [python, train.py]\n    env: {DAY: 2026-01-01}")),
        2, r"^tfk8s:program\.env\.DAY: 2026-01-01, unquoted, is to YAML the date 2026-01-01, which no stack value is; "
        r"quote it: '2026-01-01'$",
    ),
    "an env Secret without its key": Case(
        plan(edited(PROGRAM_STACK, "command: [python, train.py]", "command: [python, train.py]\n    env: {T: {secret: s}}")),
        2, r"^tfk8s:program\.env\.T\.key: Field required$",
    ),
    "a label value true": Case(
        plan(edited(STACK, "nodes: [srv-00, srv-01]", "selector: {ml: true}")), 2,
        r"^tfk8s:nodePools\[0\]\.selector\.ml: Input should be a valid string \(got true\); quote it: 'true'$",
    ),
    "nodes as a !!set": Case(
        plan(edited(STACK, "nodes: [srv-00, srv-01]", "nodes: !!set {srv-00, srv-01}")), 2,
        r"^tfk8s:nodePools\[0\]\.nodes: !!set is a YAML set \(!!set\), which no stack value is; write a list",
    ),
    "an image as !!binary": Case(
        plan(edited(STACK, "placement: colocated", "placement: colocated\n    image: !!binary dGY6Mg==")), 2,
        r"^tfk8s:cluster\.image: !!binary dGY6Mg== is binary data, which no stack value is; write the text itself$",
    ),
    "done: {1: x}": Case(
        plan(edited(PROGRAM_STACK, "command: [python, train.py]", "command: [python, train.py]\n    done: {1: x, b: y}")),
        2, r"^tfk8s:program\.done: a mapping takes the one key workers \(\{workers: N\}\); got 1, b",
    ),
    "namespace: 5": Case(
        plan(edited(STACK, "placement: colocated", "placement: colocated\n    namespace: 5")), 2,
        r"^tfk8s:cluster\.namespace: should be a namespace's name, or \{name: <namespace>, existing: true\} .*"
        r"\(got 5\); quote it: '5'$",
    ),
    "an env name YAML reads as a boolean (on:)": Case(
        plan(edited(PROGRAM_STACK, "command: [python, train.py]", "command: [python, train.py]\n    env: {on: x}")), 2,
        r"^tfk8s:program\.env\.on: the key on is, to YAML, the boolean true; a key is a name: quote it: 'on'$",
    ),
    "a label key that is a number": Case(
        plan(edited(STACK, "nodes: [srv-00, srv-01]", "selector: {1: a}")), 2,
        r"^tfk8s:nodePools\[0\]\.selector: the key 1 is not text; quote it: '1'$",
    ),
    "cpu: .inf": Case(
        plan(edited(STACK, "workers: {replicas: 3, pool: servers}", "workers: {replicas: 3, pool: servers, cpu: .inf}")), 2,
        r"^tfk8s:cluster\.workers\.cpu: must be a Kubernetes quantity such as '500m', '2', '4Gi' \(got \.inf, which YAML "
        r"reads as the number inf\)$",
    ),
    "cpu: true": Case(
        plan(edited(STACK, "workers: {replicas: 3, pool: servers}", "workers: {replicas: 3, pool: servers, cpu: true}")), 2,
        r"^tfk8s:cluster\.workers\.cpu: must be a Kubernetes quantity such as '500m', '2', '4Gi' \(got true\)$",
    ),
    "a role that is not one": Case(
        plan(PROGRAM_STACK + "    roles: {master: {args: [x]}}\n"), 2,
        r"^tfk8s:program\.roles: the key master: Input should be 'chief', 'ps', 'worker' or 'evaluator'$",
    ),
    "env as a list": Case(
        plan(edited(PROGRAM_STACK, "command: [python, train.py]", "command: [python, train.py]\n    env: [A, B]")), 2,
        r"^tfk8s:program\.env: should be a mapping$",
    ),
    "a key of a role that is a number": Case(
        plan(edited(STACK, "ps: {replicas: 1, pool: servers}", "ps: {replicas: 1, pool: servers, 1: 2}")), 2,
        r"^tfk8s:cluster\.ps: the key 1 is not text; quote it: '1'$",
    ),
    # A key with nothing after it: refused for every key alike, never read as its default or as {} / [] (item 2).
    **{
        f"{key} with nothing after it": Case(
            plan(edited(STACK, old, new)), 2,
            rf"^{re.escape(key)}: empty; write {re.escape(shape)}.*, or leave the key out for its default",
        )
        for key, old, new, shape in (
            ("tfk8s:logs", "tfk8s:trainer: {}", "tfk8s:trainer: {}\n  tfk8s:logs:", "{} for the defaults of its keys"),
            ("tfk8s:trainer", "tfk8s:trainer: {}", "tfk8s:trainer:", "{} for the defaults of its keys"),
            ("tfk8s:cluster.egress", "placement: colocated", "placement: colocated\n    egress:", "[] for an empty list"),
            ("tfk8s:cluster.chief", "placement: colocated", "placement: colocated\n    chief: ~", "{} for the defaults"),
            ("tfk8s:cluster.image", "placement: colocated", "placement: colocated\n    image: null", "its value"),
        )
    },
    # Past the largest experiment tfk8s is tested with: refused before it is planned.
    "10**23 workers": Case(
        plan(edited(STACK, "replicas: 3", f"replicas: {10**23}")), 2,
        r"tfk8s:cluster\.workers\.replicas: 100,000,000,000,000,000,000,000 workers and 1 PS make "
        r"100,000,000,000,000,000,000,002 tasks; tfk8s is tested up to 11,001 tasks",
    ),
    "10**7 workers": Case(
        plan(edited(STACK, "replicas: 3", f"replicas: {10**7}")), 2,
        r"tfk8s:cluster\.workers\.replicas: 10,000,000 workers .* tfk8s is tested up to 11,001 tasks",
    ),
    "10**7 PS": Case(
        plan(edited(STACK, "replicas: 1,", f"replicas: {10**7},")), 2,
        r"tfk8s:cluster\.ps\.replicas: 3 workers and 10,000,000 PS .* tfk8s is tested up to 11,001 tasks",
    ),
    "a ratio giving 3 billion PS": Case(
        plan(edited(STACK, "ps: {replicas: 1, pool: servers}", "ratio: '999999999:1'")), 2,
        r"tfk8s:cluster\.ratio: 3 workers and 2,999,999,997 PS make 3,000,000,001 tasks; tfk8s is tested up to 11,001",
    ),
    "a ratio of 5,000 digits": Case(
        plan(edited(STACK, "ps: {replicas: 1, pool: servers}", f"ratio: '1:{'9' * 5000}'")), 2,
        r"tfk8s:cluster\.ratio: ratio '1:9+\.\.\. \(5,002 characters\): P and W are whole numbers of at most 9 digits",
    ),
    "10**30 GPUs per worker": Case(
        plan(edited(STACK, "workers: {replicas: 3, pool: servers}", f"workers: {{replicas: 3, pool: servers, gpus: {10**30}}}")), 2,
        r"tfk8s:cluster\.workers\.gpus: Input should be less than or equal to 2147483647",
    ),
    "10**30 restarts": Case(
        plan(edited(STACK, "placement: colocated", f"placement: colocated\n    restarts: {10**30}")), 2,
        r"tfk8s:cluster\.restarts: Input should be less than or equal to 2147483647",
    ),
    "a memory quantity of 400 digits": Case(
        plan(edited(STACK, "workers: {replicas: 3, pool: servers}", f"workers: {{replicas: 3, pool: servers, memory: '{'9' * 400}Ei'}}")), 2,
        r"tfk8s:cluster\.workers\.memory: quantity '9+\.\.\. \(402 characters\) is past the largest Kubernetes holds .*\(got '9+\.\.\. \(402 characters\)\)",
    ),
    # Trainer settings a model cannot take.
    "learningRate: .nan": Case(
        plan(edited(STACK, "tfk8s:trainer: {}", "tfk8s:trainer: {learningRate: .nan}")), 2,
        r"tfk8s:trainer\.learningRate: must be a finite number \(got \.nan, which YAML reads as the number nan\)",
    ),
    "steps of 10**30": Case(
        plan(edited(STACK, "tfk8s:trainer: {}", f"tfk8s:trainer: {{steps: {10**30}}}")), 2,
        r"tfk8s:trainer\.steps: must be at most 2,147,483,647",
    ),
    "embeddingRows of 10**30": Case(
        plan(edited(STACK, "tfk8s:trainer: {}", f"tfk8s:trainer: {{embeddingRows: {10**30}}}")), 2,
        r"tfk8s:trainer\.embeddingRows: must be at most 2,147,483,647",
    ),
    # Units that make no sense (accepted before: 1.6 billion cores; a claim the API server refuses).
    "a PS CPU in bytes": Case(
        plan(edited(STACK, "ps: {replicas: 1, pool: servers}", "ps: {replicas: 1, pool: servers, cpu: 1.5Gi}")), 2,
        r"tfk8s:cluster\.ps\.cpu: .*CPU '1\.5Gi' is written in bytes \(Gi\); CPU is cores, whole or in thousandths",
    ),
    "a checkpoint volume that no checkpoint is written to": Case(
        plan(edited(edited(STACK, "placement: colocated", "placement: colocated\n    chief: {checkpointVolume: {size: 1Gi}}"),
                    "tfk8s:trainer: {}", "tfk8s:trainer: {checkpointEvery: 0}")), 2,
        r"tfk8s:cluster\.chief\.checkpointVolume: a volume for the chief's checkpoints, and "
        r"tfk8s:trainer\.checkpointEvery: 0 writes none; give checkpointEvery steps, or drop the volume",
    ),
    "a checkpoint volume of 0 bytes": Case(
        plan(edited(STACK, "placement: colocated", "placement: colocated\n    chief: {checkpointVolume: {size: '0'}}")), 2,
        r"tfk8s:cluster\.chief\.checkpointVolume\.size: .*storage '0' is below 1Mi; quantities are bytes unless suffixed",
    ),
    "a checkpoint volume of 20 bytes": Case(
        plan(edited(STACK, "placement: colocated", "placement: colocated\n    chief: {checkpointVolume: {size: 20}}")), 2,
        r"checkpointVolume\.size: .*storage '20' is below 1Mi",
    ),
    # snake_case names were read as their camelCase keys, though the reference and tfk8s:trainer have
    # camelCase only.
    "a snake_case key": Case(
        plan(edited(STACK, "placement: colocated", "placement: colocated\n    place_by: hostname")), 2,
        r"tfk8s:cluster\.place_by: unknown key \(did you mean 'placeBy'\?\)",
    ),
    "a snake_case section of a role": Case(
        plan(edited(STACK, "placement: colocated", "placement: colocated\n    chief: {checkpoint_volume: {size: 1Gi}}")), 2,
        r"tfk8s:cluster\.chief\.checkpoint_volume: unknown key \(did you mean 'checkpointVolume'\?\)",
    ),
    "a model whose derived memory Kubernetes cannot hold": Case(
        plan(edited(STACK, "tfk8s:trainer: {}", "tfk8s:trainer: {embeddingRows: 2147483647, embeddingDim: 2147483647}")), 2,
        r"tfk8s:trainer: embeddingRows 2,147,483,647 x embeddingDim 2,147,483,647 sizes each PS's memory at "
        r"55,340,232,170,394,353,672 bytes \(.* TiB\), past the 2\^63 - 1 bytes Kubernetes holds; make the model "
        r"smaller, give more PS \(tfk8s:cluster\.ps\.replicas\), or set tfk8s:cluster\.ps\.memory",
    ),
    "a model whose derived PS memory no server offers": Case(
        plan(edited(STACK, "tfk8s:trainer: {}", "tfk8s:trainer: {embeddingDim: 1000000000}")), 2,
        r"sizes each PS's memory at 12,000,000,805,306,368 bytes \(10,913\.9 TiB\), more than any one server "
        r"offers \(32 TiB at the most\): no node could run it",
    ),
    "a number tagged as text where a whole number belongs": Case(
        plan(edited(STACK, "replicas: 3", "replicas: !!str 3")), 2,
        r"tfk8s:cluster\.workers\.replicas: Input should be a valid integer \(got '3'\)$",
    ),
    "the log collector's memory below the least": Case(
        plan(STACK + "  tfk8s:logs: {memory: 1Ki}\n"), 2,
        r"tfk8s:logs\.memory: memory '1Ki' is below 128Mi, the least a tfk8s pod is given \(a TensorFlow task, "
        r"the log collector\)",
    ),
    "an egress CIDR written as a number": Case(
        plan(edited(STACK, "placement: colocated", "placement: colocated\n    egress: [{cidr: 167772160}]")), 2,
        r"tfk8s:cluster\.egress\[0\]\.cidr: a number is not a CIDR such as 10\.20\.0\.0/16 \(got 167772160\)$",
    ),
    "hiddenUnits with one bad item": Case(
        plan(edited(STACK, "tfk8s:trainer: {}", "tfk8s:trainer: {hiddenUnits: [64, 0]}")), 2,
        r"tfk8s:trainer\.hiddenUnits: must be a list of positive whole numbers; its item 2 is 0$",
    ),
    "trainer.data at a web address": Case(
        plan(edited(STACK, "tfk8s:trainer: {}", "tfk8s:trainer: {data: 'http://example.com/train-*.tfrecord'}")), 2,
        r"tfk8s:trainer\.data: 'http://example\.com/train-\*\.tfrecord' is a web address, which tf\.io\.gfile cannot",
    ),
    # Each kind of name with its own help.
    "a claim named Bad_Claim": Case(
        plan(PROGRAM_STACK + "    volumes: [{claim: Bad_Claim, mountPath: /data}]\n"), 2,
        r"tfk8s:program\.volumes\[0\]\.claim: must be a PersistentVolumeClaim's name: lower-case letters",
    ),
    "a Secret named Bad_Secret": Case(
        plan(PROGRAM_STACK + "    env: {TOKEN: {secret: Bad_Secret, key: token}}\n"), 2,
        r"tfk8s:program\.env\.TOKEN.*secret: must be a Secret's name: lower-case letters",
    ),
    "a pool named Bad_Pool": Case(
        plan(STACK.replace("servers", "Bad_Pool")), 2, r"tfk8s:nodePools\[0\]\.name: must be a pool name: lower-case letters, digits and '-'",
    ),
    "a StorageClass named Bad_Class": Case(
        plan(edited(STACK, "placement: colocated", "placement: colocated\n    chief: {checkpointVolume: {size: 1Gi, storageClass: Bad_Class}}")), 2,
        r"storageClass: must be a StorageClass's name",
    ),
    # diff: a stack it cannot read is exit 2, not "different".
    "diff of a binary stack": Case(
        lambda tmp_path: ["diff", "scene1-case1", stack_file(tmp_path, b"\x00\x01\x02")], 2, r"is binary, not text",
    ),
    "diff of a folder": Case(lambda tmp_path: ["diff", folder(tmp_path), "scene1-case1"], 2, r"is a folder, not a file"),
    # Kubeconfigs the client cannot read: one line naming the file, exit 2.
    "a kubeconfig that is not YAML": Case(
        status_with("apiVersion: v1\nclusters: [unclosed\n"), 2, r"kubeconfig .*kubeconfig \(given with --kubeconfig\): is not YAML: .*line 3",
    ),
    "a kubeconfig that is a YAML list": Case(
        status_with(NOT_A_KUBECONFIG_LIST), 2, r"is not a kubeconfig: it holds a list, not a mapping of clusters",
    ),
    "a kubeconfig whose clusters is a number": Case(
        status_with("apiVersion: v1\nkind: Config\nclusters: 5\ncontexts: []\n"), 2,
        r"is not a kubeconfig: its clusters is the number 5, not a list",
    ),
    "an empty --kubeconfig": Case(
        lambda tmp_path: ["status", "scene1-case1", "--kubeconfig", ""], 2,
        r"^stack 'scene1-case1': --kubeconfig is empty; give a kubeconfig file's path, or leave --kubeconfig out",
    ),
    "a current-context that names no context": Case(
        status_with(kubeconfig_yaml(current_context="y")), 2,
        r"\(given with --kubeconfig\): current-context 'y' names no context; it has: a, b$",
    ),
    "a --context that names no context": Case(
        status_with(kubeconfig_yaml(), "top", "--context", "y"), 2,
        r"\(given with --kubeconfig\): --context 'y' names no context; it has: a, b$",
    ),
    "a kubeconfig without current-context or --context": Case(
        status_with(kubeconfig_yaml().replace("current-context: a\n", "")), 2,
        r"it sets no current-context; give --context, one of: a, b$",
    ),
    "a context whose cluster is not listed": Case(
        status_with(kubeconfig_yaml().replace("{name: a, context: {cluster: c,", "{name: a, context: {cluster: z,")), 2,
        r"context 'a' names cluster 'z', which it does not list; it has: c$",
    ),
    "a context whose user is not listed": Case(
        status_with(kubeconfig_yaml().replace("{name: a, context: {cluster: c, user: u}}", "{name: a, context: {cluster: c, user: x}}")), 2,
        r"context 'a' names user 'x', which it does not list; it has: u$",
    ),
    "a cluster whose server has no scheme": Case(
        status_with(kubeconfig_yaml().replace("'https://127.0.0.1:1'", "'127.0.0.1:1'")), 2,
        r"cluster 'c' has server '127\.0\.0\.1:1': it must be the API server's URL, such as https://host:6443$",
    ),
    "a cluster whose server is empty": Case(
        status_with(kubeconfig_yaml().replace("'https://127.0.0.1:1'", "''")), 2,
        r"cluster 'c' has no server: it must be the API server's URL, such as https://host:6443$",
    ),
    "an exec plugin that is not installed": Case(
        status_with(MISSING_EXEC_PLUGIN), 2,
        r"\(given with --kubeconfig\): the exec plugin '/nonexistent-helper', which gets user 'u' its credentials, "
        r"failed: \[Errno 2\] No such file or directory",
    ),
    "a binary kubeconfig": Case(status_with(b"\x00\xff\x00\xff"), 2, r"kubeconfig .*: is binary, not text"),
    "top with a kubeconfig that is not YAML": Case(
        status_with("clusters: [unclosed\n", command="top"), 2, r"is not YAML",
    ),
    # TFJobs: exit 1, nothing written, the field named.
    "a TFJob whose Worker is spelled Wrker": Case(
        import_of(tfjob(Worker=None, Wrker={"replicas": 2})), 1,
        r"spec\.tfReplicaSpecs\.Wrker: 'Wrker' is not a TFJob replica type \(did you mean 'Worker'\?\)",
    ),
    # A FILE it cannot read, or a --stack that is no stack name: nothing usable, exit 1 (import-tfjob's
    # contract: 0 written, 1 not).
    "a TFJob in UTF-16": Case(import_of(yaml.safe_dump(tfjob()).encode("utf-16")), 1, r"tfjob\.yaml: is UTF-16 text"),
    "a folder named as the TFJob": Case(
        lambda tmp_path: ["import-tfjob", folder(tmp_path), "--stack", "imported"], 1,
        r"^import-tfjob: .*Pulumi\.folder\.yaml: is a folder, not a file; nothing written$",
    ),
    "--stack 'a b'": Case(import_as("a b"), 1, r"--stack 'a b' is not a valid Pulumi stack name: letters, digits, '-', '_'"),
    "--stack ''": Case(import_as(""), 1, r"--stack '' is not a valid Pulumi stack name"),
    "--stack a/b": Case(import_as("a/b"), 1, r"--stack 'a/b' is not a valid Pulumi stack name"),
    "a TFJob with a key given twice": Case(
        import_of(yaml.safe_dump(tfjob(), sort_keys=False).replace("kind: TFJob\n", "kind: TFJob\nkind: TFJob\n")), 1,
        r"not YAML: the key 'kind' is given twice \(lines 2 and 3\)",
    ),
    "a TFJob whose env is a mapping": Case(
        import_of(tfjob(Worker={"replicas": 2, "container": {"env": {"A": "1"}}})), 1,
        r"spec\.tfReplicaSpecs\.Worker\.template\.spec\.containers\[0\]\.env is a mapping; it must be a list",
    ),
    "a TFJob whose command is one string": Case(
        import_of(tfjob(Worker={"replicas": 2, "container": {"command": "python train.py"}})), 1,
        r"containers\[0\]\.command is the text 'python train\.py'; it must be a list of text",
    ),
    "a TFJob with a number in args": Case(
        import_of(tfjob(Worker={"replicas": 2, "container": {"args": ["--steps", 100]}})), 1,
        r"containers\[0\]\.args\[1\] is the number 100; Kubernetes takes text only: quote it",
    ),
    "a TFJob whose tolerations are a mapping": Case(
        import_of(
            {**tfjob(), "spec": {"tfReplicaSpecs": {**tfjob()["spec"]["tfReplicaSpecs"], "PS": {
                "replicas": 1, "template": {"spec": {"tolerations": {"key": "x"}, "containers": [
                    {"name": "tensorflow", "image": "tensorflow/tensorflow:2.21.0", "resources": {"requests": {"memory": "2Gi"}}}
                ]}}}}}}
        ), 1,
        r"spec\.tfReplicaSpecs\.PS\.template\.spec\.tolerations is a mapping; it must be a list",
    ),
    # Each ended in a traceback (AttributeError, TypeError) or was read as something else.
    "a TFJob whose name holds a control character": Case(
        import_of({**tfjob(), "metadata": {"name": "ctr\x01"}}), 1,
        r"metadata\.name is 'ctr\\x01', which Kubernetes refuses: lower-case letters, digits, '-' and '\.'",
    ),
    "a TFJob whose namespace is a list": Case(
        import_of({**tfjob(), "metadata": {"name": "ctr", "namespace": ["a"]}}), 1,
        r"metadata\.namespace is a list.*, which Kubernetes refuses: a namespace's name",
    ),
    "a TFJob with two different backoffLimits": Case(
        import_of({**tfjob(), "spec": {**tfjob()["spec"], "backoffLimit": 3, "runPolicy": {"backoffLimit": 5}}}), 1,
        r"spec\.backoffLimit \(3\) and spec\.runPolicy\.backoffLimit \(5\) differ; a TFJob of kubeflow\.org/v1 reads "
        r"spec\.runPolicy's: remove spec\.backoffLimit",
    ),
    "a TFJob with replicas 1:30": Case(
        import_of(yaml.safe_dump(tfjob(), sort_keys=False).replace("replicas: 2", "replicas: 1:30")), 1,
        r"spec\.tfReplicaSpecs\.Worker\.replicas is '1:30'; it must be a whole number of 0 or more",
    ),
    "a TFJob whose imagePullSecrets is text": Case(
        import_of(worker_pod(imagePullSecrets="regcred")), 1,
        r"spec\.tfReplicaSpecs\.Worker\.template\.spec\.imagePullSecrets is the text 'regcred'; it must be a list",
    ),
    "a TFJob whose imagePullSecrets lists names": Case(
        import_of(worker_pod(imagePullSecrets=["regcred"])), 1,
        r"template\.spec\.imagePullSecrets\[0\] is the text 'regcred'; it must be a mapping",
    ),
    "a TFJob whose priorityClassName is a list": Case(
        import_of(worker_pod(priorityClassName=["a"])), 1,
        r"template\.spec\.priorityClassName is a list.*; it must be text",
    ),
    "a TFJob whose volumeMount readOnly is quoted": Case(
        import_of(tfjob(Worker={"replicas": 2, "container": {"volumeMounts": [
            {"name": "data", "mountPath": "/data", "readOnly": "false"}]}})), 1,
        r"containers\[0\]\.volumeMounts\[0\]\.readOnly is the text 'false'; it must be true or false, unquoted",
    ),
    "a TFJob giving worker and Worker": Case(
        import_of(tfjob(worker={"replicas": 1})), 1,
        r"spec\.tfReplicaSpecs\.worker and spec\.tfReplicaSpecs\.Worker are one replica type given twice "
        r"\(TFJob's controller reads replica types whatever their case\): keep one",
    ),
    "a TFJob's claim without its claimName": Case(
        import_of(claimed({})), 1,
        r"TFJob 'ctr': spec\.tfReplicaSpecs\.Worker\.template\.spec\.volumes\[0\]\.persistentVolumeClaim\.claimName "
        r"is missing; Kubernetes requires it",
    ),
    "a TFJob's claimName Kubernetes refuses": Case(
        import_of(claimed({"claimName": "Bad_Claim"})), 1,
        r"^spec\.tfReplicaSpecs\.Worker\.template\.spec\.volumes\[0\]\.persistentVolumeClaim\.claimName: must be a "
        r"PersistentVolumeClaim's name",
    ),
    "a TFJob's secretKeyRef without its key": Case(
        import_of(tfjob(**{role: {"replicas": count, "container": {"env": [
            {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "s"}}}]}} for role, count in (("PS", 1), ("Worker", 2))})), 1,
        r"containers\[0\]\.env\[0\]\.valueFrom\.secretKeyRef\.key is missing; Kubernetes requires it",
    ),
    "import-tfjob --image that is no image reference": Case(
        lambda tmp_path: [*import_of(tfjob())(tmp_path), "--image", "Bad Image:1"], 1,
        r"--image 'Bad Image:1' is no image reference the kubelet can pull",
    ),
    "import-tfjob of an empty FILE": Case(
        lambda tmp_path: ["import-tfjob", "", "--stack", "imported", "--nodes", "n1"], 1,
        r"import-tfjob: '': FILE is empty: name a TFJob manifest, or - for stdin",
    ),
    "a TFJob asking for -1 GPUs": Case(
        import_of(tfjob(Worker={"replicas": 2, "container": {"resources": {"limits": {"nvidia.com/gpu": -1}}}})), 1,
        r"tfjob\.yaml: TFJob 'ctr': spec\.tfReplicaSpecs\.Worker\.template\.spec\.containers\[0\]\.resources\.limits\."
        r"nvidia\.com/gpu is -1; GPUs are whole numbers",
    ),
    "a TFJob whose name is a number": Case(
        import_of(yaml.safe_dump(tfjob(), sort_keys=False).replace("name: ctr", "name: 2024")), 1,
        r"metadata\.name is the number 2024; a TFJob's name is text",
    ),
}


@pytest.fixture
def stacks_dir(tmp_path, monkeypatch) -> Path:
    return stacks_folder(tmp_path, monkeypatch)


@pytest.mark.parametrize("case", [pytest.param(case, id=name) for name, case in BAD_INPUTS.items()])
def test_a_bad_input_is_one_clear_line_and_its_exit_code(case: Case, tmp_path, capsys, monkeypatch):
    assert_one_clear_line(case, tmp_path, capsys, monkeypatch)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file whatever its mode")
def test_a_stack_file_without_read_permission(tmp_path, capsys):
    path = Path(stack_file(tmp_path, STACK))
    path.chmod(0)
    assert main(["plan", str(path)]) == 2
    assert capsys.readouterr().err.strip() == f"stack file '{path}': no permission to read it"


def test_a_stack_file_the_system_refuses_to_open_is_named_with_the_reason(tmp_path, capsys, monkeypatch):
    """What a user without read permission sees (simulated: the tests may run as root, who reads anything)."""
    path = stack_file(tmp_path, STACK)
    real_open = open

    def refusing_open(file, *args, **kwargs):
        if str(file) == path:
            raise PermissionError(13, "Permission denied", file)
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr("builtins.open", refusing_open)
    assert main(["plan", path]) == 2
    assert capsys.readouterr().err.strip() == f"stack file '{path}': no permission to read it"


def test_another_namespace_stays_allowed(tmp_path, capsys):
    """kubernetes: and pulumi: keys belong to other namespaces of the same stack file."""
    path = stack_file(tmp_path, STACK + "  kubernetes:context: kind-tfk8s\n  pulumi:template: none\n  aws:region: x\n")
    assert main(["plan", path]) == 0, capsys.readouterr().err


def test_a_namespace_typo_is_refused_by_the_pulumi_program_too(recording_monitor):
    """`pulumi up` passes the stack's keys of every namespace; the one a slip from tfk8s's is refused."""
    import pulumi

    from components.spec.stack_files import read_stack_values
    from tests.harness import run_program

    _, values = read_stack_values("scene1-case1")
    values = {**values, "tfk8:trainer": {"steps": 5}, "kubernetes:context": "kind-tfk8s"}
    with pytest.raises(pulumi.RunError, match=r"tfk8:trainer: unknown namespace 'tfk8' \(did you mean 'tfk8s:trainer'\?\)"):
        run_program("scene1-case1", values, monitor=recording_monitor)
    assert recording_monitor.registrations == []


def test_anchors_and_merge_keys_are_not_keys_given_twice(tmp_path, capsys):
    path = stack_file(tmp_path, STACK.replace(
        "    workers: {replicas: 3, pool: servers}\n",
        "    workers:\n      <<: {replicas: 1, pool: servers}\n      replicas: 3\n",
    ))
    assert main(["plan", path, "--json"]) == 0, capsys.readouterr().err


def test_the_largest_tested_experiment_is_still_planned(tmp_path, capsys):
    """1,000 PS, 10,000 workers and the chief: the bound refuses nothing tfk8s is tested with."""
    from tests.stack_variants import write_scaled

    assert main(["plan", write_scaled(tmp_path, "scene1-case4", 50), "--json"]) == 0, capsys.readouterr().err


# --------------------------------------------------------------------------
# API errors: the server's own message, and the permission a 403 lacks.

FORBIDDEN_PODS = {
    "kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Forbidden", "code": 403,
    "message": 'pods is forbidden: User "system:serviceaccount:ml:viewer" cannot list resource "pods" in API group "" '
               'in the namespace "tf-scene1-case1"',
    "details": {"kind": "pods"},
}


@pytest.fixture
def refusing_api_server(tmp_path) -> Iterator[str]:
    """An API server that answers every request 403 with the Status object Kubernetes writes; its kubeconfig."""

    class Refuse(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the http.server interface
            body = json.dumps(FORBIDDEN_PODS).encode()
            self.send_response(403)
            self.send_header("Content-Type", "application/json")
            self.send_header("Audit-Id", "3f0c5a8e-headers-are-not-for-people")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Refuse)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    kubeconfig = {
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{server.server_address[1]}"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
    }
    try:
        yield kubeconfig_file(tmp_path, json.dumps(kubeconfig))
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("command", ["status", "top"])
def test_a_403_says_which_permission_is_missing_in_one_line(command, refusing_api_server, capsys):
    assert main([command, "scene1-case1", "--kubeconfig", refusing_api_server]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "refused: 403 Forbidden: pods is forbidden" in err
    assert "missing permission: `list` on `pods` in namespace tf-scene1-case1 for system:serviceaccount:ml:viewer" in err
    assert "Audit-Id" not in err and "HTTP response headers" not in err


@pytest.mark.parametrize("status, reason, body, said", [
    pytest.param(403, "Forbidden", json.dumps({**FORBIDDEN_PODS, "message": 'nodes "srv-00" is forbidden: User "u" cannot get '
                 'resource "nodes/proxy" in API group "" at the cluster scope'}), "missing permission: `get` on `nodes/proxy` "
                 "cluster-wide for u", id="a cluster-scoped subresource"),
    pytest.param(403, "Forbidden", json.dumps({**FORBIDDEN_PODS, "message": 'jobsets.jobset.x-k8s.io "tf" is forbidden: User '
                 '"u" cannot get resource "jobsets" in API group "jobset.x-k8s.io" in the namespace "tf-a"'}),
                 "missing permission: `get` on `jobsets.jobset.x-k8s.io` in namespace tf-a for u", id="a custom resource"),
    pytest.param(401, "Unauthorized", json.dumps({"kind": "Status", "message": "Unauthorized", "code": 401}),
                 "401 Unauthorized: Unauthorized", id="a 401"),
    pytest.param(500, "Internal Server Error", "upstream connect error\nmore", "500 Internal Server Error: upstream connect error",
                 id="a body that is not a Status"),
])
def test_an_api_error_is_the_servers_message(status, reason, body, said):
    assert said in api_error_text(status, reason, body)
    assert "\n" not in api_error_text(status, reason, body)


# --------------------------------------------------------------------------
# Ctrl-C: 130, no traceback.


def test_ctrl_c_is_exit_130_without_a_traceback(monkeypatch, capsys):
    from components.__main__ import run

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("components.live.top.cluster_top", interrupted)
    assert run(["top", "scene1-case1", "--watch", "5"]) == 130
    assert "Traceback" not in capsys.readouterr().err


def test_ctrl_c_of_the_command_line_is_exit_130_without_a_traceback():
    """SIGINT in the middle of `python -m components plan`, as a terminal's Ctrl-C sends it."""
    script = (
        "import os, runpy, signal, sys\n"
        "import components.cli.plan_view as view\n"
        "view.plan_table = lambda *args: os.kill(os.getpid(), signal.SIGINT) or 'never'\n"
        "import components.cli.main as cli\n"
        "cli.plan_table = view.plan_table\n"
        "sys.argv = ['components', 'plan', 'scene1-case1']\n"
        "runpy.run_module('components', run_name='__main__')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=ctrl_c_as_in_a_terminal,
    )
    assert result.returncode == 130, result.stderr
    assert "Traceback" not in result.stderr and "never" not in result.stdout


def test_an_exec_plugin_that_cannot_run_is_one_line_without_the_clients_log(tmp_path):
    """The client logs the plugin's error on the root logger (`ERROR:root:...`) and goes on without
    credentials; what a user sees is the one line naming the plugin, and no attempt at the API server."""
    kubeconfig = kubeconfig_file(tmp_path, MISSING_EXEC_PLUGIN)
    result = subprocess.run(
        [sys.executable, "-m", "components", "status", "scene1-case1", "--kubeconfig", kubeconfig],
        cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert "the exec plugin '/nonexistent-helper'" in result.stderr and "does not answer" not in result.stderr


@pytest.mark.parametrize("argv", [
    pytest.param(lambda tmp_path: ["plan", stack_file(tmp_path, "config: 5\n")], id="a stack file"),
    pytest.param(status_with("apiVersion: v1\nclusters: 5\ncontexts: []\n"), id="a kubeconfig"),
    pytest.param(import_of({**tfjob(), "spec": 5}), id="a TFJob's spec"),
    pytest.param(import_of(tfjob(Worker={"replicas": 2, "container": {"image": 5}})), id="a TFJob's image"),
])
def test_a_value_of_the_wrong_kind_is_named_alike_by_every_command(argv, tmp_path, capsys, stacks_dir):
    """`5` where a mapping, a list or text belongs: the same words whichever file it is in."""
    assert main(argv(tmp_path)) != 0
    err = capsys.readouterr().err
    assert "the number 5" in err, err


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="/dev/full is Linux's")
def test_a_full_disk_under_standard_output_is_one_line_and_exit_2():
    with open("/dev/full", "w") as full:
        result = subprocess.run([sys.executable, "-m", "components", "export", "scene1-case1"], cwd=PROJECT_ROOT,
                                stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
    assert result.returncode == 2, result.stderr
    assert result.stderr == "python -m components: cannot write standard output: No space left on device\n"


# --------------------------------------------------------------------------
# One table of exit codes.


def _words(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("argv", [
    pytest.param(["plan", "/nonexistent/Pulumi.x.yaml"], id="plan"),
    pytest.param(["render", "/nonexistent/Pulumi.x.yaml"], id="render"),
    pytest.param(["status", "/nonexistent/Pulumi.x.yaml"], id="status"),
    pytest.param(["top", "/nonexistent/Pulumi.x.yaml"], id="top"),
    pytest.param(["export", "/nonexistent/Pulumi.x.yaml"], id="export"),
    pytest.param(["diff", "scene1-case1", "/nonexistent/Pulumi.x.yaml"], id="diff"),
    pytest.param(["stacks", "extra"], id="stacks"),
    pytest.param(["import-tfjob", "tfjob.yaml"], id="import-tfjob without --stack"),
    pytest.param(["top", "scene1-case1", "--watch", "-1"], id="top --watch -1"),
    pytest.param(["tensorboard", "scene1-case1", "--port", "²"], id="tensorboard --port of a digit int() refuses"),
    pytest.param(["tensorboard", "/nonexistent/Pulumi.x.yaml"], id="tensorboard"),
    pytest.param(["tensorboard", "scene1-case1"], id="tensorboard of a stack without it"),
    pytest.param(["tensorboard", "scene1-case1", "--port", "70000"], id="tensorboard --port 70000"),
    pytest.param(["logs", "/nonexistent/Pulumi.x.yaml"], id="logs"),
    pytest.param(["logs", "scene1-case1", "ps-9"], id="logs of a task the stack has not"),
    pytest.param(["logs", "scene1-case1", "worker-0", "--kubeconfig", "/nonexistent/kubeconfig"],
                 id="logs with a kubeconfig that is not there"),
    pytest.param(["no-such-command"], id="an unknown command"),
])
def test_every_subcommand_exits_2_for_bad_input_or_usage(argv, capsys):
    try:
        code = main(argv)
    except SystemExit as exit:  # argparse's usage errors
        code = exit.code
    assert code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.strip()
    assert " value: " not in err, "argparse's words for a converter's crash name the converter, not the flag"
    if argv[0] != "stacks" and "/nonexistent/Pulumi.x.yaml" in argv:
        assert err.strip() == "stack file '/nonexistent/Pulumi.x.yaml': no such file"


@pytest.mark.parametrize("seconds", ["nan", "inf", "-inf", "0", "-1", "soon"])
def test_a_number_of_seconds_is_finite_and_above_0(seconds, capsys):
    with pytest.raises(SystemExit) as exited:
        main(["top", "scene1-case1", f"--watch={seconds}"])
    assert exited.value.code == 2
    assert f"argument --watch: must be a number of seconds above 0 (got '{seconds}')" in capsys.readouterr().err


@pytest.mark.parametrize("seconds", ["3600.5", "1e23"])
def test_top_refuses_to_wait_more_than_an_hour_between_views(seconds, capsys):
    """1e23 s lay past the platform's clock: the first view, then a traceback."""
    with pytest.raises(SystemExit) as exited:
        main(["top", "scene1-case1", "--watch", seconds])
    assert exited.value.code == 2
    assert f"argument --watch: must be at most 3600 seconds, an hour (got '{seconds}')" in capsys.readouterr().err


@pytest.mark.parametrize("seconds", ["1e-9", "0.001", "0.999"])
def test_top_refuses_to_refresh_faster_than_once_a_second(seconds, capsys):
    """A near-zero interval would ask the API server without pause for figures that change every 10-15 s."""
    with pytest.raises(SystemExit) as exited:
        main(["top", "scene1-case1", "--watch", seconds])
    assert exited.value.code == 2
    assert f"argument --watch: must be at least 1 second (got '{seconds}')" in capsys.readouterr().err


def test_top_takes_a_watch_of_one_second(monkeypatch):
    import components.live.top as top

    watched = []
    def cluster_top(experiment, kubeconfig, context, every_s, *rest, **keywords) -> int:
        watched.append(every_s)
        return 0

    monkeypatch.setattr(top, "cluster_top", cluster_top)
    assert main(["top", "scene1-case1", "--watch", "1"]) == 0
    assert watched == [1.0]


def test_help_lists_the_exit_codes(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    shown = _words(capsys.readouterr().out)
    assert "exit codes:" in shown
    for code, meaning in EXIT_CODES:
        assert _words(f"{code} {meaning}") in shown


def test_the_docs_hold_the_same_exit_codes_as_help():
    page = (PROJECT_ROOT / "docs" / "commands.md").read_text(encoding="utf-8")
    rows = {int(code): _words(meaning) for code, meaning in re.findall(r"^\| `?(\d+)`? \| (.+?) \|$", page, re.M)}
    assert rows == {code: _words(meaning) for code, meaning in EXIT_CODES}


def test_the_docs_have_a_line_for_every_subcommand():
    page = (PROJECT_ROOT / "docs" / "commands.md").read_text(encoding="utf-8")
    from components.cli.main import _parser

    subcommands = next(action for action in _parser()._actions if action.dest == "command").choices
    missing = [name for name in subcommands if f"`python -m components {name}" not in page]
    assert missing == []


def test_status_help_says_why_it_exits_1(capsys):
    with pytest.raises(SystemExit):
        main(["status", "--help"])
    shown = _words(capsys.readouterr().out)
    assert "1 the experiment failed, or a task is not running as planned" in shown
    assert "2 the stack or the kubeconfig cannot be read" in shown
