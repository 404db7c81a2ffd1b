"""What a trainer task spends before it can serve: importing TensorFlow, measured side by side.

Every task of tfk8s's trainer (chief, PS, worker, evaluator; in a pod or under `trainer.local`)
starts a Python process that imports TensorFlow. On a 2-core server that is 8 to 9 CPU-seconds, the
largest part of a short run's work. The trainer uses no Keras, and its entry point
(`python -m trainer`) keeps TensorFlow from loading Keras 3 at import.

One run, alternating, `--repeats` times each (child processes, CPU from the kernel's rusage):
- the trainer's start: `import trainer.__main__` (its environment settings), then TensorFlow;
- the same modules in the other order: a plain `import tensorflow` first.

Target: the trainer's start takes at most 85% of the plain one's CPU, and loads no Keras module.

    .venv-trainer/bin/python benchmarks/task_start.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
TARGET_RATIO = 0.85
TRAINER_START = "trainer's start"
KERAS_LOADED = "import sys; print(any(name == 'keras' or name.startswith('keras.') for name in sys.modules))"
STARTS = {
    # The entry point's settings first, then TensorFlow, as a task's serving or training code imports it.
    TRAINER_START: f"import trainer.__main__; import tensorflow; {KERAS_LOADED}",
    "plain import": f"import tensorflow; import trainer.__main__; {KERAS_LOADED}",
}


def cpu_seconds(code: str) -> tuple[float, bool]:
    """CPU seconds (user + system) of a fresh interpreter running `code`, and whether Keras was loaded."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("TF_USE_")}
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    child = subprocess.Popen([sys.executable, "-c", code], cwd=PROJECT_ROOT, env=env, stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    said = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"{code!r} exited {child.returncode}")
    return usage.ru_utime + usage.ru_stime, said.strip().endswith("True")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    seconds: dict[str, list[float]] = {name: [] for name in STARTS}
    keras: dict[str, bool] = {}
    for round_ in range(args.repeats):
        for name, code in STARTS.items():
            spent, keras[name] = cpu_seconds(code)
            seconds[name].append(spent)
            print(f"round {round_ + 1}: {name}: {spent:.2f} CPU-s, Keras loaded: {keras[name]}", flush=True)
    medians = {name: statistics.median(values) for name, values in seconds.items()}
    ratio = medians[TRAINER_START] / medians["plain import"]
    print()
    for name, median in medians.items():
        print(f"{name:16} median {median:.2f} CPU-s of {args.repeats}")
    print(f"ratio {ratio:.2f} (target at most {TARGET_RATIO}); the trainer's start loads Keras: {keras[TRAINER_START]}")
    met = ratio <= TARGET_RATIO and not keras[TRAINER_START]
    print("target met" if met else "TARGET MISSED")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
