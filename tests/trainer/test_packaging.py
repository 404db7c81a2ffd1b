"""The trainer runs unchanged in the stock tensorflow/tensorflow image."""

from __future__ import annotations

import ast
import sys

from tests.trainer.conftest import PROJECT_ROOT

# What the stock image has besides the standard library.
IMAGE_PACKAGES = {"tensorflow", "numpy"}
# The log archive's scripts run in their pods as files beside the protocol they import
# (tests/objects/test_log_archive_scripts.py runs them from a folder holding only those files).
BESIDE_IN_THEIR_POD = {"log_shipper.py": {"log_protocol"}, "log_collector.py": {"log_protocol"}}


def top_level_imports(path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_pod_modules_import_only_the_standard_library_and_tensorflow():
    """trainer/'s own modules are the pods' program: only the launcher (trainer/local/) and the report
    (trainer/report/, with its plots and progress bars) run on a developer's machine, in folders of
    their own."""
    for path in sorted((PROJECT_ROOT / "trainer").glob("*.py")):
        allowed = set(sys.stdlib_module_names) | IMAGE_PACKAGES | {"__future__"}
        allowed |= BESIDE_IN_THEIR_POD.get(path.name, set())
        outside = top_level_imports(path) - allowed
        assert outside == set(), f"{path.name} imports {sorted(outside)}, absent from the stock image"


def test_settings_module_is_standard_library_only():
    imports = top_level_imports(PROJECT_ROOT / "trainer" / "settings.py")
    assert imports <= set(sys.stdlib_module_names) | {"__future__"}
