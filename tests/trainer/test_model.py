"""Fast, single-process trainer tests: ids, data, model, sharded optimizer, re-sharding."""

from __future__ import annotations

import dataclasses
import json
import threading
import time

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.python.distribute.sharded_variable import ShardedVariable

from trainer.cluster import ClusterConfigError, ps_named_in, read_task_config
from trainer.data import synthetic_examples, tfrecord_records, training_dataset, write_tfrecords
from trainer.ids import IdHasher, zipf_ids
from trainer.model import SparseModel, table_initializer, table_partitioner
from trainer.settings import TrainerSettings

SMALL = TrainerSettings(embedding_rows=2000, embedding_dim=8, batch_size=128, ids_per_example=4, hidden_units=(16,))


@pytest.mark.parametrize("rows", [1, 2, 997, 1000, 1024, 65536])
def test_id_hash_is_a_bijection(rows):
    hashed = IdHasher(rows)(tf.range(rows, dtype=tf.int64)).numpy()
    assert sorted(hashed.tolist()) == list(range(rows))


def test_id_hash_spreads_the_rows_a_batch_fetches_over_shards():
    """Per batch each distinct id is fetched once; hashing spreads those rows evenly."""
    rows, shards, batches = 100_000, 4, 10
    contiguous, hashed = np.zeros(shards), np.zeros(shards)
    for batch in range(batches):
        ids = zipf_ids(tf.range(batch * 8192, (batch + 1) * 8192, dtype=tf.int64), rows, 1.2)
        unique, _ = tf.unique(ids)
        contiguous += np.bincount(unique.numpy() * shards // rows, minlength=shards)
        hashed += np.bincount(IdHasher(rows)(unique).numpy() * shards // rows, minlength=shards)
    assert contiguous.max() / contiguous.mean() > 2.0  # the seed's single hot PS
    assert hashed.max() / hashed.mean() < 1.05


def test_zipf_ids_stay_in_the_table_and_favour_small_ids():
    ids = zipf_ids(tf.range(100_000, dtype=tf.int64), 5000, 1.2).numpy()
    assert ids.min() >= 0 and ids.max() < 5000
    counts = np.bincount(ids, minlength=5000)
    assert counts[0] == counts.max() and counts[0] > 10 * counts[100]


def test_synthetic_data_is_deterministic_and_learnable_labels_vary():
    records = tf.range(512, dtype=tf.int64)
    ids_a, labels_a = synthetic_examples(records, SMALL)
    ids_b, labels_b = synthetic_examples(records, SMALL)
    assert np.array_equal(ids_a, ids_b) and np.array_equal(labels_a, labels_b)
    assert ids_a.shape == (512, SMALL.ids_per_example)
    assert 0.2 < float(tf.reduce_mean(labels_a)) < 0.8


def _records(dataset, batches):
    return [tuple(map(tuple, ids.numpy())) for ids, _ in dataset.take(batches)]


def test_synthetic_shards_split_records_between_workers():
    first = set(r for batch in _records(training_dataset(SMALL, 2, 0), 4) for r in batch)
    second = set(r for batch in _records(training_dataset(SMALL, 2, 1), 4) for r in batch)
    assert len(first) > 400 and len(second) > 400
    assert len(first & second) < 0.05 * len(first)  # different records (ids may repeat by chance)


def test_tfrecords_are_sharded_by_record_and_reshuffled(tmp_path):
    path = str(tmp_path / "part-0.tfrecord")
    settings = TrainerSettings(**{**SMALL.__dict__, "data": path, "batch_size": 10})
    write_tfrecords(path, settings, 60)  # one file, two workers: both still get data
    shard_rows = []
    for shard in (0, 1):
        batches = _records(training_dataset(settings, 2, shard), 6)  # two passes of 30 records
        epoch_one, epoch_two = batches[:3], batches[3:]
        assert sorted(r for b in epoch_one for r in b) == sorted(r for b in epoch_two for r in b)
        assert epoch_one != epoch_two, "each epoch is reshuffled"
        shard_rows.append(set(r for b in epoch_one for r in b))
    everything = set(map(tuple, synthetic_examples(tf.range(60, dtype=tf.int64), settings)[0].numpy()))
    assert shard_rows[0] | shard_rows[1] == everything
    assert len(shard_rows[0]) + len(shard_rows[1]) >= len(everything) - 1


def _bytes_read_while(run) -> int:
    """Bytes this process read (read and pread calls, /proc/self/io rchar) while `run()` ran."""

    def rchar() -> int:
        with open("/proc/self/io") as io:
            return next(int(line.split()[1]) for line in io if line.startswith("rchar:"))

    before = rchar()
    run()
    return rchar() - before


@pytest.mark.parametrize(
    "files, split",
    [pytest.param(8, "file", id="8 files, 4 workers: by file"), pytest.param(2, "record", id="2 files, 4 workers: by record")],
)
def test_tfrecord_workers_read_their_share_of_the_files(tmp_path, files, split):
    settings = TrainerSettings(**{**SMALL.__dict__, "data": str(tmp_path / "part-*.tfrecord")})
    per_file = 2000
    for index in range(files):
        write_tfrecords(str(tmp_path / f"part-{index}.tfrecord"), dataclasses.replace(settings, seed=index), per_file)
    total_bytes = sum(path.stat().st_size for path in tmp_path.glob("part-*.tfrecord"))
    workers = 4
    list(tfrecord_records(settings, workers, 0))  # warm up: TensorFlow's first use reads files of its own
    records, read = [], []
    for worker in range(workers):
        seen: list = []
        read.append(_bytes_read_while(lambda: seen.extend(tfrecord_records(settings, workers, worker))))
        records.append(len(seen))
    assert sum(records) == files * per_file and max(records) - min(records) <= 1, records
    if split == "file":
        assert all(0.2 * total_bytes <= bytes_ <= 0.3 * total_bytes for bytes_ in read), (read, total_bytes)
    else:  # fewer files than workers: nobody idles, and everybody reads everything
        assert all(bytes_ >= 0.95 * total_bytes for bytes_ in read), (read, total_bytes)


def test_table_initializer_does_not_depend_on_sharding():
    init = table_initializer(SMALL)
    whole = init().numpy()
    part = init(partition_shape=(500, 8), partition_offset=(700, 0)).numpy()
    assert np.array_equal(whole[700:1200], part)


def test_checkpoint_reshards_two_shards_into_three_exactly(tmp_path):
    init = table_initializer(SMALL)
    rows = SMALL.embedding_rows

    def sharded(sizes):
        offsets = np.cumsum([0] + sizes[:-1])
        return ShardedVariable([
            tf.Variable(init(partition_shape=(size, 8), partition_offset=(int(offset), 0)))
            for size, offset in zip(sizes, offsets)
        ])

    saved = sharded([1000, 1000])
    saved.variables[1].assign(saved.variables[1] + 1.0)  # trained rows, not the initial ones
    path = tf.train.Checkpoint(table=saved).save(str(tmp_path / "ckpt"))
    restored = ShardedVariable([tf.Variable(tf.zeros([size, 8])) for size in (667, 667, 666)])
    tf.train.Checkpoint(table=restored).restore(path).assert_consumed()
    assert sum(v.shape[0] for v in restored.variables) == rows
    assert np.array_equal(
        tf.concat(restored.variables, 0).numpy(), tf.concat(saved.variables, 0).numpy()
    )


@pytest.fixture(scope="module")
def strategy(in_process_cluster):
    """Strategies by partition setting (the partitioner belongs to the strategy)."""
    strategies = {}

    def for_settings(settings: TrainerSettings):
        if settings.partition not in strategies:
            strategies[settings.partition] = tf.distribute.ParameterServerStrategy(
                in_process_cluster.resolver, variable_partitioner=table_partitioner(settings, 2)
            )
        return strategies[settings.partition]

    return for_settings


def _model(strategy, **changes) -> SparseModel:
    settings = TrainerSettings(**{**SMALL.__dict__, **changes})
    chosen = strategy(settings)
    with chosen.scope():
        return SparseModel(settings, chosen.extended.colocate_vars_with)


def test_table_is_sharded_over_every_ps_with_slots_beside_each_shard(strategy):
    model = _model(strategy)
    assert [v.device.split("/task:")[1][0] for v in model.table_shards] == ["0", "1"]
    for slot in model.optimizer.slots("embedding").values():
        assert [s.device for s in slot.variables] == [v.device for v in model.table_shards]
    for layer, (kernel, _bias) in enumerate(model.dense):
        for slot in model.optimizer.slots(f"kernel_{layer}").values():
            assert slot.device == kernel.device


def test_partition_none_keeps_one_shard(strategy):
    model = _model(strategy, partition="none")
    assert len(model.table_shards) == 1


def _step(model, ids, labels):
    return tf.function(model.train_step)(ids, labels)


@pytest.mark.parametrize("optimizer", ["adagrad", "sgd", "adam"])
def test_sparse_update_touches_only_the_looked_up_rows(strategy, optimizer):
    model = _model(strategy, optimizer=optimizer, partition="range")
    before = tf.concat([v.read_value() for v in model.table_shards], 0).numpy()
    ids = tf.constant([[1, 2, 2, 1500]] * 4, dtype=tf.int64)
    labels = tf.constant([1.0, 0.0, 1.0, 1.0])
    _step(model, ids, labels)
    after = tf.concat([v.read_value() for v in model.table_shards], 0).numpy()
    changed = set(np.nonzero(np.any(before != after, axis=1))[0].tolist())
    assert changed == {1, 2, 1500}


def test_dedup_fetches_each_distinct_row_once(strategy):
    ids = tf.constant([[3, 3, 3, 9]] * 8, dtype=tf.int64)
    labels = tf.ones([8])
    _, rows_dedup = _step(_model(strategy, dedup=True, partition="range"), ids, labels)
    _, rows_all = _step(_model(strategy, dedup=False, partition="range"), ids, labels)
    assert int(tf.reduce_sum(rows_dedup)) == 2
    assert int(tf.reduce_sum(rows_all)) == 32


def test_loss_decreases_on_synthetic_data(strategy):
    model = _model(strategy)
    step = tf.function(model.train_step)
    losses = []
    for ids, labels in training_dataset(model.settings).take(60):
        loss, _ = step(ids, labels)
        losses.append(float(loss))
    assert np.mean(losses[-10:]) < np.mean(losses[:10]) - 0.02


def test_task_config_errors_are_clear():
    with pytest.raises(ClusterConfigError, match="TF_CONFIG is not set"):
        read_task_config({})
    with pytest.raises(ClusterConfigError, match=r"unexpanded reference \(\$\(TFK8S_CLUSTER\)\)"):
        read_task_config({"TF_CONFIG": '{"cluster":$(TFK8S_CLUSTER),"task":{"type":"ps","index":0}}'})
    with pytest.raises(ClusterConfigError, match=r"unexpanded reference \(\$\(TFK8S_TASK_INDEX\)\)"):
        read_task_config({"TF_CONFIG": '{"cluster":{"ps":["a:1"]},"task":{"type":"ps","index":$(TFK8S_TASK_INDEX)}}'})
    with pytest.raises(ClusterConfigError, match="no apps.kubernetes.io/pod-index label.*Kubernetes 1.28 or newer"):
        read_task_config({"TFK8S_TASK_INDEX": "", "TF_CONFIG": '{"cluster":{"ps":["a:1"]},"task":{"type":"ps","index":}}'})
    with pytest.raises(ClusterConfigError, match="task worker-5 is not in the cluster"):
        read_task_config({"TF_CONFIG": '{"cluster": {"ps": ["a:1"], "worker": ["b:1"]}, "task": {"type": "worker", "index": 5}}'})
    assert ps_named_in("failed on /job:ps/replica:0/task:3/device:CPU:0") == 3
    assert ps_named_in("a worker failed") is None


def test_a_jobset_task_is_its_groups_first_index_plus_its_completion_index():
    cluster = '{"ps":["p0:2222"],"worker":["w0:2222","w1:2222","w2:2222","w3:2222"]}'
    env = {"TFK8S_CLUSTER": cluster, "TFK8S_TASK_TYPE": "worker", "TFK8S_FIRST_INDEX": "2", "JOB_COMPLETION_INDEX": "1"}
    task = read_task_config(env)
    assert (task.task_type, task.task_index, task.cluster["worker"][3]) == ("worker", 3, "w3:2222")
    # What the trainer exports for TensorFlow is the TF_CONFIG a StatefulSet pod would have had.
    assert read_task_config({"TF_CONFIG": task.tf_config_json()}) == task
    with pytest.raises(ClusterConfigError, match="JOB_COMPLETION_INDEX not.*an Indexed Job"):
        read_task_config({k: v for k, v in env.items() if k != "JOB_COMPLETION_INDEX"})
    with pytest.raises(ClusterConfigError, match="task worker-5 is not in the cluster"):
        read_task_config({**env, "TFK8S_FIRST_INDEX": "4"})



def test_a_cluster_too_large_for_a_variable_is_read_from_the_file_its_variable_names(tmp_path):
    """Past Linux's 128 KiB per variable a JobSet task gets its cluster as a mounted file."""
    workers = [f"tf-worker-0-{i}.tf.tf-large.svc:2222" for i in range(4000)]
    cluster = json.dumps({"ps": ["tf-ps-0-0.tf.tf-large.svc:2222"], "worker": workers}, separators=(",", ":"))
    assert len(cluster) > 131_072
    (tmp_path / "cluster.json").write_text(cluster)
    env = {"TFK8S_CLUSTER_FILE": str(tmp_path / "cluster.json"), "TFK8S_TASK_TYPE": "worker",
           "TFK8S_FIRST_INDEX": "0", "JOB_COMPLETION_INDEX": "3999"}
    task = read_task_config(env)
    assert (task.task_type, task.task_index, task.worker_count) == ("worker", 3999, 4000)
    with pytest.raises(ClusterConfigError, match=r"TFK8S_CLUSTER_FILE=/nowhere/cluster.json: cannot read the cluster"):
        read_task_config({**env, "TFK8S_CLUSTER_FILE": "/nowhere/cluster.json"})
    with pytest.raises(ClusterConfigError, match=r"TFK8S_CLUSTER \(or TFK8S_CLUSTER_FILE\) not"):
        read_task_config({k: v for k, v in env.items() if k != "TFK8S_CLUSTER_FILE"})

# -- a lost PS before the training loop ------------------------------------------


def _ps_error(kind, index: int):
    return kind(None, None, f"failed on /job:ps/replica:0/task:{index}/device:CPU:0: connection reset")


def _watchdogs_end(timeout_s: float = 5.0) -> bool:
    """The chief's PS watchdog ends once main() returns (it would otherwise end this process)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not [t for t in threading.enumerate() if t.name == "ps-watchdog" and t.is_alive()]:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize(
    "stage, error",
    [
        ("restore", _ps_error(tf.errors.UnavailableError, 1)),
        ("restore", _ps_error(tf.errors.FailedPreconditionError, 0)),  # a restarted, empty PS
        ("dataset", _ps_error(tf.errors.NotFoundError, 1)),
        ("dataset", _ps_error(tf.errors.AbortedError, 0)),
    ],
    ids=["restore, ps-1 unavailable", "restore, ps-0 restarted empty", "datasets, ps-1 variables gone",
         "datasets, ps-0 call aborted"],
)
def test_a_lost_ps_before_the_loop_exits_3_naming_it(stage, error, strategy, monkeypatch, tmp_path, capsys):
    from trainer import chief
    from trainer.cluster import TaskConfig

    settings = TrainerSettings(**{**SMALL.__dict__, "steps": 4})
    chosen = strategy(settings)
    monkeypatch.setattr(chief, "build_cluster", lambda task, s: (chosen, tf.distribute.coordinator.ClusterCoordinator(chosen)))

    def fail(*args, **kwargs):
        raise error

    if stage == "restore":
        monkeypatch.setattr(chief, "restore_latest", fail)
    else:
        monkeypatch.setattr(chief, "worker_dataset_fn", fail)
    monkeypatch.setattr(chief, "wait_for_cluster", lambda task, say: 0.0)  # the addresses are made up
    cluster = {"chief": ["c:1"], "ps": ["ps-a:2222", "ps-b:2222"], "worker": ["w:1"]}
    task = TaskConfig(cluster, "chief", 0)
    monkeypatch.setenv("TFK8S_CHECKPOINT_DIR", str(tmp_path / "checkpoints"))
    monkeypatch.setenv("TFK8S_METRICS_FILE", str(tmp_path / "metrics.jsonl"))

    assert chief.main(task, settings) == chief.EXIT_PS_LOST
    assert _watchdogs_end(), "the PS watchdog must end with main()"
    index = int(str(error).split("task:")[1].split("/")[0])
    assert f"chief: ps-{index} ({cluster['ps'][index]}) is unreachable: {type(error).__name__}" in capsys.readouterr().err


def test_an_error_that_names_no_ps_is_not_taken_for_a_lost_ps(strategy, monkeypatch, tmp_path):
    from trainer import chief
    from trainer.cluster import TaskConfig

    settings = TrainerSettings(**{**SMALL.__dict__, "steps": 4})
    chosen = strategy(settings)
    monkeypatch.setattr(chief, "build_cluster", lambda task, s: (chosen, tf.distribute.coordinator.ClusterCoordinator(chosen)))

    def missing_data(*args, **kwargs):
        raise tf.errors.NotFoundError(None, None, "/data/part-*.tfrecord: no files match")

    monkeypatch.setattr(chief, "worker_dataset_fn", missing_data)
    monkeypatch.setattr(chief, "wait_for_cluster", lambda task, say: 0.0)
    monkeypatch.setenv("TFK8S_CHECKPOINT_DIR", str(tmp_path / "checkpoints"))
    task = TaskConfig({"chief": ["c:1"], "ps": ["a:1", "b:1"], "worker": ["w:1"]}, "chief", 0)
    with pytest.raises(tf.errors.NotFoundError, match="no files match"):
        chief.main(task, settings)


def test_the_ps_watchdog_reports_a_ps_that_stops_answering():
    import socket
    import threading

    from trainer.peers import watch_parameter_servers

    servers = [socket.socket(), socket.socket()]
    for server in servers:
        server.bind(("127.0.0.1", 0))
        server.listen()
    addresses = [f"127.0.0.1:{s.getsockname()[1]}" for s in servers]
    lost = []
    reported = threading.Event()
    done = threading.Event()
    watch_parameter_servers(
        addresses, lambda i, a: (lost.append((i, a)), reported.set()), done, interval_s=0.1, grace_s=0.5
    )
    time.sleep(0.5)
    assert lost == [], "answering PS are not lost"
    servers[1].close()
    assert reported.wait(5)
    assert lost == [(1, addresses[1])]
    servers[0].close()


def test_the_ps_watchdog_stops_with_the_chief():
    import threading

    from trainer.peers import watch_parameter_servers

    done = threading.Event()
    lost = []
    thread = watch_parameter_servers(["127.0.0.1:1"], lambda i, a: lost.append(i), done, interval_s=0.1, grace_s=0.3)
    done.set()  # the chief returned before the grace ran out
    thread.join(timeout=5)
    assert not thread.is_alive() and lost == []


def test_a_checkpoint_that_cannot_be_written_is_not_taken_for_a_lost_ps(strategy, monkeypatch, tmp_path, capsys):
    """The chief names the checkpoint and prints TensorFlow's whole cause, exiting 4, not 3."""
    from trainer import chief
    from trainer.cluster import TaskConfig

    settings = TrainerSettings(**{**SMALL.__dict__, "steps": 8, "checkpoint_every": 4})
    chosen = strategy(settings)
    monkeypatch.setattr(chief, "build_cluster", lambda task, s: (chosen, tf.distribute.coordinator.ClusterCoordinator(chosen)))
    monkeypatch.setattr(chief, "wait_for_cluster", lambda task, say: 0.0)
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("TFK8S_CHECKPOINT_DIR", str(blocker / "checkpoints"))
    monkeypatch.setenv("TFK8S_METRICS_FILE", str(tmp_path / "metrics.jsonl"))
    task = TaskConfig({"chief": ["c:1"], "ps": ["a:1", "b:1"], "worker": ["w:1"]}, "chief", 0)

    assert chief.main(task, settings) == chief.EXIT_CHECKPOINT_FAILED
    err = capsys.readouterr().err
    assert f"could not write the checkpoint of step 4 to {blocker / 'checkpoints'}" in err
    assert "unreachable" not in err
    cause = err.split("could not write the checkpoint", 1)[1]
    assert "Graph execution error" not in cause.splitlines()[0] or len(cause.splitlines()) > 1, "the whole cause, not its first line"
    assert "not-a-folder" in cause


def test_checkpoint_io_retries_while_a_ps_cannot_reach_the_restarted_chief_yet(monkeypatch):
    """Seen on real pods: a replaced chief's restore failed because a PS's channel back to it was
    still in gRPC's reconnect back-off; the chief crash-looped. It now retries for a while."""
    from trainer import checkpoints

    unreached = (
        "failed to connect to all addresses; last error: UNKNOWN: ipv4:10.77.0.75:2222: Connection refused\n"
        "Additional GRPC error information from remote target /job:chief/replica:0/task:0 while calling "
        "/tensorflow.WorkerService/RecvTensor ... from remote target /job:ps/replica:0/task:0/device:CPU:0"
    )
    calls = []

    def restore():
        calls.append(1)
        if len(calls) < 3:
            raise tf.errors.UnavailableError(None, None, unreached)
        return "restored"

    monkeypatch.setattr(checkpoints.time, "sleep", lambda _: None)
    assert checkpoints._checkpoint_io("restore the checkpoint", "ckpt-200", restore) == "restored"
    assert len(calls) == 3

    def ps_gone():
        raise tf.errors.UnavailableError(None, None, "failed on /job:ps/replica:0/task:1/device:CPU:0: connection reset")

    with pytest.raises(tf.errors.UnavailableError):  # a lost PS is not retried: the chief exits 3
        checkpoints._checkpoint_io("restore the checkpoint", "ckpt-200", ps_gone)


def test_the_coordinator_reaches_a_lost_workers_replacement_only_once_it_serves(monkeypatch):
    """TensorFlow updates the cluster the moment a worker is lost, while its DNS name does not exist
    yet, and gRPC's resolver then backs off; the chief holds that update until every task serves."""
    import socket

    from tensorflow.python.eager import context as eager_context

    from trainer import chief
    from trainer.cluster import TaskConfig

    def listener(port: int = 0) -> socket.socket:
        server = socket.socket()
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", port))
        server.listen()
        return server

    ps = listener()
    probe = listener()
    late_port = probe.getsockname()[1]
    probe.close()  # worker-0's address, not served yet
    ctx = eager_context.context()
    updated: list[str] = []
    fake_update = lambda server_def, *args, **kwargs: updated.append(server_def)  # noqa: E731
    monkeypatch.setattr(ctx, "update_server_def", fake_update)
    task = TaskConfig(
        {"chief": ["127.0.0.1:1"], "ps": [f"127.0.0.1:{ps.getsockname()[1]}"], "worker": [f"127.0.0.1:{late_port}"]},
        "chief",
        0,
    )
    said: list[str] = []
    chief.reconnect_once_serving(task, said.append)
    chief.reconnect_once_serving(task, said.append)  # a second chief in this process: wrapped once
    assert ctx.update_server_def.__wrapped__ is fake_update

    update = threading.Thread(target=ctx.update_server_def, args=("the cluster",))
    update.start()
    deadline = time.monotonic() + 10
    while not said and time.monotonic() < deadline:
        time.sleep(0.05)
    assert updated == [] and "worker-0" in said[0], said
    worker = listener(late_port)
    try:
        update.join(timeout=10)
        assert updated == ["the cluster"]
    finally:
        worker.close()
        ps.close()
