"""An experiment from a stack: validated, planned once, and refused when its objects could not exist."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Collection, Mapping, Optional

from ..plan.experiment import Experiment, tf_config_size_errors
from ..plan.object_names import shared_name_error
from ..plan.program_source import ProgramSourceError, load_program_source
from ..plan.trainer_bundle import TrainerBundle, load_trainer_bundle
from ..spec.loading import load_stack_config
from ..spec.models import StackConfigError
from ..spec.secrets import split_secrets
from ..spec.stack_files import PROJECT_ROOT, read_stack_values


def load_experiment_values(
    stack: str,
    values: Mapping[str, Any],
    bundle: TrainerBundle,
    project_root: Path = PROJECT_ROOT,
    secret_keys: Collection[str] = (),
    known_encrypted: Optional[Collection[str]] = None,
) -> Experiment:
    """Validate a stack's values, then what only its plan and files can show; the experiment,
    planned once. `secret_keys` and `known_encrypted`: where its secrets are
    (components/spec/secrets.py).

    The config checks (components/spec) need no plan; the checks here do,
    and reuse the plan, task groups and TF cluster the experiment then serves.
    """
    secrets = split_secrets(stack, values, secret_keys, known_encrypted)
    config = load_stack_config(stack, secrets.values, secrets.env_names)
    name_error = shared_name_error(config)
    if name_error is not None:
        raise StackConfigError.listing(stack, [name_error])
    source = None
    if config.program is not None and config.program.source is not None:
        try:
            source = load_program_source(project_root, config.program.source)
        except ProgramSourceError as error:
            raise StackConfigError.listing(stack, [str(error)]) from None
    experiment = Experiment(config, bundle, source, secrets.env_names)
    errors = tf_config_size_errors(experiment)
    if errors:
        raise StackConfigError.listing(stack, errors)
    return experiment


def load_experiment(stack_or_path: str) -> Experiment:
    """The stack file's experiment, derived as the Pulumi program derives it."""
    stack, values = read_stack_values(stack_or_path)
    return load_experiment_values(stack, values, load_trainer_bundle(PROJECT_ROOT))
