"""What a task trains on: the devices TensorFlow sees, logged once at start.

A GPU worker that runs TensorFlow's CPU build, or whose GPUs the container
runtime did not hand over, trains on its CPU while its GPUs sit idle; the log
line says so, so that a user sees it without reading nvidia-smi.
"""

from __future__ import annotations

import os
from typing import Any, Mapping, Optional, TextIO

from .log_lines import event_line

# Set in the container by the NVIDIA device plugin to the GPUs allocated to it.
VISIBLE_GPUS_ENV = "NVIDIA_VISIBLE_DEVICES"


def granted_gpus(environ: Mapping[str, str] = os.environ) -> Optional[str]:
    """The GPUs the container runtime was told to hand over, if any ('void'/'none': none)."""
    value = environ.get(VISIBLE_GPUS_ENV, "").strip()
    return value if value and value not in ("void", "none") else None


def devices_event(task: str, physical: list[str], granted: Optional[str], cuda_build: bool) -> dict[str, Any]:
    """The `devices` log event; `warning` when the pod has GPUs that TensorFlow does not use."""
    gpus = [name for name in physical if name.startswith("GPU:")]
    event: dict[str, Any] = {"event": "devices", "task": task, "devices": physical, "gpus": len(gpus)}
    if granted and not gpus:
        why = "the image is TensorFlow's CPU build" if not cuda_build else "TensorFlow found no usable GPU"
        event["warning"] = (
            f"{task} was given GPUs ({VISIBLE_GPUS_ENV}={granted}) but trains on its CPU: {why} "
            "(tfk8s:cluster.gpuImage names the GPU build)"
        )
    return event


def log_devices(task: str, out: Optional[TextIO] = None) -> dict[str, Any]:
    import tensorflow as tf

    # "/physical_device:GPU:0" -> "GPU:0"
    physical = [device.name.rsplit("physical_device:", 1)[-1] for device in tf.config.list_physical_devices()]
    event = devices_event(task, physical, granted_gpus(), tf.test.is_built_with_cuda())
    print(event_line(**event), file=out, flush=True)
    return event
