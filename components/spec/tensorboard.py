"""`tfk8s:tensorboard`: TensorBoard for the experiment, reading its event files read-only, reached
through `python -m components tensorboard <stack>` (a port-forward) and from nowhere else unless
the stack lists who may connect."""

from __future__ import annotations

from typing import Optional

from pydantic import Field, field_validator

from .images import image_problem
from .model_base import StackModel as _Model
from .quantities import CpuQuantity, DnsLabel, MemoryQuantity
from .shown_values import shown

# What TensorBoard reads, under the chief's checkpoint volume, unless the stack says otherwise.
DEFAULT_LOG_FOLDER = "tensorboard"
TENSORBOARD_PORT = 6006


class TensorBoardPeer(_Model):
    """Pods that may connect to TensorBoard's port: a NetworkPolicy peer."""

    namespace: Optional[DnsLabel] = Field(
        default=None, description="pods of this namespace (default: the experiment's own)"
    )
    pod_labels: dict[str, str] = Field(
        default_factory=dict, description="only the pods with these labels (default: every pod of the namespace)"
    )


class TensorBoardSpec(_Model):
    image: str = Field(
        min_length=1,
        description="an image with TensorBoard installed, pinned to a tag or a digest (TensorFlow's own images have "
        "none since 2.21)",
    )
    log_dir: Optional[str] = Field(
        default=None,
        description="what TensorBoard reads: a folder under /checkpoints (the chief's checkpointVolume) or a remote "
        "URL (gs://, s3://); default: /checkpoints/tensorboard, or checkpointDir/tensorboard with a remote "
        "checkpointDir; tfk8s's trainer's chief and evaluator write their scalars there, and every task has "
        "it as TFK8S_TENSORBOARD_DIR (on the volume only the chief and the evaluator may write)",
    )
    allow_from: tuple[TensorBoardPeer, ...] = Field(
        default=(),
        description="who may connect to its port besides `python -m components tensorboard` (default: no one)",
    )
    cpu: CpuQuantity = Field(default="250m", description="CPU request of TensorBoard's pod")
    memory: MemoryQuantity = Field(default="1Gi", description="memory request and limit of TensorBoard's pod")

    @field_validator("image")
    @classmethod
    def _image_pinned(cls, image: str) -> str:
        problem = image_problem(image)
        if problem is not None:
            raise ValueError(f"image {shown(image)} {problem}")
        return image
