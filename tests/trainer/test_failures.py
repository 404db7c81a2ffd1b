"""The chief's last words name what failed, in TensorFlow's own message without the context it wraps
it in: a full checkpoint volume reads as such, not as TensorFlow's hint about memory."""

from __future__ import annotations

import tensorflow as tf

from trainer.failures import CheckpointError, describe_cause

# As TensorFlow 2.21 raised it on real pods when the chief's checkpoint volume was full (2026-12-07).
FULL_DISK = """Graph execution error:

Detected at node SaveV2 defined at (most recent call last):
  File "<frozen runpy>", line 198, in _run_module_as_main

  File "/opt/tfk8s/trainer/checkpoints.py", line 58, in <lambda>

  File "/usr/local/lib/python3.11/dist-packages/tensorflow/python/checkpoint/functional_saver.py", line 557, in tf_function_save

/checkpoints/ckpt-400_temp/part-00000-of-00002.data-00000-of-00001.tempstate1163829468890609536; No space left on device
\t [[{{node SaveV2}}]]
Hint: If you want to see a list of allocated tensors when OOM happens, add report_tensor_allocations_upon_oom to RunOptions for current allocation info. This isn't available when running in Eager mode
 [Op:__inference_tf_function_save_1473]"""


def test_a_full_disk_reads_as_a_full_disk():
    error = tf.errors.ResourceExhaustedError(None, None, FULL_DISK)
    assert describe_cause(error) == (
        "ResourceExhaustedError: /checkpoints/ckpt-400_temp/part-00000-of-00002.data-00000-of-00001"
        ".tempstate1163829468890609536; No space left on device"
    )
    said = str(CheckpointError("write the checkpoint of step 400 to", "/checkpoints", error))
    assert said.startswith("could not write the checkpoint of step 400 to /checkpoints: ResourceExhaustedError: ")
    assert "OOM" not in said and "File " not in said


def test_a_plain_message_is_kept_whole():
    error = tf.errors.UnavailableError(None, None, "failed to connect to all addresses; /job:ps/replica:0/task:0")
    assert describe_cause(error) == "UnavailableError: failed to connect to all addresses; /job:ps/replica:0/task:0"
    assert describe_cause(ValueError("bad")) == "ValueError: bad"
