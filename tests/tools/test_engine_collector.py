"""The engine runs tfk8s's program inline, and the program pauses this process's garbage collector
for its run (components/resources/entry_point.py): `run_engine` gives the process it back."""

from __future__ import annotations

import gc
from types import SimpleNamespace

from tools.engine.workspace import run_engine


class InlineStack:
    """An automation stack whose command runs the program as the engine does: in this process."""

    name = "inline"
    workspace = SimpleNamespace(env_vars={})  # no file backend: no lock of a killed run to look for

    def export_stack(self):
        return SimpleNamespace(deployment={})

    def preview(self, **options):
        gc.freeze()
        gc.disable()
        return options


def test_the_process_has_its_collector_back_after_an_inline_run():
    assert gc.isenabled()
    run_engine(InlineStack(), "preview")
    assert gc.isenabled() and gc.get_freeze_count() == 0
    gc.disable()
    try:
        run_engine(InlineStack(), "preview")
        assert not gc.isenabled(), "a process that had it off keeps it off"
    finally:
        gc.enable()
