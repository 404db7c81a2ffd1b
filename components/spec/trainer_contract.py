"""What components/ reads from the trainer: the names a task's pod and its objects agree on
(shared_names, cluster), the trainer's settings (settings), the kubelet's $(VAR) rules
(kubelet_expansion), the chief's log lines (log_lines), the JSON `export` prints (stack_export) and
the gRPC channel options TensorFlow reads (peers), which a team's program is given too.

The trainer is a package beside components/: in a checkout both are top-level (`python -m
components`, `from components.tf_experiment import ...`); in the wheel (`make dist`,
docs/library.md) they are tfk8s.components and tfk8s.trainer, so that the wheel claims no
top-level name but `tfk8s`. This module alone tells the two apart; the rest of components/
imports its own modules relatively and the trainer's from here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

# The log archive's protocol is re-exported whole: the shipper and the collector import it as a file
# beside them in their pods; components/ (log_shipping, log_archive, task_shell, the archive's
# reader) reads its names from here.
if TYPE_CHECKING or __package__ == "components.spec":
    from trainer import cluster, kubelet_expansion, log_lines, peers, settings, shared_names, stack_export
    from trainer import log_protocol as log_protocol
else:
    from ...trainer import cluster, kubelet_expansion, log_lines, peers, settings, shared_names, stack_export
    from ...trainer import log_protocol as log_protocol

CLUSTER_ENV = cluster.CLUSTER_ENV
CLUSTER_FILE_ENV = cluster.CLUSTER_FILE_ENV
FIRST_INDEX_ENV = cluster.FIRST_INDEX_ENV
TASK_INDEX_ENV = cluster.TASK_INDEX_ENV
TASK_TYPE_ENV = cluster.TASK_TYPE_ENV

escaped = kubelet_expansion.escaped
references = kubelet_expansion.references

EvaluationLine = log_lines.EvaluationLine
SUMMARY = log_lines.SUMMARY
last_summary = log_lines.last_summary
read_evaluation_event = log_lines.read_evaluation_event
read_event = log_lines.read_event
read_progress_line = log_lines.read_progress_line

CHECKPOINTS_KEPT = settings.CHECKPOINTS_KEPT
LARGEST_NUMBER = settings.LARGEST_NUMBER
SETTINGS_ENV = settings.SETTINGS_ENV
SettingsError = settings.SettingsError
TrainerSettings = settings.TrainerSettings
to_camel = settings.to_camel

GRPC_OPTIONS_ENV = peers.GRPC_OPTIONS_ENV
grpc_options_value = peers.grpc_options_value

PROGRAM_ROLES = stack_export.PROGRAM_ROLES
ProgramExport = stack_export.ProgramExport
StackExport = stack_export.StackExport
export_text = stack_export.export_text
secret_env_value = stack_export.secret_env_value

COMPLETION_INDEX = shared_names.COMPLETION_INDEX
COMPONENT = shared_names.COMPONENT
GPU_PRODUCT = shared_names.GPU_PRODUCT
GPU_RESOURCE = shared_names.GPU_RESOURCE
INSTANCE = shared_names.INSTANCE
POD_INDEX = shared_names.POD_INDEX
PRODUCTION = shared_names.PRODUCTION
PROGRAM = shared_names.PROGRAM
TFK8S_GPU_PRODUCT = shared_names.TFK8S_GPU_PRODUCT
TF_PORT = shared_names.TF_PORT
TF_PORT_NAME = shared_names.TF_PORT_NAME
TRAINER_COMMAND = shared_names.TRAINER_COMMAND
TRAINER_PACKAGE = shared_names.TRAINER_PACKAGE
TRAINER_PROGRAM = shared_names.TRAINER_PROGRAM
TENSORBOARD_DIR_ENV = shared_names.TENSORBOARD_DIR_ENV
TASK_NAME_SEPARATOR = shared_names.TASK_NAME_SEPARATOR
task_name = shared_names.task_name
parse_task_name = shared_names.parse_task_name
