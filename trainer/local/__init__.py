"""`python -m trainer.local`: the same TF_CONFIG topology as processes on one machine.

    python -m trainer.local --ps 2 --workers 2 --steps 200 [--partition auto|range|none] ...
    python -m trainer.local --stack scene1-case3     # the stack's trainer settings and PS:worker ratio
    python -m trainer.local --stack my-program       # a stack's own program (tfk8s:program), as processes

Starts PS and workers, then the chief, on loopback; shows the chief's
progress; prints as its last line one JSON object (the chief's summary plus
`ps_cpu_seconds` and `ps_imbalance`, measured from /proc from the first
finished call to the end of training). Every process it starts runs in its own process group and is stopped
on success, failure, Ctrl-C or SIGTERM. SIGUSR1 has the chief finish where it
stands (checkpoint, summary, exit 0), as it does in a pod. Workers that die are
restarted, as Kubernetes would; `--kill TASK@STEP` kills a task on purpose (a
fault drill). `--evaluator 1` (or a stack's `cluster.evaluator`) runs TensorFlow's
side-car evaluator beside them, on the chief's checkpoints (trainer/local/evaluator.py).
A stack that runs the team's own program runs its command per
role instead (trainer/local/program.py), with the environment its pods get, and
ends with the program's own exit codes.
"""

from .cli import add_setting_flags, main
from .cluster import LocalCluster
from .errors import LaunchError, PortClash
from .stacks import MAX_LOCAL_PS, MAX_LOCAL_WORKERS, StackExperiment, read_stack, scale_to_machine
from .tasks import Task

__all__ = [
    "LaunchError",
    "LocalCluster",
    "MAX_LOCAL_PS",
    "MAX_LOCAL_WORKERS",
    "PortClash",
    "StackExperiment",
    "Task",
    "add_setting_flags",
    "main",
    "read_stack",
    "scale_to_machine",
]
