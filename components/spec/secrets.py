"""Which of a stack's values are secrets, and the one place a secret may be: `tfk8s:program.env`.

`pulumi config set --secret --path 'tfk8s:program.env.TOKEN'` writes the value into the stack
file encrypted, as a `{secure: v1:...}` leaf. tfk8s reads a stack in one of two forms:
- the stack file itself (`plan`, `render`, `diff`, `export`): each encrypted leaf is known by
  its path, its value is not: it reads as `SECRET_PLACEHOLDER`;
- the engine's config (the Pulumi program): the values are decrypted, and the engine says only
  which top-level keys hold a secret somewhere. The program then takes the paths from the stack
  file when it can read it (`encrypted_paths`), and otherwise treats every plain `env` value of a
  secret `tfk8s:program` as a secret (it cannot tell which one was set with `--secret`).

An `env` secret is carried by a Kubernetes Secret the experiment owns
(components/objects/manifests.py `program_secret`), never as a value in a pod spec; where the values
are known, they are held to what one Secret takes (limit_checks.program_secret_problems). A secret
anywhere else (an image, a command, an argument, a pool) would end up in plain text in an
object, so it is refused, naming its path and never its value.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Collection, Mapping, Optional

from .limit_checks import program_secret_problems
from .models import CONFIG_NAMESPACE, StackConfigError
from .program import env_reference_problems

# What a secret reads as wherever its value is not known or must not be shown.
SECRET_PLACEHOLDER = "[secret]"
PROGRAM_KEY = f"{CONFIG_NAMESPACE}:program"
ENV_PREFIX = f"{PROGRAM_KEY}.env."
HOW_TO_PASS = (
    "only tfk8s:program.env values may be secrets (they reach the pods through a Kubernetes Secret): "
    "`pulumi config set --secret --path 'tfk8s:program.env.NAME'`, then use $(NAME)"
)


@dataclass(frozen=True)
class StackSecrets:
    # The stack's values: each encrypted leaf read as SECRET_PLACEHOLDER, each secret as text.
    values: dict[str, Any]
    # The `tfk8s:program.env` names whose values are secrets.
    env_names: frozenset[str]


def is_encrypted(value: Any) -> bool:
    """A stack file's `secure:` leaf, as `pulumi config set --secret` writes it."""
    return isinstance(value, Mapping) and set(value) == {"secure"} and isinstance(value["secure"], str)


def encrypted_paths(values: Mapping[str, Any]) -> set[str]:
    """The paths (`tfk8s:program.env.TOKEN`, `tfk8s:cluster.image`) of a stack file's encrypted leaves."""
    found: set[str] = set()

    def walk(path: str, value: Any) -> None:
        if is_encrypted(value):
            found.add(path)
        elif isinstance(value, Mapping):
            for key, item in value.items():
                walk(f"{path}.{key}", item)
        elif isinstance(value, list):
            for index, item in enumerate(value):
                walk(f"{path}[{index}]", item)

    for key, value in values.items():
        walk(key, value)
    return found


def split_secrets(
    stack: str,
    values: Mapping[str, Any],
    secret_keys: Collection[str] = (),
    known_encrypted: Optional[Collection[str]] = None,
) -> StackSecrets:
    """The stack's values and its secret env names; StackConfigError naming each secret anywhere else.

    `secret_keys`: the top-level keys the engine holds as secrets; `known_encrypted`: the paths of
    the stack file's encrypted leaves, when the program could read the file.
    """
    paths = encrypted_paths(values) | set(known_encrypted or ())
    errors = [f"{path}: is a secret; {HOW_TO_PASS}" for path in sorted(paths) if _env_name(path) is None]
    names = {name for name in map(_env_name, paths) if name is not None}
    for key in secret_keys:
        if not key.startswith(f"{CONFIG_NAMESPACE}:") or any(_under(path, key) for path in paths):
            continue
        # Secret, but where inside it the stack file could not say.
        if key == PROGRAM_KEY:
            names.update(_plain_env_names(values.get(key)))
        else:
            errors.append(f"{key}: holds a value set with --secret; {HOW_TO_PASS}")
    plain = _with_secrets_as_text(values, names)
    errors += program_secret_problems(_secret_env(plain, names))
    # Here, where the secret values are known, since a value set with --secret is never expanded.
    program = plain.get(PROGRAM_KEY)
    env = program.get("env") if isinstance(program, Mapping) else None
    errors += [f"{ENV_PREFIX}{name}: {why}" for name, why in env_reference_problems(env, names)]
    if errors:
        raise StackConfigError.listing(stack, errors)
    return StackSecrets(plain, frozenset(names))


def _secret_env(values: Mapping[str, Any], names: Collection[str]) -> dict[str, str]:
    """The secret `env` values, as the program's Secret holds them."""
    program = values.get(PROGRAM_KEY)
    env = program.get("env") if isinstance(program, Mapping) else None
    if not isinstance(env, Mapping):
        return {}
    return {name: env[name] for name in names if isinstance(env.get(name), str)}


def _env_name(path: str) -> Optional[str]:
    name = path[len(ENV_PREFIX) :] if path.startswith(ENV_PREFIX) else ""
    return name if name and "." not in name and "[" not in name else None


def _under(path: str, key: str) -> bool:
    return path == key or path.startswith((f"{key}.", f"{key}["))


def _plain_env_names(program: Any) -> set[str]:
    env = program.get("env") if isinstance(program, Mapping) else None
    if not isinstance(env, Mapping):
        return set()
    return {str(name) for name, value in env.items() if not isinstance(value, Mapping)}


def _with_secrets_as_text(values: Mapping[str, Any], names: set[str]) -> dict[str, Any]:
    """`values` with each encrypted leaf as the placeholder, and each secret env value as text
    (an environment variable is text; a secret typed as a number is never echoed in an error)."""

    def unwrap(value: Any) -> Any:
        if is_encrypted(value):
            return SECRET_PLACEHOLDER
        if isinstance(value, Mapping):
            return {key: unwrap(item) for key, item in value.items()}
        if isinstance(value, list):
            return [unwrap(item) for item in value]
        return value

    plain = {key: unwrap(value) for key, value in values.items()}
    program = plain.get(PROGRAM_KEY)
    env = program.get("env") if isinstance(program, dict) else None
    if isinstance(env, dict):
        for name in names & set(env):
            value = env[name]
            env[name] = value if isinstance(value, str) else SECRET_PLACEHOLDER if value is None else str(value)
    return plain
