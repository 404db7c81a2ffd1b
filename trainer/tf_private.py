"""The one place the trainer reaches into TensorFlow's private API: the eager context's
`update_server_def`, which the ClusterCoordinator calls when a worker is lost (chief.py says why
the trainer runs something before it). tests/trainer/test_tf_private.py fails the day TensorFlow
changes it."""

from __future__ import annotations

import functools
from typing import Any, Callable


def before_cluster_updates(first: Callable[[], object]) -> None:
    """Call `first` ahead of every `update_server_def` of this process's eager context. Replaces an
    earlier wrapper rather than stacking on it (a process may run several chiefs, one at a time)."""
    from tensorflow.python.eager import context as eager_context

    ctx = eager_context.context()
    update = getattr(ctx.update_server_def, "__wrapped__", ctx.update_server_def)

    @functools.wraps(update)
    def update_after_first(server_def: Any, *args: Any, **kwargs: Any) -> Any:
        first()
        return update(server_def, *args, **kwargs)

    ctx.update_server_def = update_after_first
