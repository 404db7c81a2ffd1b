"""The URNs of the stacks tfk8s ships hold steady: Pulumi knows a resource by its URN (the stack,
the project, its parents' and its own type token, its name), so a changed URN would replace a
user's resources, the namespace and its checkpoints among them, on their next `pulumi up`.

urns.json holds the URNs users of the shipped stacks hold, as tfk8s's first releases made them.
A resource whose URN has changed since must reach its earlier URN through an alias: a component
whose token changed to the one scheme (components/resources/tokens.py) answers to its earlier
token, and the engine carries that alias to its children (tests/cluster/test_engine.py shows it
on a real engine). A change that means to add or remove resources regenerates the snapshot, in the earlier
form: `python -m tests.resources.test_urns`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Mapping, Optional

import pytest

from components.resources.node_pool import NodePool
from components.resources.tf_cluster import TFCluster
from components.resources.tf_experiment import TFExperiment
from components.resources.tokens import EARLIER_TOKENS
from components.spec.stack_files import PROJECT_ROOT, read_stack_values
from tests.harness import RecordingMonitor, reset_pulumi, run_program
from tests.runs import EXAMPLE_STACKS

SNAPSHOT = Path(__file__).with_name("urns.json")


def registered(stack: str, values: Optional[dict] = None, **options) -> tuple[list[str], dict[str, str]]:
    """The stack's URNs, and each component type that answers to an earlier type through an alias."""
    monitor = RecordingMonitor()
    run = run_program(
        *((stack, values) if values is not None else read_stack_values(stack)), monitor=monitor, **options
    )
    earlier = {
        request.type: alias.spec.type
        for request, _ in monitor.registrations
        for alias in request.aliases
        if alias.HasField("spec") and alias.spec.type
    }
    return sorted(resource.urn for resource in run.resources), earlier


def earlier_form(urn: str, earlier: Mapping[str, str]) -> str:
    """The URN a resource had where its type, or a parent's, had the earlier token it aliases."""
    stack, project, qualified_type, name = urn.split("::", 3)
    types = [earlier.get(token, token) for token in qualified_type.split("$")]
    return "::".join((stack, project, "$".join(types), name))


@pytest.mark.parametrize("stack", EXAMPLE_STACKS)
def test_a_shipped_stacks_urns_are_the_ones_its_users_hold(stack):
    held = json.loads(SNAPSHOT.read_text())[stack]
    urns, earlier = registered(stack)
    reached = sorted(earlier_form(urn, earlier) for urn in urns)
    gone, new = sorted(set(held) - set(reached)), sorted(set(reached) - set(held))
    assert (gone, new) == ([], []), (
        f"stack {stack}: {len(gone)} URNs would be replaced by {len(new)} new ones (first gone: "
        f"{gone[:1]}, first new: {new[:1]}); give the old URNs as aliases, then regenerate {SNAPSHOT.name}"
    )


def test_every_component_answers_to_its_earlier_token():
    """The stack program registers NodePools and a TFCluster; a platform's program TFExperiments."""
    platform_program = PROJECT_ROOT / "docs" / "examples" / "platform-program" / "__main__.py"
    urns, earlier = registered("scene1-case2")
    platform_urns, platform_earlier = registered("dev", {}, program=platform_program)
    assert {**earlier, **platform_earlier} == EARLIER_TOKENS
    # One scheme: `tfk8s:<module>:<Type>`, the module that defines the component.
    scheme = {
        f"tfk8s:{cls.__module__.rsplit('.', 1)[-1]}:{cls.__name__}" for cls in (TFExperiment, TFCluster, NodePool)
    }
    types = {token for urn in urns + platform_urns for token in urn.split("::")[2].split("$")}
    assert {token for token in types if token.startswith("tfk8s:")} == scheme


if __name__ == "__main__":
    snapshot = {}
    for name in EXAMPLE_STACKS:
        urns, earlier = registered(name)
        snapshot[name] = sorted(earlier_form(urn, earlier) for urn in urns)
        reset_pulumi()
    SNAPSHOT.write_text(json.dumps(snapshot, indent=1, sort_keys=True) + "\n")
    print(f"wrote {SNAPSHOT} ({sum(map(len, snapshot.values()))} URNs of {len(snapshot)} stacks)", file=sys.stderr)
