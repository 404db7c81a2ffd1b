"""Every problem of a stack file is listed at once (StackConfigError.listing): a value refused as written
(components/spec/as_written.py) hides no other problem of the mapping that holds it, nor of the stack;
what the models or the checks across keys say only of what YAML made of the refused value is left out."""

from __future__ import annotations

import pytest

from components.spec.loading import load_stack_config
from components.spec.models import StackConfigError
from components.spec.strict_yaml import load_yaml

REFUSED_CPU = "tfk8s:cluster.ps.cpu: 1:30, unquoted, is the base-60 number 90"
STATEFULSET_RULE = "tfk8s:cluster: startDeadline needs workload: jobset"


def listed(cluster: str, pools: str = "[{name: servers, nodes: [srv-00]}]") -> list[str]:
    """The problems `load_stack_config` lists for a stack file of these `tfk8s:cluster` lines."""
    text = f"tfk8s:nodePools: {pools}\ntfk8s:cluster:\n" + "".join(f"  {line}\n" for line in cluster.splitlines())
    with pytest.raises(StackConfigError) as refused:
        load_stack_config("at-once", load_yaml(text))
    return list(refused.value.problems)


def test_a_mappings_own_problem_is_listed_with_a_value_refused_in_it():
    problems = listed(
        "placement: colocated\nworkload: statefulset\nstartDeadline: 600\n"
        "ps: {replicas: 1, pool: servers, memory: 1Gi, cpu: 1:30}\nworkers: {replicas: 2, pool: servers}"
    )
    assert len(problems) == 2, problems
    assert problems[0].startswith(REFUSED_CPU) and problems[1].startswith(STATEFULSET_RULE), problems


def test_a_problem_across_keys_is_listed_with_a_value_refused_elsewhere():
    problems = listed(
        "placement: colocated\nps: {replicas: 1, pool: servers, memory: 1Gi, cpu: 1:30}\n"
        "workers: {replicas: 2, pool: gpus}"
    )
    assert len(problems) == 2, problems
    assert problems[0].startswith(REFUSED_CPU), problems
    assert problems[1].startswith("tfk8s:cluster.workers.pool: unknown pool 'gpus'"), problems


def test_a_required_keys_refused_value_hides_no_other_problem_of_its_mapping():
    """workers.replicas must be given: set aside, it is read as YAML 1.2 reads it (010 as 10)."""
    problems = listed(
        "placement: colocated\nworkload: statefulset\nstartDeadline: 600\n"
        "ps: {replicas: 1, pool: servers, memory: 1Gi}\nworkers: {replicas: 010, pool: servers}"
    )
    assert len(problems) == 2, problems
    assert problems[0].startswith("tfk8s:cluster.workers.replicas: 010, unquoted, is the octal number 8"), problems
    assert problems[1].startswith(STATEFULSET_RULE), problems


@pytest.mark.parametrize(
    "cluster, refusal",
    [
        pytest.param(
            "placement: colocated\nratio: '1:2'\nps: {replicas: 010, pool: servers}\n"
            "workers: {replicas: 4, pool: servers}",
            "tfk8s:cluster.ps.replicas: 010, unquoted,",
            id="ratio against the octal 8 PS: said of YAML's reading only",
        ),
        pytest.param(
            "placement: colocated\nratio: '1:2'\nps: {replicas: 2, pool: servers}\n"
            "workers: {replicas: 010, pool: servers}",
            "tfk8s:cluster.workers.replicas: 010, unquoted,",
            id="ratio against the octal 8 workers: said of YAML's reading only",
        ),
        pytest.param(
            "placement: colocated\nps:\n  replicas:\n  pool: servers\nworkers: {replicas: 4, pool: servers}",
            "tfk8s:cluster.ps.replicas: empty;",
            id="ps.replicas left empty: the mapping's 'set ps.replicas or ratio' names it",
        ),
    ],
)
def test_what_is_said_only_of_a_refused_value_is_left_out(cluster, refusal):
    problems = listed(cluster)
    assert len(problems) == 1 and problems[0].startswith(refusal), problems
