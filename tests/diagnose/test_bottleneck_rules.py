"""The bottleneck rules (components/insight/bottleneck.py): each rule at and on either side of its threshold,
the five values and no other, the evidence a user reads, and how sure the finding is."""

from __future__ import annotations

import itertools
import json

import pytest

from tests.diagnose.builders import SERVER, measured, shape, task
from components.insight.bottleneck import (
    BOTTLENECKS,
    BUSY,
    HOT_PS_IMBALANCE,
    HOT_PS_MIN_CORES,
    IDLE,
    SATURATED_SHARE,
    Measurements,
    ServerSample,
    TrainerFacts,
    diagnose,
)


def bottleneck(figures: Measurements) -> str:
    return diagnose(figures, shape()).bottleneck


# Each task's allowance is 1 core unless a case says otherwise, so cores read as utilisation.
@pytest.mark.parametrize(
    "figures, expected",
    [
        # hot-ps: the imbalance
        pytest.param(measured(ps=[0.6, 0.2], workers=[0.5, 0.5]), "hot-ps", id="imbalance at 1.5 -> hot-ps"),
        pytest.param(measured(ps=[0.7, 0.2], workers=[0.5, 0.5]), "hot-ps", id="imbalance past 1.5 -> hot-ps"),
        pytest.param(measured(ps=[0.59, 0.21], workers=[0.5, 0.5]), "none", id="imbalance 1.475, under 1.5 -> not hot"),
        pytest.param(measured(ps=[0.6], workers=[0.5, 0.5]), "none", id="one PS is never hot"),
        # hot-ps: the floor in cores (the PS allowed 0.2 cores, so the hot one is well past IDLE)
        pytest.param(
            measured(ps=[0.1, 0.02], workers=[0.1, 0.1], ps_allowed=0.2), "hot-ps", id="hot PS at 0.1 cores -> hot-ps"
        ),
        pytest.param(
            measured(ps=[0.099, 0.02], workers=[0.1, 0.1], ps_allowed=0.2),
            "none",
            id="hot PS at 0.099 cores: idle noise, not hot",
        ),
        # hot-ps: the floor in utilisation (a PS on a large request)
        pytest.param(
            measured(ps=[0.5, 0.1], workers=[0.1, 0.1], ps_allowed=2.0), "hot-ps", id="hot PS at IDLE of its request"
        ),
        pytest.param(
            measured(ps=[0.49, 0.1], workers=[0.1, 0.1], ps_allowed=2.0),
            "idle",
            id="hot PS under IDLE of its request: not hot",
        ),
        # hot-ps against busy workers: the workers set the pace unless the hot PS is busy too
        pytest.param(
            measured(ps=[0.79, 0.1], workers=[1.0, 1.0]), "worker-bound", id="busy workers, hot PS under BUSY"
        ),
        pytest.param(measured(ps=[0.8, 0.1], workers=[1.0, 1.0]), "hot-ps", id="busy workers, hot PS at BUSY"),
        # ps-bound
        pytest.param(
            measured(ps=[0.8, 0.8], workers=[0.5, 0.5]), "ps-bound", id="PS at BUSY, workers under -> ps-bound"
        ),
        pytest.param(measured(ps=[0.79, 0.79], workers=[0.5, 0.5]), "none", id="PS just under BUSY -> none"),
        pytest.param(
            measured(ps=[2.0, 2.0], workers=[0.79, 0.79]), "ps-bound", id="PS past their request, workers under BUSY"
        ),
        pytest.param(measured(ps=[2.0, 2.0], workers=[0.8, 0.8]), "none", id="PS and workers at BUSY -> none"),
        # worker-bound
        pytest.param(measured(ps=[0.5, 0.5], workers=[0.8, 0.8]), "worker-bound", id="workers at BUSY, PS under"),
        pytest.param(measured(ps=[0.5, 0.5], workers=[0.79, 0.79]), "none", id="workers just under BUSY -> none"),
        pytest.param(measured(ps=[0.8, 0.8], workers=[2.5, 2.5]), "none", id="workers busy, PS at BUSY -> none"),
        pytest.param(measured(workers=[1.5, 1.5]), "worker-bound", id="no PS (workers only), workers busy"),
        # idle
        pytest.param(measured(ps=[0.24, 0.24], workers=[0.24, 0.24]), "idle", id="both under IDLE -> idle"),
        pytest.param(measured(ps=[0.25, 0.25], workers=[0.1, 0.1]), "none", id="PS at IDLE -> not idle"),
        pytest.param(measured(ps=[0.1, 0.1], workers=[0.25, 0.25]), "none", id="workers at IDLE -> not idle"),
        pytest.param(measured(workers=[0.1, 0.1]), "idle", id="no PS, workers idle"),
        # none
        pytest.param(measured(ps=[0.5, 0.5], workers=[0.5, 0.5]), "none", id="both between IDLE and BUSY -> none"),
        pytest.param(measured(ps=[None, None], workers=[None, None]), "none", id="nothing measured -> none"),
    ],
)
def test_each_rule_at_and_around_its_threshold(figures, expected):
    assert bottleneck(figures) == expected


def test_the_thresholds_the_cases_above_are_written_for():
    """The table is written for these values; a change of threshold must come with its cases."""
    assert (BUSY, IDLE, HOT_PS_IMBALANCE, HOT_PS_MIN_CORES, SATURATED_SHARE) == (0.8, 0.25, 1.5, 0.1, 0.85)


# PS figures at and on either side of each of the hot-PS rule's thresholds: the imbalance, the floor in
# cores, the floor in utilisation (IDLE of what the PS may use), and PS not measured.
AROUND_THE_RULE = [
    ([0.6, 0.2], 1.0),  # imbalance at 1.5
    ([0.59, 0.21], 1.0),  # 1.475
    ([0.61, 0.2], 1.0),
    ([0.1, 0.02], 0.2),  # the busiest at HOT_PS_MIN_CORES
    ([0.099, 0.02], 0.2),  # under it: idle noise
    ([0.5, 0.1], 2.0),  # at IDLE of its request
    ([0.49, 0.1], 2.0),  # under it
    ([0.5, 0.1], None),  # no request or limit: the floor in cores alone
    ([0.03, 0.005], 1.0),  # idle PS whose ratio is large
    ([1.0, 1.0, 0.01, 0.01], 1.0),  # two hot of four
    ([0.6, 0.2, None], 1.0),  # one PS not measured
    ([0.6], 1.0),  # one PS is never hot
    ([0.0, 0.0], 1.0),
]


@pytest.mark.parametrize("ps, allowed", AROUND_THE_RULE)
def test_top_and_diagnose_on_the_same_figures_name_the_same_hot_ps(ps, allowed):
    """`top` reads one sample, `diagnose` a window of the same sample: the one rule (components/insight/ps_balance.py)
    names the same PS hot, or none, on both."""
    from components.live.usage import TaskUsage, TopView

    tasks = [TaskUsage(f"ps-{i}", SERVER, cores, 2**30, allowed) for i, cores in enumerate(ps)]
    top = TopView("s", "ns", "Running", "", tasks, None, metrics_source="metrics.k8s.io")
    window = diagnose(measured(ps=ps, workers=[0.5, 0.5], ps_allowed=allowed), shape(ps_replicas=len(ps)))
    named = window.evidence["hot_ps"]
    assert top.hot_ps == (max(named, key=lambda task: ps[int(task.split("-")[1])]) if named else None)


def test_the_findings_are_the_five_values_and_every_one_of_them_occurs():
    levels = [0.0, 0.05, 0.2, 0.25, 0.5, 0.79, 0.8, 1.0, 3.0]
    seen = set()
    for ps_a, ps_b, worker in itertools.product(levels, levels, levels):
        seen.add(bottleneck(measured(ps=[ps_a, ps_b], workers=[worker, worker])))
    assert seen == set(BOTTLENECKS) == {"hot-ps", "ps-bound", "worker-bound", "idle", "none"}


def test_every_ps_past_the_threshold_is_named_hot():
    finding = diagnose(measured(ps=[1.0, 1.0, 0.01, 0.01], workers=[0.5, 0.5]), shape(ps_replicas=4))
    assert finding.bottleneck == "hot-ps"
    assert finding.evidence["hot_ps"] == ["ps-0", "ps-1"]
    assert finding.summary.startswith("ps-0, ps-1 do most of the PS work")


def test_idle_ps_noise_names_no_hot_ps_in_the_evidence():
    finding = diagnose(measured(ps=[0.03, 0.005], workers=[0.05, 0.05]), shape())
    assert finding.bottleneck == "idle"
    assert finding.evidence["ps_imbalance"] == pytest.approx(1.71, abs=0.01)
    assert finding.evidence["hot_ps"] == []


def test_the_real_node_view_of_an_unpartitioned_embedding_is_hot_ps_naming_ps_2():
    """top's example in docs/observing.md (one real node, 2 cores, requests of 200m and 400m)."""
    figures = Measurements(
        tasks=(
            task("chief-0", 0.12, 0.2),
            task("ps-0", 0.06, 0.2),
            task("ps-1", 0.06, 0.2),
            task("ps-2", 0.51, 0.2),
            task("worker-0", 0.53, 0.4),
            task("worker-1", 0.53, 0.4),
        ),
        servers=(ServerSample(SERVER, 2.0),),
        seconds=60.0,
        samples=4,
        source="metrics.k8s.io",
    )
    finding = diagnose(figures, shape(ps_replicas=3, partition="none"))
    assert finding.bottleneck == "hot-ps"
    assert finding.evidence["hot_ps"] == ["ps-2"]
    assert finding.evidence["ps_imbalance"] == pytest.approx(2.43, abs=0.01)
    assert finding.confidence == "high"


# -- the server: saturated when its tasks use SATURATED_SHARE of its cores


@pytest.mark.parametrize(
    "worker_cores, saturated",
    [
        pytest.param(0.65, True, id="tasks at 85% of the server -> saturated"),
        pytest.param(0.645, False, id="tasks at 84.5% -> not saturated"),
    ],
)
def test_a_saturated_server_is_named_with_the_share_of_ps_and_of_workers(worker_cores, saturated):
    # 2 cores: PS 0.2 + 0.2, workers 2 x worker_cores
    figures = measured(ps=[0.2, 0.2], workers=[worker_cores] * 2, ps_allowed=0.2, worker_allowed=0.4, server_cores=2.0)
    finding = diagnose(figures, shape())
    named = finding.evidence["saturated_servers"]
    if not saturated:
        assert named == []
        assert SERVER not in finding.summary
        return
    assert named == [
        {
            "server": SERVER,
            "cores": 2.0,
            "used_share": 0.85,
            "ps_share": 0.2,
            "worker_share": 0.65,
            "other_share": 0.0,
        }
    ]
    assert f"{SERVER} is at 85% of its 2 cores (PS 20%, workers 65%)" in finding.summary


def test_a_task_with_neither_request_nor_limit_is_as_busy_as_its_saturated_server():
    figures = measured(ps=[0.1, 0.1], workers=[0.9, 0.9], worker_allowed=None, server_cores=2.0)
    finding = diagnose(figures, shape())
    assert finding.evidence["tasks"]["worker-0"]["utilisation"] == 1.0  # the server's 2.0 of 2 cores
    assert finding.bottleneck == "worker-bound"
    unsaturated = diagnose(measured(ps=[0.1, 0.1], workers=[0.9, 0.9], worker_allowed=None), shape())
    assert unsaturated.evidence["tasks"]["worker-0"]["utilisation"] is None
    assert unsaturated.evidence["unmeasured"] == []  # measured in cores, only its utilisation is unknown


# -- evidence


def test_the_evidence_holds_the_deciding_figures_and_is_json():
    figures = measured(ps=[0.3, 0.3], workers=[1.2, 1.0], ps_allowed=0.2 * 5, worker_allowed=1.0)
    finding = diagnose(figures, shape())
    evidence = json.loads(json.dumps(finding.evidence))
    assert evidence["source"] == "metrics.k8s.io"
    assert evidence["roles"]["ps"] == {"tasks": 2, "measured": 2, "mean_utilisation": 0.3, "mean_cores": 0.3}
    assert evidence["roles"]["workers"]["mean_utilisation"] == 1.1
    assert evidence["tasks"]["worker-0"]["cores"] == 1.2
    assert evidence["ps_imbalance"] == 1.0
    assert evidence["thresholds"]["busy"] == BUSY
    assert "workers mean utilisation against BUSY" in evidence["margins"]


def test_tfk8s_trainers_step_time_and_shards_are_evidence_a_team_program_is_judged_on_the_cluster_alone():
    facts = TrainerFacts(step_time_s=0.25, ps_shard_bytes={"ps-0": 4096, "ps-1": 0})
    trainer = diagnose(measured(ps=[0.1, 0.1], workers=[0.1, 0.1], trainer=facts), shape(partition="none"))
    assert trainer.evidence["step_time_s"] == 0.25
    assert trainer.evidence["ps_shard_bytes"] == {"ps-0": 4096, "ps-1": 0}
    assert "team's program" not in trainer.summary
    program = diagnose(measured(ps=[0.1, 0.1], workers=[0.1, 0.1]), shape(partition=None))
    assert "step_time_s" not in program.evidence
    assert "judged from what the cluster measures alone" in program.summary
    assert program.evidence["judged_from"] == "what the cluster measures alone (a team's program)"


@pytest.mark.parametrize(
    "worker_cores, running, straggles",
    [
        pytest.param(0.49, True, True, id="under half the others' CPU -> straggler"),
        pytest.param(0.5, True, False, id="at half -> not a straggler"),
        pytest.param(None, False, True, id="not running -> straggler"),
    ],
)
def test_a_straggler_is_a_worker_far_below_the_others_while_they_work(worker_cores, running, straggles):
    slow = task("worker-2", worker_cores, 1.0, running=running)
    finding = diagnose(measured(ps=[0.1, 0.1], workers=[1.0, 1.0], extra=[slow]), shape(worker_replicas=3))
    assert ("worker-2" in finding.evidence["stragglers"]) is straggles
    assert ("worker-2" in finding.evidence["not_running"]) is (not running)


def test_no_straggler_among_workers_that_all_wait():
    slow = task("worker-2", 0.01, 1.0)
    finding = diagnose(measured(ps=[0.05, 0.05], workers=[0.2, 0.2], extra=[slow]), shape(worker_replicas=3))
    assert finding.evidence["stragglers"] == []


@pytest.mark.parametrize(
    "moved, near",
    [pytest.param(87.5e6, True, id="70% of 1 Gbit/s -> near the link"), pytest.param(87.4e6, False, id="under it")],
)
def test_the_network_names_the_busiest_tasks_and_a_server_near_its_link(moved, near):
    extra = [task("worker-0", 0.1, 1.0, network=moved - 1e6), task("worker-1", 0.1, 1.0, network=1e6)]
    finding = diagnose(measured(ps=[0.1, 0.1], extra=extra), shape())
    network = finding.evidence["network"]
    assert network["busiest_tasks"][0] == {"task": "worker-0", "bytes_per_s": moved - 1e6}
    assert network["by_server"] == {SERVER: moved}
    assert network["near_link"] == ([SERVER] if near else [])
    assert finding.bottleneck == "idle"
    assert any("1 Gbit/s" in line for line in finding.advice) is near


def test_the_network_is_null_where_unreadable():
    assert diagnose(measured(ps=[0.1, 0.1], workers=[0.1, 0.1]), shape()).evidence["network"] is None


# -- confidence


def test_one_sample_is_low_confidence():
    finding = diagnose(measured(ps=[0.1, 0.1], workers=[2.0, 2.0], samples=1), shape())
    assert finding.bottleneck == "worker-bound"
    assert finding.confidence == "low"
    assert "1 sample over 15 s (fewer than 3)" in finding.confidence_reason


@pytest.mark.parametrize("samples, confidence", [(2, "low"), (3, "high")])
def test_three_samples_are_the_least_for_a_sure_finding(samples, confidence):
    assert diagnose(measured(ps=[0.1, 0.1], workers=[2.0, 2.0], samples=samples), shape()).confidence == confidence


@pytest.mark.parametrize(
    "ps, workers, confidence",
    [
        pytest.param([0.1, None], [2.0, 2.0], "medium", id="1 of 4 without figures -> medium"),
        pytest.param([0.1, None], [2.0, None], "low", id="2 of 4 without figures -> low"),
    ],
)
def test_tasks_without_figures_lower_the_confidence(ps, workers, confidence):
    finding = diagnose(measured(ps=ps, workers=workers), shape())
    assert finding.bottleneck == "worker-bound"
    assert finding.confidence == confidence
    assert "no CPU figure for ps-1" in finding.confidence_reason


@pytest.mark.parametrize(
    "worker_series, confidence",
    [
        pytest.param((2.0, 2.0, 2.0, 2.0, 0.1), "high", id="4 of 5 samples agree"),
        pytest.param((2.0, 2.0, 2.0, 0.1, 0.1), "medium", id="3 of 5 agree"),
        pytest.param((3.0, 3.0, 0.1, 0.1, 0.1), "low", id="2 of 5 agree"),
    ],
)
def test_samples_that_disagree_with_the_window_lower_the_confidence(worker_series, confidence):
    workers = [task(f"worker-{i}", worker_series, 1.0) for i in range(2)]
    finding = diagnose(measured(ps=[0.1, 0.1], samples=5, extra=workers), shape())
    assert finding.bottleneck == "worker-bound"
    assert finding.confidence == confidence
    agreeing = sum(1 for value in worker_series if value >= BUSY)
    assert f"{agreeing} of 5 single samples read worker-bound" in finding.confidence_reason


@pytest.mark.parametrize(
    "workers, confidence",
    [pytest.param(0.87, "medium", id="9% past BUSY -> medium"), pytest.param(0.88, "high", id="10% past -> high")],
)
def test_figures_near_a_threshold_lower_the_confidence(workers, confidence):
    finding = diagnose(measured(ps=[0.1, 0.1], workers=[workers, workers]), shape())
    assert finding.bottleneck == "worker-bound"
    assert finding.confidence == confidence
    assert "workers mean utilisation against BUSY" in finding.confidence_reason
