"""The `devices` line every task logs at start: a GPU worker shows its GPU, or why it has none."""

from __future__ import annotations

import io
import json

from trainer.devices import devices_event, granted_gpus, log_devices


def test_a_gpu_worker_lists_its_gpu():
    event = devices_event("worker-3", ["CPU:0", "GPU:0"], "GPU-8a1c", cuda_build=True)
    assert event == {"event": "devices", "task": "worker-3", "devices": ["CPU:0", "GPU:0"], "gpus": 1}


def test_gpus_given_to_a_cpu_build_are_named_as_idle():
    event = devices_event("worker-0", ["CPU:0"], "GPU-8a1c", cuda_build=False)
    assert event["gpus"] == 0
    assert event["warning"].startswith("worker-0 was given GPUs (NVIDIA_VISIBLE_DEVICES=GPU-8a1c) but trains on its CPU")
    assert "TensorFlow's CPU build" in event["warning"] and "tfk8s:cluster.gpuImage" in event["warning"]
    assert "no usable GPU" in devices_event("worker-0", ["CPU:0"], "all", cuda_build=True)["warning"]


def test_a_cpu_task_without_gpus_has_nothing_to_warn_of():
    assert "warning" not in devices_event("ps-0", ["CPU:0"], None, cuda_build=False)
    assert granted_gpus({}) is None
    assert granted_gpus({"NVIDIA_VISIBLE_DEVICES": "void"}) is None
    assert granted_gpus({"NVIDIA_VISIBLE_DEVICES": "0,1"}) == "0,1"


def test_this_machines_tensorflow_logs_its_cpu():
    out = io.StringIO()
    log_devices("ps-0", out)
    event = json.loads(out.getvalue())
    assert event["event"] == "devices" and "CPU:0" in event["devices"] and event["task"] == "ps-0"
