"""One rule for a key with nothing after it (docs/stack-files.md, "Values as written"): in a stack file,
refused for every key at every depth; a top-level key that arrives empty from any source (the engine's
config holds what the file wrote) refused alike; Python's None inside a mapping given to TFExperiment
unset, as before."""

from __future__ import annotations

import pytest

from components.spec.loading import load_stack_config
from components.spec.models import StackConfigError


def values(**top: object) -> dict[str, object]:
    return {
        "tfk8s:nodePools": [{"name": "servers", "nodes": ["srv-00"]}],
        "tfk8s:cluster": {
            "placement": "colocated",
            "ps": {"replicas": 1, "pool": "servers", "memory": "1Gi"},
            "workers": {"replicas": 2, "pool": "servers"},
        },
        **{f"tfk8s:{key}": value for key, value in top.items()},
    }


@pytest.mark.parametrize(
    "key, said",
    [
        pytest.param("program", "tfk8s:program: empty; give the program's keys", id="program"),
        pytest.param("logs", "tfk8s:logs: empty; write {} for the defaults of its keys", id="logs"),
        pytest.param("tensorboard", "tfk8s:tensorboard: empty; give its keys (docs/stack-reference.md)", id="tensorboard"),
        pytest.param("trainer", "tfk8s:trainer: empty; write {} for the defaults of its keys", id="trainer"),
    ],
)
def test_a_top_level_key_that_arrives_empty_is_refused_whatever_its_source(key, said):
    with pytest.raises(StackConfigError) as refused:
        load_stack_config("empty", values(**{key: None}))
    assert f"  - {said}" in str(refused.value)


def test_pythons_none_inside_a_mapping_is_unset_where_a_key_may_be():
    given = values(trainer={})
    given["tfk8s:cluster"] = {**given["tfk8s:cluster"], "egress": None, "queue": None}  # type: ignore[dict-item]
    config = load_stack_config("unset", given)
    assert config.cluster.egress is None and config.cluster.queue is None
