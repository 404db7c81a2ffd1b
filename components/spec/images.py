"""Image references: what pins one."""

from __future__ import annotations

PINNED_HELP = "must be pinned to a tag other than latest or a digest"


def is_pinned(image: str) -> bool:
    """A digest, or a tag other than latest: the image a task runs does not change under it."""
    return "@" in image or (":" in image.rsplit("/", 1)[-1] and not image.endswith(":latest"))
