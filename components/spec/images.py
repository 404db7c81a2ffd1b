"""Image references: what the models take as an image (one the kubelet can pull, pinned)."""

from __future__ import annotations

from typing import Optional

from .kubernetes_limits import image_reference, image_reference_problem

PINNED_HELP = "must be pinned to a tag other than latest or a digest"


def is_pinned(image: str) -> bool:
    """A digest, or a tag other than latest: the image a task runs does not change under it. Text that is
    no image reference (kubernetes_limits.image_reference) pins nothing."""
    reference = image_reference(image)
    return reference is not None and (reference.digest is not None or reference.tag not in (None, "latest"))


def image_problem(image: str) -> Optional[str]:
    """Why `image` cannot be a task's image, or None: no reference the kubelet can pull, or not pinned."""
    return image_reference_problem(image) or (None if is_pinned(image) else PINNED_HELP)
