"""docs/stack-reference.md is generated from the models (`make docs`) and kept current by this test."""

from __future__ import annotations

from typing import Any, Iterator

import pytest

from components.spec.reference import REFERENCE_FILE, reference_markdown, stack_keys
from components.spec.stack_files import PROJECT_ROOT, read_stack_values
from tests.runs import SHIPPED_STACKS


def test_every_key_has_a_description():
    undescribed = [doc.key for doc in stack_keys() if not doc.meaning]
    assert undescribed == [], f"fields without a description (give each a Field description): {undescribed}"


def test_the_reference_in_docs_is_the_generated_one():
    written = (PROJECT_ROOT / REFERENCE_FILE).read_text(encoding="utf-8").splitlines()
    generated = reference_markdown().splitlines()
    stale = [line for line in generated if line not in written] + [line for line in written if line not in generated]
    keys = sorted({line.split("`")[1] for line in stale if line.startswith("| `")})
    assert not stale, f"{REFERENCE_FILE} is stale at {', '.join(keys) or 'its header'}: run `make docs`"


def used_keys(value: Any, prefix: str, maps: set[str]) -> Iterator[str]:
    """The keys a stack file sets, spelled as the reference spells them (`[]` for list items); the
    keys inside a map of strings (a selector's labels) are the user's, not the stack file's."""
    if isinstance(value, dict) and prefix not in maps:
        for key, item in value.items():
            path = f"{prefix}.{key}" if prefix else key
            yield path
            yield from used_keys(item, path, maps)
    elif isinstance(value, list):
        for item in value:
            yield from used_keys(item, f"{prefix}[]", maps)


@pytest.mark.parametrize("stack", SHIPPED_STACKS)
def test_every_key_the_stacks_use_is_in_the_reference(stack):
    documented = {doc.key for doc in stack_keys()}
    maps = {doc.key for doc in stack_keys() if doc.type == "map of strings"}
    _, values = read_stack_values(stack)
    used = {key for key in used_keys(values, "", maps) if key.startswith("tfk8s:")}
    assert used - documented == set(), f"stack {stack} uses keys {REFERENCE_FILE} does not list"
