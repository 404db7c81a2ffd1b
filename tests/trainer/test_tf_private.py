"""TensorFlow's private API the trainer relies on (trainer/tf_private.py): the eager context's
`update_server_def`, which the ClusterCoordinator calls when a worker is lost. Fails the day
TensorFlow renames it or changes how it is called."""

from __future__ import annotations

import inspect

from tensorflow.python.distribute.coordinator import cluster_coordinator
from tensorflow.python.eager import context as eager_context

from trainer.tf_private import before_cluster_updates


def test_the_coordinator_still_updates_the_cluster_through_the_eager_contexts_method():
    source = inspect.getsource(cluster_coordinator)
    assert "context.context().update_server_def(" in source, "the coordinator no longer calls it: the wait is moot"
    parameters = list(inspect.signature(eager_context.Context.update_server_def).parameters)
    assert parameters[:2] == ["self", "server_def"]


def test_what_runs_first_runs_before_each_update_and_wrapping_again_replaces_it():
    ctx = eager_context.context()
    original = ctx.__dict__.pop("update_server_def", None)  # an instance attribute left by an earlier wrap
    calls: list[str] = []
    try:
        ctx.update_server_def = lambda server_def, *args, **kwargs: calls.append(f"update {server_def}")
        before_cluster_updates(lambda: calls.append("first"))
        before_cluster_updates(lambda: calls.append("second"))  # a later chief of this process
        ctx.update_server_def("sd")
        assert calls == ["second", "update sd"]
    finally:
        ctx.__dict__.pop("update_server_def", None)
        if original is not None:
            ctx.update_server_def = original
