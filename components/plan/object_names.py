"""The names of an experiment's objects in its namespace (pure, no Pulumi).

In a namespace tfk8s creates for one experiment (the default, `tf-<stack>`), every object has a
short fixed name: the JobSet `tf`, the ConfigMap `tfk8s-trainer`, the Service `worker`. In a
team's namespace (`cluster.namespace: {name, existing: true}`), other experiments and the team's
own Secrets, claims and ConfigMaps live beside them, so every name starts with the stack's:
`<stack>-tf`, `<stack>-tfk8s-trainer`. Objects, the references between them, task addresses and
the commands that read a live experiment all take their names from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..spec.kubernetes_limits import DNS1123_LABEL_RE
from ..spec.models import CONFIG_NAMESPACE, StackConfig

# The fixed names, as a namespace of tfk8s's own has them.
JOBSET = "tf"  # its name starts every JobSet pod's host name
NETWORK_POLICY = "tf-grpc-from-experiment-only"
EGRESS_POLICY = "tf-egress-to-listed-only"  # with tfk8s:cluster.egress
CHECKPOINT_CLAIM = "tfk8s-checkpoints"
TRAINER_CONFIG_MAP = "tfk8s-trainer"  # the trainer's code
TRAINER_ENV_CONFIG_MAP = "tfk8s-trainer-env"  # the environment every task shares
CLUSTER_CONFIG_MAP = "tfk8s-cluster"  # the TF cluster, when it is too large for a variable
PROGRAM_CONFIG_MAP = "tfk8s-program"  # a program's `source`
PROGRAM_SECRET = "tfk8s-program-env"  # a program's secret `env` values
LOCAL_QUEUE = "tfk8s"  # into the stack's Kueue ClusterQueue
TENSORBOARD = "tensorboard"  # its Deployment, Service and NetworkPolicy (tfk8s:tensorboard)
LOG_ARCHIVE = "tfk8s-logs"  # the collector's Deployment, Service, NetworkPolicy, code and claim (tfk8s:logs)

# A JobSet pod is `<jobset>-<role>-0-<completion index>-<5 characters>`, at most 63: with the
# longest role and completion indexes of six digits, what is left for the stack's name.
LONGEST_JOBSET_POD_TAIL = f"-{JOBSET}-worker-0-999999-abcde"
MAX_SHARED_STACK_NAME = 63 - len(LONGEST_JOBSET_POD_TAIL)


@dataclass(frozen=True)
class ObjectNames:
    # "" in a namespace of the experiment's own; "<stack>-" in a shared one.
    prefix: str = ""

    @classmethod
    def of(cls, config: StackConfig) -> "ObjectNames":
        return cls(f"{config.stack}-" if config.shares_namespace else "")

    def named(self, name: str) -> str:
        return f"{self.prefix}{name}"

    @property
    def jobset(self) -> str:
        return self.named(JOBSET)

    @property
    def network_policy(self) -> str:
        return self.named(NETWORK_POLICY)

    @property
    def egress_policy(self) -> str:
        return self.named(EGRESS_POLICY)

    @property
    def tensorboard(self) -> str:
        return self.named(TENSORBOARD)

    @property
    def log_archive(self) -> str:
        return self.named(LOG_ARCHIVE)

    @property
    def checkpoint_claim(self) -> str:
        return self.named(CHECKPOINT_CLAIM)

    @property
    def trainer_config_map(self) -> str:
        return self.named(TRAINER_CONFIG_MAP)

    @property
    def trainer_env_config_map(self) -> str:
        return self.named(TRAINER_ENV_CONFIG_MAP)

    @property
    def cluster_config_map(self) -> str:
        return self.named(CLUSTER_CONFIG_MAP)

    @property
    def program_config_map(self) -> str:
        return self.named(PROGRAM_CONFIG_MAP)

    @property
    def program_secret(self) -> str:
        return self.named(PROGRAM_SECRET)

    @property
    def local_queue(self) -> str:
        return self.named(LOCAL_QUEUE)

    def service(self, task_type: str) -> str:
        """A role's headless Service (StatefulSet model)."""
        return self.named(task_type)

    def workload(self, group_name: str) -> str:
        """A task group's StatefulSet, or the chief's Job (StatefulSet model)."""
        return self.named(group_name)


def shared_name_error(config: StackConfig) -> Optional[str]:
    """In a shared namespace the stack's name starts every object's and pod's name: it must be a
    DNS label short enough for the longest pod name."""
    if not config.shares_namespace:
        return None
    stack = config.stack
    if DNS1123_LABEL_RE.match(stack) and len(stack) <= MAX_SHARED_STACK_NAME:
        return None
    return (
        f"{CONFIG_NAMESPACE}:cluster.namespace: in the shared namespace '{config.namespace}' every object and "
        f"pod of the experiment is named after the stack, so the stack's name '{stack}' must be a DNS label "
        f"(lower-case letters, digits and '-') of at most {MAX_SHARED_STACK_NAME} characters; rename the "
        "stack, or let tfk8s create a namespace of the experiment's own"
    )
