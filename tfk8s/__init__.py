"""tfk8s as a library: TensorFlow parameter-server experiments as Pulumi components.

    from tfk8s import TFExperiment, TFExperimentArgs

This folder is the root package of the wheel `make dist` writes (docs/library.md). The wheel puts
components/ and trainer/ under it, as tfk8s.components and tfk8s.trainer, so that it installs no
top-level name but `tfk8s`: a Pulumi project of one's own may well have a `components` package.
From a checkout, import `components` as before; this package imports only once installed.
"""

from __future__ import annotations

from importlib.metadata import version

from .components.resources.node_pool import NodePool
from .components.resources.tf_cluster import TFCluster
from .components.resources.tf_experiment import TFExperiment, TFExperimentArgs
from .components.spec.logs import LogsSpec
from .components.spec.models import ClusterSpec, StackConfigError
from .components.spec.pools import NodePoolSpec
from .components.spec.program import ProgramSpec
from .components.spec.tensorboard import TensorBoardSpec
from .trainer.settings import TrainerSettings

__version__ = version("tfk8s")

__all__ = [
    "ClusterSpec",
    "LogsSpec",
    "NodePool",
    "NodePoolSpec",
    "ProgramSpec",
    "StackConfigError",
    "TFCluster",
    "TFExperiment",
    "TFExperimentArgs",
    "TensorBoardSpec",
    "TrainerSettings",
]
