"""`make pulumi STACK=<stack> ARGS='...'`: the built Pulumi CLI on the local cluster's backend.

For the commands that do not run the program (there is no Python language host here, so
`make preview|up|destroy` run it inline): above all `config set --secret`, which encrypts a value
into the project's stack file exactly as a user's own `pulumi config set --secret` does, with the
stack's passphrase. `make up` then reads it from there (tools/engine/workspace.py).

The stack is created in the backend first if it is new (`pulumi stack select --create`), since
the CLI keeps a stack's secrets provider there. A passphrase is required: a secret encrypted with
an empty one protects nothing.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path
from typing import Sequence

import yaml

from components.spec.stack_files import PROJECT_ROOT

from .workspace import (
    DEFAULT_DIRS,
    PASSPHRASE_VARIABLES,
    TOOLS_ROOT,
    EngineDirs,
    EngineError,
    passphrase_env,
    passphrase_given,
    stack_document,
)

CLI = TOOLS_ROOT / "bin" / "pulumi"


# What the CLI can do here without running the program (there is no Python language host).
COMMANDS = ("config", "stack", "state")


def cli_env(dirs: EngineDirs) -> dict[str, str]:
    """The CLI's environment: the engine's own home and file backend, the user's passphrase."""
    if not passphrase_given():
        raise EngineError(
            "set PULUMI_CONFIG_PASSPHRASE (or PULUMI_CONFIG_PASSPHRASE_FILE): it encrypts the stack's secrets, "
            "and `make up` needs the same one (docs/secrets.md)"
        )
    dirs.state.mkdir(parents=True, exist_ok=True)
    dirs.home.mkdir(parents=True, exist_ok=True)
    return {
        **{name: value for name, value in os.environ.items() if name not in PASSPHRASE_VARIABLES},
        **passphrase_env(),
        "PULUMI_HOME": str(dirs.home.resolve()),
        "PULUMI_BACKEND_URL": dirs.state.resolve().as_uri(),
        "PULUMI_SKIP_UPDATE_CHECK": "true",
        "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
    }


def run_pulumi(stack: str, args: Sequence[str], dirs: EngineDirs, project: Path = PROJECT_ROOT) -> int:
    """`pulumi ARGS` for `stack` in `project` (its Pulumi.yaml and stacks/); the CLI's exit status.
    Its output and prompts pass through: a secret left off the command line is read from stdin."""
    if not args or args[0] not in COMMANDS:
        raise EngineError(
            f"make pulumi runs the CLI's {', '.join(COMMANDS)} commands; `make preview|up|destroy STACK={stack}` "
            "run the program"
        )
    if not CLI.exists():
        raise EngineError(f"{CLI} is missing: run `make toolchain` first")
    if not (project / "Pulumi.yaml").exists():
        raise EngineError(f"{project} has no Pulumi.yaml")
    if args[0] == "config":
        refuse_a_new_salt_under_old_state(stack, project, dirs)
    env = cli_env(dirs)
    selected = subprocess.run(
        [str(CLI), "stack", "select", "--create", "--stack", stack, "--non-interactive"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
    )
    if selected.returncode != 0:
        raise EngineError(
            f"stack '{stack}' could not be selected: {selected.stderr.strip() or selected.stdout.strip()}"
        )
    return subprocess.run([str(CLI), *args], cwd=project, env=env).returncode


def refuse_a_new_salt_under_old_state(stack: str, project: Path, dirs: EngineDirs) -> None:
    """A stack that went up before any secret was set has its state encrypted under the engine's
    own salt and an empty passphrase; the first secret set now would come with a new salt and
    passphrase, under which that state no longer decrypts. Say so before the stack file changes."""
    stack_file = project / "stacks" / f"Pulumi.{stack}.yaml"
    if not stack_file.exists() or "encryptionsalt" in stack_document(str(stack_file)):
        return
    name = yaml.safe_load((project / "Pulumi.yaml").read_text(encoding="utf-8"))["name"]
    checkpoint = dirs.state / ".pulumi" / "stacks" / name / f"{stack}.json"
    if checkpoint.exists():
        raise EngineError(
            f"stack '{stack}' has gone up before it had secrets, its state under an empty passphrase: run "
            f"`make destroy STACK={stack}` and `make pulumi STACK={stack} ARGS='stack rm --yes'`, then set the secret"
        )


def main(argv: Sequence[str]) -> int:
    """`python -m tools.engine pulumi STACK [--state DIR] [--project DIR] -- ARGS...`"""
    options, args = (
        (list(argv), []) if "--" not in argv else (list(argv[: argv.index("--")]), list(argv[argv.index("--") + 1 :]))
    )
    parser = argparse.ArgumentParser(prog="python -m tools.engine pulumi", description=__doc__)
    parser.add_argument("stack", help="a stack name: stacks/Pulumi.STACK.yaml of the project")
    parser.add_argument(
        "--state", type=Path, default=DEFAULT_DIRS.root, help="the engine's state and home (default: %(default)s)"
    )
    parser.add_argument("--project", type=Path, default=PROJECT_ROOT, help="the project folder (default: %(default)s)")
    given = parser.parse_args(options)
    if not args:
        print("usage: make pulumi STACK=<stack> ARGS='<pulumi command and flags>'", file=sys.stderr)
        return 2
    try:
        return run_pulumi(given.stack, args, EngineDirs(given.state), given.project)
    except EngineError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
