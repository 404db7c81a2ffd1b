"""Where TensorBoard reads the experiment's event files, and when a stack gives it nothing to read."""

from __future__ import annotations

import posixpath
from typing import Optional

from .models import CONFIG_NAMESPACE, StackConfig
from .remote_storage import TENSORBOARD_SCHEMES, remote_url, storage_url_problem
from .roles import CHECKPOINT_MOUNT, checkpoint_volume_folder, is_remote
from .tensorboard import DEFAULT_LOG_FOLDER


def tensorboard_log_dir(config: StackConfig) -> Optional[str]:
    """What TensorBoard reads and tfk8s's trainer writes its scalars into; None without TensorBoard,
    or where the stack keeps event files nowhere TensorBoard can read (tensorboard_checks says so)."""
    tensorboard = config.tensorboard
    if tensorboard is None:
        return None
    if tensorboard.log_dir is not None:
        # A path as the kubelet takes it (a subPath of the evaluator's: no '//', no trailing '/').
        return tensorboard.log_dir if is_remote(tensorboard.log_dir) else posixpath.normpath(tensorboard.log_dir)
    if config.cluster.chief.checkpoint_volume is not None:
        return f"{CHECKPOINT_MOUNT}/{DEFAULT_LOG_FOLDER}"
    if config.program is None and is_remote(config.trainer.checkpoint_dir):
        return f"{config.trainer.checkpoint_dir.rstrip('/')}/{DEFAULT_LOG_FOLDER}"
    return None


def tensorboard_checks(config: StackConfig) -> list[str]:
    if config.tensorboard is None:
        return []
    ns = CONFIG_NAMESPACE
    log_dir = tensorboard_log_dir(config)
    program = config.program
    if program is not None and not program.has_chief and (log_dir is None or not is_remote(log_dir)):
        # No chief, so no checkpointVolume: a remote folder is the one place left.
        return [
            f"{ns}:tensorboard with {ns}:program.done: {program.done_text}: there is no chief task, so no "
            f"{ns}:cluster.chief.checkpointVolume for TensorBoard to read; give a remote {ns}:tensorboard.logDir "
            "(gs://, s3://) that your workers write their event files into (TFK8S_TENSORBOARD_DIR)"
        ]
    if log_dir is None:
        return [
            f"{ns}:tensorboard: TensorBoard reads the event files the tasks write, and this stack keeps them "
            f"nowhere its pod can read; set {ns}:cluster.chief.checkpointVolume (it then reads "
            f"{CHECKPOINT_MOUNT}/{DEFAULT_LOG_FOLDER} there) or a remote {ns}:tensorboard.logDir (gs://, s3://)"
        ]
    # Named by the key it comes from: the default follows a remote checkpointDir.
    key = f"{ns}:tensorboard.logDir"
    if config.tensorboard.log_dir is None:
        if storage_url_problem(config.trainer.checkpoint_dir):
            return []  # the checkpointDir's own check says why: the folder under it is no better
        key += f" (left out: the tensorboard folder of {ns}:trainer.checkpointDir)"
    problem = storage_url_problem(log_dir)
    if problem:
        return [f"{key}: {log_dir!r} {problem}; TensorBoard reads {_readable()}"]
    url = remote_url(log_dir)
    if url is not None:
        if url.scheme not in TENSORBOARD_SCHEMES:
            return [f"{key}: {log_dir!r} names {url.scheme}://, which TensorBoard cannot read; it reads {_readable()}"]
        return []
    if config.cluster.chief.checkpoint_volume is None:
        return [
            f"{ns}:tensorboard.logDir: '{log_dir}' is a path, and TensorBoard's pod mounts only "
            f"{ns}:cluster.chief.checkpointVolume, which this stack has not; set checkpointVolume or give a "
            "remote URL (gs://, s3://)"
        ]
    folder = checkpoint_volume_folder(log_dir)
    if folder is None:
        return [
            f"{ns}:tensorboard.logDir: '{log_dir}' is not under {CHECKPOINT_MOUNT}, where the chief's "
            "checkpointVolume is mounted and the one folder TensorBoard's pod reads; give a folder under it "
            "or a remote URL"
        ]
    if folder == "" and config.cluster.evaluator_count:
        return [
            f"{ns}:tensorboard.logDir: '{log_dir}' is the whole checkpoint volume, which the evaluator mounts "
            "read-only (it must never touch the chief's checkpoints), so it could write no eval_loss there; give "
            f"a folder under it (e.g. '{CHECKPOINT_MOUNT}/{DEFAULT_LOG_FOLDER}', the default) or a remote URL"
        ]
    return []


def _readable() -> str:
    schemes = ", ".join(f"{scheme}://" for scheme in TENSORBOARD_SCHEMES)
    return f"{schemes} URLs and folders under {CHECKPOINT_MOUNT} (the chief's checkpointVolume)"
