"""`$(NAME)` as the kubelet expands it in command, args and env (cases from Kubernetes' own
expansion tests: third_party/forked/golang/expansion)."""

from __future__ import annotations

import pytest

from trainer.kubelet_expansion import escaped, expand, references

VARIABLES = {"VAR_A": "A", "VAR_B": "B", "VAR_C": "C", "VAR_EMPTY": "", "dotted.name-x": "D"}


@pytest.mark.parametrize("text, expected, unresolved", [
    ("$(VAR_A)", "A", []),
    ("___$(VAR_B)___", "___B___", []),
    ("$(VAR_A)-1", "A-1", []),
    ("$(VAR_A)_$(VAR_B)_$(VAR_C)", "A_B_C", []),
    ("$$(VAR_B)_$(VAR_A)", "$(VAR_B)_A", []),
    ("$$(VAR_A)_$$(VAR_B)", "$(VAR_A)_$(VAR_B)", []),
    ("f000-$$VAR_A", "f000-$VAR_A", []),
    ("foo\\$(VAR_C)bar", "foo\\Cbar", []),
    ("foo\\\\$(VAR_C)bar", "foo\\\\Cbar", []),
    ("$(VAR_EMPTY)", "", []),
    ("$$$(VAR_A)", "$A", []),
    ("$(VAR_A)$", "A$", []),
    ("$VAR_A", "$VAR_A", []),
    ("$(VAR_A", "$(VAR_A", []),  # unclosed: literal text
    ("$$(VAR_A", "$(VAR_A", []),
    ("$", "$", []),
    ("$$", "$", []),
    ("$(dotted.name-x)", "D", []),  # a name is whatever stands before the first `)`
    ("$(UNKNOWN)", "$(UNKNOWN)", ["UNKNOWN"]),
    ("$()", "$()", [""]),
    ("x$(VAR_A)y$(NOPE)z$$", "xAy$(NOPE)z$", ["NOPE"]),
])
def test_expand_as_the_kubelet_does(text, expected, unresolved):
    assert expand(text, VARIABLES) == (expected, unresolved)


def test_references_are_the_names_the_kubelet_would_look_up():
    assert references("$$(SKIPPED) $(JOB_NAME)-$(TASK_INDEX) $(unclosed") == ["JOB_NAME", "TASK_INDEX"]


def test_unknown_names_are_escaped_to_the_literal_text_the_kubelet_would_pass_on():
    text, unknown = escaped("--job $(JOB_NAME) --home $(HOME_DIR) $$(KEPT)", {"JOB_NAME"})
    assert (text, unknown) == ("--job $(JOB_NAME) --home $$(HOME_DIR) $$(KEPT)", ["HOME_DIR"])
    assert expand(text, {"JOB_NAME": "worker", "HOME_DIR": "/x"}) == ("--job worker --home $(HOME_DIR) $(KEPT)", [])
