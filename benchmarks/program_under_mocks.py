"""How long the Pulumi program takes under mocks, and how it scales with workers.

Runs `__main__.py` (the same path as `pulumi preview`) for the seed's largest
experiment, scene1-case4 (20 servers, 20 PS, 200 workers), and for the same
layout with ten and fifty times the servers, PS and workers (2,000 and 10,000
workers on 200 and 1,000 servers). Each run is a fresh interpreter, so all pay
the same imports; the figure is the median.

Targets: scene1-case4 under 1 s; ten times the work costs at most eleven times
the time, fifty times at most fifty-five. The program pauses CPython's cycle
collector; one more run of the x10 stack with the collector left on shows what
that trades (time against peak memory).

    .venv/bin/python benchmarks/program_under_mocks.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT_ROOT))

SEED_STACK = "scene1-case4"
SCALE = 10
SCALES = {10: 11.0, 50: 55.0}  # factor -> the most time it may take, as a multiple of the seed's
TARGET_SECONDS = 1.0


def run_once(factor: int, collector_on: bool = False) -> dict:
    """One timed run in this process: load the stack, run the program, count objects."""
    from components.resources import entry_point as program
    from components.spec.stack_files import read_stack_values
    from tests.harness import run_program
    from tests.stack_variants import scaled_values

    if collector_on:
        program.pause_garbage_collector = lambda: None

    stack, values = read_stack_values(SEED_STACK)
    if factor != 1:
        stack, values = f"{stack}-x{factor}", scaled_values(values, factor)
    started = time.perf_counter()
    run = run_program(stack, values)
    seconds = time.perf_counter() - started
    workers = run.outputs["tasks"]["worker"]
    objects = sum(1 for resource in run.resources if resource.custom)
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB
    return {"stack": stack, "workers": workers, "objects": objects, "seconds": seconds, "peak_mib": peak_mib}


def measure(factor: int, repeat: int, collector_on: bool = False) -> dict:
    runs = []
    for _ in range(repeat):
        out = subprocess.run(
            [sys.executable, __file__, "--one", str(factor), *(["--collector-on"] if collector_on else [])],
            check=True,
            capture_output=True,
            text=True,
            cwd=PROJECT_ROOT,
        )
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    seconds = [r["seconds"] for r in runs]
    return {**runs[0], "seconds": statistics.median(seconds), "min": min(seconds), "max": max(seconds)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3, help="fresh-process runs per stack (median)")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # internal: one run, JSON out
    parser.add_argument("--collector-on", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one is not None:
        print(json.dumps(run_once(args.one, args.collector_on)))
        return 0

    print(f"program under mocks, median of {args.repeat} fresh-process runs each", flush=True)
    base = measure(1, args.repeat)
    print(f"  {base['stack']}: measured", flush=True)
    scaled = {}
    for factor in SCALES:
        scaled[factor] = measure(factor, args.repeat)
        print(f"  {scaled[factor]['stack']}: measured", flush=True)
    collected = measure(SCALE, 1, collector_on=True)
    collected["stack"] += " (collector on)"

    header = f"{'stack':<34}{'workers':>8}{'objects':>9}{'median s':>10}{'min s':>8}{'max s':>8}{'peak MiB':>10}"
    print()
    print(header)
    for row in (base, *scaled.values(), collected):
        print(
            f"{row['stack']:<34}{row['workers']:>8}{row['objects']:>9}"
            f"{row['seconds']:>10.2f}{row['min']:>8.2f}{row['max']:>8.2f}{row['peak_mib']:>10.0f}"
        )
    print()
    met = base["seconds"] < TARGET_SECONDS
    for factor, most in SCALES.items():
        row = scaled[factor]
        ratio = row["seconds"] / base["seconds"]
        print(
            f"x{factor}: workers x{row['workers'] / base['workers']:.1f}, objects x{row['objects'] / base['objects']:.2f}, "
            f"time x{ratio:.2f} (target <= {most:.0f}: {'met' if ratio <= most else 'MISSED'}), "
            f"peak memory x{row['peak_mib'] / base['peak_mib']:.2f}"
        )
        met = met and ratio <= most
    print(
        f"collector paused: {collected['seconds'] / scaled[SCALE]['seconds']:.2f}x faster, "
        f"{scaled[SCALE]['peak_mib'] / collected['peak_mib']:.2f}x the peak memory of leaving it on"
    )
    print(f"target {SEED_STACK} < {TARGET_SECONDS:.0f} s: {'met' if base['seconds'] < TARGET_SECONDS else 'MISSED'} "
          f"({base['seconds']:.2f} s)")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
