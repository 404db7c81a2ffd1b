"""Which of a stack's values are secrets, and the one place a secret may be: `tfk8s:program.env`.

A value set with `pulumi config set --secret` reaches tfk8s in one of two forms:
- read from the stack file without the engine (`plan`, `render`, `diff`, `export`), it is still
  encrypted: a `{secure: v1:...}` leaf. Its name is known, its value is not: it reads as
  `SECRET_PLACEHOLDER`, and its top-level key is taken as secret as the engine takes it.
- in the Pulumi program, the engine has decrypted it and says only which top-level keys hold a
  secret (it marks a whole object, such as `tfk8s:program`, secret when any leaf of it is). Every
  plain `env` value of a secret `tfk8s:program` is then kept as a secret, since which one was set
  with `--secret` cannot be told apart.

Either way an `env` secret is carried by a Kubernetes Secret the experiment owns
(components/objects/secrets.py), never as a value in a pod spec. A secret anywhere else (an
image, a command, a pool) would end up in plain text in an object, so it is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Collection, Mapping

from .models import CONFIG_NAMESPACE, StackConfigError

# What a secret reads as wherever its value is not known or must not be shown.
SECRET_PLACEHOLDER = "[secret]"
PROGRAM_KEY = f"{CONFIG_NAMESPACE}:program"
HOW_TO_PASS = (
    "only tfk8s:program.env values may be secrets (they reach the pods through a Kubernetes Secret): "
    "`pulumi config set --secret --path 'tfk8s:program.env.NAME' <value>`, then use $(NAME)"
)


@dataclass(frozen=True)
class StackSecrets:
    # The stack's values with every encrypted leaf read as SECRET_PLACEHOLDER.
    values: dict[str, Any]
    # The `tfk8s:program.env` names whose values are secrets.
    env_names: frozenset[str]


def split_secrets(stack: str, values: Mapping[str, Any], secret_keys: Collection[str] = ()) -> StackSecrets:
    """The stack's values and its secret env names; StackConfigError naming each secret
    anywhere else. `secret_keys` are the top-level keys the engine holds as secrets."""
    errors: list[str] = []
    names: set[str] = set()
    plain: dict[str, Any] = {}
    for key, value in values.items():
        if not key.startswith(f"{CONFIG_NAMESPACE}:"):
            plain[key] = value  # another package's (kubernetes:kubeconfig...): its own business
            continue
        errors_before = len(errors)
        plain[key] = _unwrap(key, value, names, errors)
        encrypted = plain[key] != value
        # The engine's view, whichever form the secret came in: the whole key is secret.
        if key in secret_keys or encrypted:
            if key == PROGRAM_KEY:
                names.update(_plain_env_names(value))
            elif len(errors) == errors_before:
                errors.append(f"{key}: holds a value set with --secret; {HOW_TO_PASS}")
    if errors:
        raise StackConfigError.listing(stack, errors)
    return StackSecrets(plain, frozenset(names))


def _unwrap(path: str, value: Any, names: set[str], errors: list[str]) -> Any:
    """`value` with each `{secure: ...}` leaf under program.env read as the placeholder."""
    if _is_encrypted(value):
        env_prefix = f"{PROGRAM_KEY}.env."
        name = path[len(env_prefix):] if path.startswith(env_prefix) else ""
        if name and "." not in name and "[" not in name:
            names.add(name)
            return SECRET_PLACEHOLDER
        errors.append(f"{path}: is a secret; {HOW_TO_PASS}")
        return SECRET_PLACEHOLDER
    if isinstance(value, Mapping):
        return {key: _unwrap(f"{path}.{key}", item, names, errors) for key, item in value.items()}
    if isinstance(value, list):
        return [_unwrap(f"{path}[{index}]", item, names, errors) for index, item in enumerate(value)]
    return value


def _is_encrypted(value: Any) -> bool:
    """A stack file's `secure:` leaf, as `pulumi config set --secret` writes it."""
    return isinstance(value, Mapping) and set(value) == {"secure"} and isinstance(value["secure"], str)


def _plain_env_names(program: Any) -> set[str]:
    env = program.get("env") if isinstance(program, Mapping) else None
    if not isinstance(env, Mapping):
        return set()
    return {str(name) for name, value in env.items() if isinstance(value, str)}
