"""`python -m trainer`: run as the task TF_CONFIG names (chief, ps, worker or evaluator)."""

from __future__ import annotations

import os
import sys
import threading
from typing import Callable

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# The trainer uses no Keras, yet `import tensorflow` loads Keras 3's optimizers (2 of the 8.5 CPU
# seconds a task spends importing TensorFlow on a 2-core server) unless told that the legacy tf_keras
# is in use; tfk8s's image has no tf_keras, so then nothing is loaded. Team programs never run here.
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

from .cluster import (  # noqa: E402
    TF_CONFIG_ENV,
    ClusterConfigError,
    TaskConfig,
    read_settings,
    read_task_config,
    serve,
)
from .lifeline import die_with_launcher  # noqa: E402
from .peers import set_grpc_options  # noqa: E402
from .settings import SettingsError, TrainerSettings  # noqa: E402
from .shared_names import CHIEF, EVALUATOR, PS, WORKER, role_of  # noqa: E402
from .termination import exit_on_termination  # noqa: E402


def _serve(task: TaskConfig, settings: TrainerSettings, finish: threading.Event) -> int:
    serve(task)
    return 0


# The chief's and the evaluator's programs import TensorFlow's training code: only the task that runs one.
def _coordinate(task: TaskConfig, settings: TrainerSettings, finish: threading.Event) -> int:
    from .chief import main as chief_main

    return chief_main(task, settings, finish)


def _evaluate(task: TaskConfig, settings: TrainerSettings, finish: threading.Event) -> int:
    from .evaluator import main as evaluator_main

    return evaluator_main(task, settings)


# Each role's program. read_task_config knows the roles of trainer/shared_names.py's table: a role
# added there without a program here is refused by name, never run as another role's.
PROGRAMS: dict[str, Callable[[TaskConfig, TrainerSettings, threading.Event], int]] = {
    CHIEF: _coordinate,
    PS: _serve,
    WORKER: _serve,
    EVALUATOR: _evaluate,
}


def main() -> int:
    die_with_launcher()
    try:
        task = read_task_config()
        settings = read_settings()
        # A JobSet task's TF_CONFIG is composed; TensorFlow and user code read it from the environment.
        os.environ.setdefault(TF_CONFIG_ENV, task.tf_config_json())
    except (ClusterConfigError, SettingsError) as error:
        print(f"trainer: {error}", file=sys.stderr)
        return 2
    program, role = PROGRAMS.get(task.task_type), role_of(task.task_type)
    if program is None or role is None:
        print(f"trainer: task type '{task.task_type}' has no program in tfk8s's trainer", file=sys.stderr)
        return 2
    # Both before TensorFlow starts a thread or opens a channel.
    finish = threading.Event()  # the coordinator's: set on SIGUSR1, it then finishes where it stands
    exit_on_termination(task.name, on_finish=finish.set if role.coordinates else None)
    set_grpc_options()
    return program(task, settings, finish)


if __name__ == "__main__":
    # os._exit: the coordinator's threads must not hold a finished (or failed) chief open.
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
