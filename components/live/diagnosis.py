"""One diagnosis of a running experiment, as `diagnose` and the report's cluster runs make it: the
window sampled (diagnose.py), the finding (components/insight/), and the next stack proposed as the
stack file with the finding's changes made, checked as `plan` checks a stack file.

`diagnose` (cli/diagnose_command.py) prints and writes what this finds; `python -m trainer.report
--cluster` keeps its JSON. One code path, so that both say the same of the same window.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from ..insight import bottleneck
from ..objects.loading import load_experiment_values
from ..plan.experiment import Experiment
from ..plan.trainer_bundle import load_trainer_bundle
from ..spec.models import StackConfigError
from ..spec.stack_edit import SharedValuesError, StackEditError, apply_changes, stack_diff
from ..spec.stack_files import PROJECT_ROOT
from ..spec.strict_yaml import load_yaml, plain_values
from .diagnose import Sampled, sample_experiment
from .diagnose_figures import experiment_shape
from .diagnose_view import NextStack


@dataclass(frozen=True)
class Diagnosis:
    sampled: Sampled
    finding: Optional[bottleneck.Finding]  # None: nothing was measured (`nothing_measured` says why)
    next_stack: NextStack
    new_text: Optional[str] = None  # the next stack file, where the finding changes keys plan accepts


def diagnose_running(api: Any, experiment: Experiment, stack_text: str, seconds: float, next_name: str) -> Diagnosis:
    """Sample the experiment for `seconds`, judge the window, and propose the stack `next_name`:
    `stack_text` (the stack file diagnosed) with the finding's changes made."""
    sampled = sample_experiment(api, experiment, seconds)
    if sampled.measured is None:
        return Diagnosis(sampled, None, NextStack(next_name))
    finding = bottleneck.diagnose(sampled.measured, experiment_shape(experiment, stack_values(stack_text)))
    if not finding.changes:
        return Diagnosis(sampled, finding, NextStack(next_name))
    try:
        new_text = apply_changes(stack_text, finding.changes)
        check_stack(next_name, new_text)
    except SharedValuesError as error:
        return Diagnosis(sampled, finding, NextStack(next_name, refused=f"the next stack is not written: {error}"))
    except (StackEditError, StackConfigError) as error:
        what = "a stack that plan refuses" if isinstance(error, StackConfigError) else "a change it cannot write"
        refused = f"the rules proposed {what} (a fault of tfk8s's rules: please report it): {error}"
        return Diagnosis(sampled, finding, NextStack(next_name, refused=refused))
    diff = stack_diff(stack_text, new_text, experiment.stack, next_name)
    return Diagnosis(sampled, finding, NextStack(next_name, diff), new_text)


def nothing_measured(sampled: Sampled) -> str:
    """Why a window gave the rules nothing to judge."""
    window = sampled.window
    if not window.samples:
        return f"the experiment ended ({window.ended}) before a sample: nothing to diagnose"
    why = (
        "; ".join(window.notes)
        or "the cluster has no CPU figure of any task yet (a pod's first comes after about 15 s)"
    )
    ended = f"; the experiment ended ({window.ended}) after {window.seconds:.0f} s" if window.ended else ""
    return f"no task had a CPU figure in {len(window.samples)} samples{ended}: {why}; nothing to diagnose"


def check_stack(name: str, text: str) -> None:
    """The stack file's text as `plan` checks it; StackConfigError naming what it refuses."""
    document = load_yaml(text)
    config = document.get("config") if isinstance(document, dict) else None
    if not isinstance(config, dict):
        raise StackConfigError(f"stack '{name}': no 'config:' mapping")
    load_experiment_values(name, config, load_trainer_bundle(PROJECT_ROOT))


def stack_values(text: str) -> dict[str, Any]:
    """The `config:` values of a stack file plan has read (so one with that mapping), as written."""
    values: dict[str, Any] = plain_values(load_yaml(text))["config"]
    return values
