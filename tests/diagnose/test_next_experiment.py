"""The next experiment `diagnose` proposes (components/insight/next_experiment.py): the stack keys for each
finding, and stacks that components' loader and planner accept once the changes are made."""

from __future__ import annotations

import pytest

from components.objects.loading import load_experiment_values
from components.plan.experiment import Experiment
from components.plan.trainer_bundle import load_trainer_bundle
from components.spec.stack_files import PROJECT_ROOT, read_stack_values
from tests.diagnose.builders import SERVER, applied, measured, shape, shape_of, task
from components.insight.bottleneck import Change, Measurements, ServerSample, TrainerFacts, diagnose
from components.insight.next_experiment import doubled_cpu


def load(stack: str, values: dict) -> Experiment:
    return load_experiment_values(stack, values, load_trainer_bundle(PROJECT_ROOT))


def stack_and_shape(stack: str, change=None) -> tuple[dict, object]:
    """A stack of stacks/ (changed by `change`), and its shape as `diagnose` reads it."""
    _, values = read_stack_values(stack)
    if change is not None:
        change(values)
    return values, shape_of(load(stack, values).config, values)


def proposed(stack: str, values: dict, changes) -> Experiment:
    """The next experiment's stack, loaded and planned as `plan` does (a bad stack raises)."""
    return load(f"{stack}-next", applied(values, changes))


def keys(changes) -> dict[str, tuple]:
    return {change.key: (change.old, change.new) for change in changes}


HOT = measured(ps=[0.6, 0.05], workers=[0.5, 0.5], ps_allowed=0.2, worker_allowed=1.0)
PS_BOUND = measured(ps=[0.9, 0.9], workers=[0.3, 0.3])
WORKER_BOUND = measured(ps=[0.1, 0.1], workers=[2.0, 2.0])
IDLE = measured(ps=[0.05, 0.05], workers=[0.05, 0.05])
NONE = measured(ps=[0.5, 0.5], workers=[0.5, 0.5])

# -- hot-ps


@pytest.mark.parametrize("partition", ["none", "range"])
def test_hot_ps_with_tfk8s_trainer_unpartitioned_or_in_ranges_partitions_auto(partition):
    values, stack_shape = stack_and_shape(
        "scene1-case1-hot-none", lambda v: v["tfk8s:trainer"].update(partition=partition)
    )
    finding = diagnose(HOT, stack_shape)
    assert finding.bottleneck == "hot-ps"
    assert finding.changes == (Change("tfk8s:trainer.partition", partition, "auto"),)
    assert "ps-0 does most of the PS work" in finding.advice[0]
    assert proposed("hot", values, finding.changes).config.trainer.partition == "auto"


def test_hot_ps_already_partitioned_auto_changes_no_key_and_speaks_of_hot_ids():
    finding = diagnose(HOT, shape(partition="auto"))
    assert finding.changes == ()
    assert "hot ids" in finding.advice[0]
    assert "ps-0" in finding.advice[0]


def test_hot_ps_in_a_team_program_names_the_ps_and_how_to_partition_what_lives_on_it():
    finding = diagnose(HOT, shape(partition=None))
    assert finding.changes == ()
    advice = " ".join(finding.advice)
    assert "Partition the variables that live on ps-0 over the 2 PS" in advice
    assert "FixedShardsPartitioner(num_shards=2)" in advice
    assert "tf.fixed_size_partitioner(2)" in advice
    assert "judged from what the cluster measures alone" in finding.summary


# -- ps-bound


@pytest.mark.parametrize(
    "quantity, doubled",
    [
        ("200m", "400m"),
        ("250m", "500m"),
        ("500m", "1"),
        ("1500m", "3"),
        ("2", "4"),
        ("1.5", "3"),
        ("0.1", "200m"),
        ("0.0015", "3m"),
    ],
)
def test_cpu_is_doubled_as_kubernetes_writes_quantities(quantity, doubled):
    assert doubled_cpu(quantity) == doubled


def test_a_cpu_that_is_not_a_quantity_is_refused_by_name():
    with pytest.raises(ValueError, match="CPU 'two' is not a Kubernetes quantity"):
        doubled_cpu("two")


def test_ps_bound_doubles_the_ps_replicas():
    values, stack_shape = stack_and_shape("scene1-case1-hot-auto")
    finding = diagnose(PS_BOUND, stack_shape)
    assert finding.bottleneck == "ps-bound"
    assert finding.changes == (Change("tfk8s:cluster.ps.replicas", 3, 6),)
    assert "tfk8s:cluster.ps.cpu 200m -> 400m" in finding.advice[0]  # the other way, said
    assert proposed("ps-bound", values, finding.changes).plan.count("ps") == 6


def test_ps_bound_with_an_unpartitioned_embedding_partitions_it_over_the_new_ps():
    values, stack_shape = stack_and_shape("scene1-case1-hot-none")
    finding = diagnose(PS_BOUND, stack_shape)
    assert keys(finding.changes) == {"tfk8s:cluster.ps.replicas": (3, 6), "tfk8s:trainer.partition": ("none", "auto")}
    proposed("ps-bound", values, finding.changes)


def test_ps_bound_where_the_stack_counts_ps_by_ratio_changes_the_ratio():
    values, stack_shape = stack_and_shape("gpu-p40")  # ratio 1:4, 8 workers: 2 PS
    finding = diagnose(PS_BOUND, stack_shape)
    assert finding.changes == (Change("tfk8s:cluster.ratio", "1:4", "1:2"),)
    assert proposed("ratio", values, finding.changes).config.cluster.ps_count == 4


def test_ps_bound_with_ratio_and_replicas_both_written_changes_both():
    values, stack_shape = stack_and_shape("gpu-p40", lambda v: v["tfk8s:cluster"]["ps"].update(replicas=2))
    finding = diagnose(PS_BOUND, stack_shape)
    assert keys(finding.changes) == {"tfk8s:cluster.ratio": ("1:4", "1:2"), "tfk8s:cluster.ps.replicas": (2, 4)}
    assert proposed("both", values, finding.changes).config.cluster.ps_count == 4


def test_ps_bound_on_a_full_server_doubles_each_ps_cpu_instead():
    # 2 cores: PS 0.5 + 0.5 on 200m, workers 0.3 + 0.3 on 400m, the chief 0.1: 85%
    figures = measured(
        ps=[0.5, 0.5], workers=[0.3, 0.3], ps_allowed=0.2, worker_allowed=0.4, chief=0.1, server_cores=2.0
    )
    values, stack_shape = stack_and_shape("scene1-case1-hot-auto")
    finding = diagnose(figures, stack_shape)
    assert finding.bottleneck == "ps-bound"
    assert finding.changes == (Change("tfk8s:cluster.ps.cpu", "200m", "400m"),)
    assert f"{SERVER} is at 85% of its 2 cores (PS 50%, workers 30%)" in finding.advice[0]
    assert "The other way: 6 PS" in finding.advice[0]
    proposed("cpu", values, finding.changes)


def test_ps_bound_in_a_team_program_says_more_ps_need_partitioned_variables():
    finding = diagnose(PS_BOUND, shape(partition=None))
    assert finding.changes == (Change("tfk8s:cluster.ps.replicas", 2, 4),)
    assert any("only if the program partitions its variables" in line for line in finding.advice)


# -- worker-bound


@pytest.mark.parametrize("gpus, says_gpus", [(0, True), (1, False)])
def test_worker_bound_doubles_the_workers_and_names_gpus_where_they_have_none(gpus, says_gpus):
    finding = diagnose(WORKER_BOUND, shape(worker_gpus=gpus))
    assert finding.bottleneck == "worker-bound"
    assert finding.changes == (Change("tfk8s:cluster.workers.replicas", 2, 4),)
    assert any("tfk8s:cluster.workers.gpus" in line for line in finding.advice) is says_gpus


def test_worker_bound_with_a_ratio_doubles_the_workers_and_the_ratio_gives_the_ps():
    values, stack_shape = stack_and_shape("gpu-p40")
    finding = diagnose(WORKER_BOUND, stack_shape)
    assert finding.changes == (Change("tfk8s:cluster.workers.replicas", 8, 16),)
    assert any("cluster.ratio 1:4 gives 4 PS for 16 workers" in line for line in finding.advice)
    assert proposed("workers", values, finding.changes).config.cluster.ps_count == 4


def test_worker_bound_with_ratio_and_replicas_both_written_keeps_them_agreeing():
    values, stack_shape = stack_and_shape("gpu-p40", lambda v: v["tfk8s:cluster"]["ps"].update(replicas=2))
    finding = diagnose(WORKER_BOUND, stack_shape)
    assert keys(finding.changes) == {"tfk8s:cluster.ps.replicas": (2, 4), "tfk8s:cluster.workers.replicas": (8, 16)}
    proposed("workers", values, finding.changes)


def two_servers(ps_cores: float, worker_cores: float) -> Measurements:
    """Colocated on 2 servers of 2 cores: ps-0, worker-0 and the chief on srv-00; ps-1 and worker-1 on srv-01."""
    tasks = (
        task("chief-0", 0.05, 0.2, node="srv-00"),
        task("ps-0", ps_cores, 0.5, node="srv-00"),
        task("worker-0", worker_cores, 0.4, node="srv-00"),
        task("ps-1", ps_cores, 0.5, node="srv-01"),
        task("worker-1", worker_cores, 0.4, node="srv-01"),
    )
    servers = (ServerSample("srv-00", 2.0), ServerSample("srv-01", 2.0))
    return Measurements(tasks, servers, 60.0, 4, "metrics.k8s.io")


def small_colocated(values: dict) -> None:
    values["tfk8s:nodePools"][0]["nodes"] = ["srv-00", "srv-01"]
    values["tfk8s:cluster"]["ps"].update(replicas=2, cpu="500m")
    values["tfk8s:cluster"]["workers"].update(replicas=2, cpu="400m")


def test_worker_bound_on_a_server_shared_with_busy_colocated_ps_isolates_them_in_a_plan_that_holds():
    values, stack_shape = stack_and_shape("scene1-case1-hot-auto", small_colocated)
    finding = diagnose(two_servers(ps_cores=0.3, worker_cores=1.5), stack_shape)
    assert finding.bottleneck == "worker-bound"
    pools = values["tfk8s:nodePools"]
    assert finding.changes == (
        Change("tfk8s:cluster.placement", "colocated", "isolated"),
        Change(
            "tfk8s:nodePools",
            pools,
            [{"name": "servers", "nodes": ["srv-00"]}, {"name": "servers-ps", "nodes": ["srv-01"]}],
        ),
        Change("tfk8s:cluster.ps.pool", "servers", "servers-ps"),
    )
    assert "srv-01 is at 90% of its 2 cores (PS 15%, workers 75%)" in finding.advice[0]
    plan = proposed("isolated", values, finding.changes).plan
    where = {placement.task.name: placement.pool for placement in plan.placements}
    assert {where["ps-0"], where["ps-1"], where["chief-0"]} == {"servers-ps"}
    assert {where["worker-0"], where["worker-1"]} == {"servers"}
    assert plan.per_server() == {"srv-00": {"ps": 0, "worker": 2}, "srv-01": {"ps": 2, "worker": 0}}


@pytest.mark.parametrize(
    "ps_cores, isolates",
    [pytest.param(0.2, True, id="PS at 10% of the server -> isolated"), pytest.param(0.19, False, id="9.5% -> not")],
)
def test_colocated_ps_are_isolated_only_when_they_take_a_tenth_of_the_full_server(ps_cores, isolates):
    _, stack_shape = stack_and_shape("scene1-case1-hot-auto", small_colocated)
    finding = diagnose(two_servers(ps_cores=ps_cores, worker_cores=1.6), stack_shape)
    assert finding.bottleneck == "worker-bound"
    assert ("tfk8s:cluster.placement" in keys(finding.changes)) is isolates
    if not isolates:
        assert keys(finding.changes) == {"tfk8s:cluster.workers.replicas": (2, 4)}
        assert any("the new workers need servers too" in line for line in finding.advice)


def test_a_pool_of_one_server_is_not_split():
    figures = measured(ps=[0.3, 0.3], workers=[0.6, 0.6], ps_allowed=0.5, worker_allowed=0.4, server_cores=2.0)
    finding = diagnose(figures, shape(ps_cpu="500m"))
    assert finding.bottleneck == "worker-bound"
    assert keys(finding.changes) == {"tfk8s:cluster.workers.replicas": (2, 4)}
    assert any("add nodes to pool servers" in line for line in finding.advice)


# -- idle


def test_idle_changes_no_key_and_points_at_the_input_pipeline_when_nothing_else_shows():
    finding = diagnose(IDLE, shape())
    assert finding.bottleneck == "idle"
    assert finding.changes == ()
    assert "input pipeline" in finding.advice[0]
    assert "prefetch" in finding.advice[0]


def test_idle_with_a_task_not_running_points_at_its_status():
    figures = measured(ps=[0.05, 0.05], workers=[0.05], extra=[task("worker-1", None, 1.0, running=False)])
    finding = diagnose(figures, shape())
    assert finding.bottleneck == "idle"
    assert finding.changes == ()
    assert finding.advice[0].startswith("worker-1 did not run for the whole window: `python -m components status`")
    assert not any("input pipeline" in line for line in finding.advice)


def test_idle_with_a_busy_chief_and_tfk8s_trainer_names_steps_per_call_and_the_step_time():
    figures = measured(ps=[0.05, 0.05], workers=[0.05, 0.05], chief=0.9, trainer=TrainerFacts(step_time_s=0.4))
    finding = diagnose(figures, shape())
    assert finding.changes == ()
    assert any("tfk8s:trainer.stepsPerCall" in line for line in finding.advice)
    assert finding.advice[-1] == "The chief's step time over the window: 0.4 s."


# -- none


def test_none_doubles_ps_and_workers():
    values, stack_shape = stack_and_shape("scene1-case1-hot-auto")
    finding = diagnose(NONE, stack_shape)
    assert finding.bottleneck == "none"
    assert keys(finding.changes) == {"tfk8s:cluster.ps.replicas": (3, 6), "tfk8s:cluster.workers.replicas": (2, 4)}
    assert finding.advice[0] == "Nothing stands out at this size: the next step is more of everything."
    proposed("more", values, finding.changes)


def test_none_with_nothing_measured_changes_nothing_and_says_to_run_again():
    finding = diagnose(measured(ps=[None, None], workers=[None, None]), shape())
    assert finding.bottleneck == "none"
    assert finding.changes == ()
    assert finding.confidence == "low"
    assert "run diagnose again" in finding.advice[0]


def test_none_without_ps_doubles_the_workers_only():
    finding = diagnose(measured(workers=[0.5, 0.5]), shape(ps_replicas=0, ps_pool=None))
    assert finding.changes == (Change("tfk8s:cluster.workers.replicas", 2, 4),)


def test_none_with_a_ratio_whose_rounding_would_not_double_the_ps_writes_the_ratio_that_does():
    values, stack_shape = stack_and_shape(
        "gpu-p40", lambda v: v["tfk8s:cluster"].update(ratio="1:20")
    )  # 8 -> 1 PS, 16 -> 1
    finding = diagnose(NONE, stack_shape)
    assert keys(finding.changes) == {"tfk8s:cluster.ratio": ("1:20", "1:8"), "tfk8s:cluster.workers.replicas": (8, 16)}
    assert proposed("more", values, finding.changes).config.cluster.ps_count == 2


def test_none_on_full_colocated_servers_isolates_the_ps_on_servers_enough_for_their_requests():
    """Seed scene 1, case 3: 10 servers of 16 cores, each 1 PS and 10 workers, all busy and the servers full."""
    values, stack_shape = stack_and_shape("scene1-case3")
    servers = values["tfk8s:nodePools"][0]["nodes"]
    tasks = [task("chief-0", 0.2, 1.0, node=servers[0])]
    for index, server in enumerate(servers):
        tasks.append(task(f"ps-{index}", 1.8, 2.0, node=server))
        tasks += [task(f"worker-{index * 10 + w}", 1.3, 1.0, node=server) for w in range(10)]
    figures = Measurements(tuple(tasks), tuple(ServerSample(s, 16.0) for s in servers), 60.0, 4, "metrics.k8s.io")
    finding = diagnose(figures, stack_shape)
    assert finding.bottleneck == "none"
    changed = keys(finding.changes)
    assert changed["tfk8s:cluster.placement"] == ("colocated", "isolated")
    # The PS and the chief request 21 cores: 2 servers of 16, though they used 12% of the CPU.
    new_pools = changed["tfk8s:nodePools"][1]
    assert new_pools == [{"name": "servers", "nodes": servers[:8]}, {"name": "servers-ps", "nodes": servers[8:]}]
    plan = proposed("isolated", values, finding.changes).plan
    assert sum(share["ps"] for share in plan.per_server().values()) == 10
    assert all(plan.per_server()[server]["worker"] == 0 for server in servers[8:])
    assert all(plan.per_server()[server]["ps"] == 0 for server in servers[:8])
