"""Does every PS work? Partitioning, de-duplication and steps per call, measured side by side.

One run, the same sparse-heavy model and data throughout (synthetic Zipf ids,
batch 1024, 128 ids per example, 64-wide rows: the embedding, not the small
dense tower, is the PS's work, as in the seeds' search and ads models), each
configuration a local cluster of real processes (trainer.local):

- partition auto / range / none on 2 and 4 PS: PS CPU imbalance (max/mean of
  CPU seconds over the training phase) and examples/s;
- dedup on / off: table rows fetched per step and examples/s;
- steps per scheduled function 1 vs 4: examples/s;
- like for like: the same model, batch, data and optimizer trained in one
  process without PS, against the cluster (2 PS, `auto`, dedup on).

Targets: `auto` imbalance at most 1.05; `none` at least 1.7 (the seed's single
loaded PS, reproduced); dedup at least 3x fewer rows fetched.

    .venv-trainer/bin/python benchmarks/trainer_partitioning.py [--steps 200]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT_ROOT))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from trainer.local import LocalCluster  # noqa: E402
from trainer.settings import TrainerSettings  # noqa: E402

TARGET_AUTO_IMBALANCE = 1.05
TARGET_NONE_IMBALANCE = 1.7
TARGET_DEDUP_RATIO = 3.0


class Quiet:
    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass


def run(settings: TrainerSettings, ps: int, workers: int) -> dict:
    workdir = Path(tempfile.mkdtemp(prefix="tfk8s-bench-"))
    cluster = LocalCluster(settings, ps, workers, workdir, progress_every=10**9)
    try:
        return cluster.run(out=Quiet())
    finally:
        cluster.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def single_process_examples_per_sec(settings: TrainerSettings) -> float:
    """The same model, batch, data and optimizer trained in one process, no PS: like for like."""
    import tensorflow as tf

    from trainer.chief import make_train_function
    from trainer.data import training_dataset, write_task_index
    from trainer.model import SparseModel

    workdir = Path(tempfile.mkdtemp(prefix="tfk8s-bench-single-"))
    previous = os.getcwd()
    os.chdir(workdir)  # the train function reads which worker process runs it from here
    try:
        write_task_index(0)
        model = SparseModel(settings, tf.distribute.get_strategy().extended.colocate_vars_with)
        train = make_train_function(model)
        iterator = iter(training_dataset(settings))
        per_call = tf.constant(settings.steps_per_call)
        train(iterator, per_call)  # trace once, as the cluster's first call does
        calls = max(1, settings.steps // settings.steps_per_call)
        started = time.perf_counter()
        for _ in range(calls):
            loss, _, _ = train(iterator, per_call)
        float(loss)
        return calls * settings.steps_per_call * settings.batch_size / (time.perf_counter() - started)
    finally:
        os.chdir(previous)
        shutil.rmtree(workdir, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    base = TrainerSettings(
        batch_size=1024, ids_per_example=128, embedding_dim=64, steps=args.steps, checkpoint_every=0
    )

    print(f"trainer benchmark: {args.steps} steps, batch {base.batch_size}, {args.workers} workers, "
          f"{base.embedding_rows} x {base.embedding_dim} table, Zipf {base.zipf_exponent}", flush=True)
    partition_rows = []
    for ps in (2, 4):
        for partition in ("auto", "range", "none"):
            result = run(dataclasses.replace(base, partition=partition), ps, args.workers)
            partition_rows.append((ps, partition, result))
            print(f"  measured partition={partition} ps={ps}", flush=True)
    dedup = {flag: run(dataclasses.replace(base, dedup=flag), 2, args.workers) for flag in (True, False)}
    print("  measured dedup on/off", flush=True)
    per_call = {n: run(dataclasses.replace(base, steps_per_call=n), 2, args.workers) for n in (1, 4)}
    print("  measured steps per call 1/4", flush=True)
    single = single_process_examples_per_sec(base)
    print("  measured one process, same model", flush=True)

    print()
    print(f"{'PS':>3} {'partition':<10}{'PS CPU s':>20}{'imbalance':>11}{'row imbal.':>11}{'examples/s':>12}")
    for ps, partition, r in partition_rows:
        cpu = ",".join(f"{c:.1f}" for c in r["ps_cpu_seconds"])
        print(f"{ps:>3} {partition:<10}{cpu:>20}{r['ps_imbalance']:>11.3f}{r['row_imbalance']:>11.3f}{r['examples_per_sec']:>12.0f}")
    print()
    print(f"{'dedup':<8}{'rows fetched/step':>19}{'examples/s':>12}")
    for flag, r in dedup.items():
        print(f"{str(flag).lower():<8}{r['rows_fetched_per_step']:>19.0f}{r['examples_per_sec']:>12.0f}")
    dedup_ratio = dedup[False]["rows_fetched_per_step"] / dedup[True]["rows_fetched_per_step"]
    print()
    print(f"{'steps/call':<11}{'examples/s':>12}")
    for n, r in per_call.items():
        print(f"{n:<11}{r['examples_per_sec']:>12.0f}")
    call_ratio = per_call[4]["examples_per_sec"] / per_call[1]["examples_per_sec"]

    cluster = dedup[True]["examples_per_sec"]
    print()
    print(f"same model, batch and optimizer: one process {single:,.0f} examples/s, cluster of 2 PS and "
          f"{args.workers} workers {cluster:,.0f} examples/s -> x{cluster / single:.2f}")

    auto = [r["ps_imbalance"] for _, p, r in partition_rows if p == "auto"]
    none = [r["ps_imbalance"] for _, p, r in partition_rows if p == "none"]
    checks = [
        (f"auto PS imbalance <= {TARGET_AUTO_IMBALANCE}", max(auto) <= TARGET_AUTO_IMBALANCE, f"max {max(auto):.3f}"),
        (f"none PS imbalance >= {TARGET_NONE_IMBALANCE}", min(none) >= TARGET_NONE_IMBALANCE, f"min {min(none):.3f}"),
        (f"dedup fetches >= {TARGET_DEDUP_RATIO:.0f}x fewer rows", dedup_ratio >= TARGET_DEDUP_RATIO, f"{dedup_ratio:.2f}x"),
    ]
    print(f"steps per call 4 vs 1: x{call_ratio:.2f} examples/s")
    for name, ok, figure in checks:
        print(f"target {name}: {'met' if ok else 'MISSED'} ({figure})")
    return 0 if all(ok for _, ok, _ in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
