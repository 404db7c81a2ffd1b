"""The URNs of the stacks tfk8s ships hold steady: Pulumi knows a resource by its URN (the stack,
the project, its parents' and its own type token, its name), so a changed URN would replace a
user's resources, the namespace and its checkpoints among them, on their next `pulumi up`.

A change that means to rename a type or a resource gives the old URN as an alias, and then
regenerates the snapshot: `python -m tests.resources.test_urns`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.runs import EXAMPLE_STACKS, program_run

SNAPSHOT = Path(__file__).with_name("urns.json")


def urns(stack: str) -> list[str]:
    return sorted(resource.urn for resource in program_run(stack).resources)


@pytest.mark.parametrize("stack", EXAMPLE_STACKS)
def test_a_shipped_stacks_urns_are_the_ones_its_users_hold(stack):
    held = json.loads(SNAPSHOT.read_text())[stack]
    now = urns(stack)
    gone, new = sorted(set(held) - set(now)), sorted(set(now) - set(held))
    assert (gone, new) == ([], []), (
        f"stack {stack}: {len(gone)} URNs would be replaced by {len(new)} new ones (first gone: "
        f"{gone[:1]}, first new: {new[:1]}); give the old URNs as aliases, then regenerate {SNAPSHOT.name}"
    )


if __name__ == "__main__":
    from tests.harness import reset_pulumi

    snapshot = {}
    for name in EXAMPLE_STACKS:
        snapshot[name] = urns(name)
        reset_pulumi()
    SNAPSHOT.write_text(json.dumps(snapshot, indent=1, sort_keys=True) + "\n")
    print(f"wrote {SNAPSHOT} ({sum(map(len, snapshot.values()))} URNs of {len(snapshot)} stacks)", file=sys.stderr)
