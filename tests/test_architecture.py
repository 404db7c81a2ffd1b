"""The house's layout: components/ in layers and no import circles (import-linter's contracts in
.importlinter), and the package's top level kept to its entry points."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from components.spec.stack_files import PROJECT_ROOT

LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def test_the_import_contracts_hold():
    """Each layer of components/ imports only from the layers below it (resources and live apart),
    and no package of components/, trainer/ or tools/ has modules that import each other in a circle."""
    result = subprocess.run(
        [str(LINT_IMPORTS), "--config", str(PROJECT_ROOT / ".importlinter"), "--no-cache"],
        cwd=PROJECT_ROOT, capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "0 broken" in result.stdout


def test_components_top_level_holds_only_its_entry_points():
    """The layers are sub-packages; directly in components/ only the command line's entry and the
    modules users' Pulumi programs import by their old paths."""
    top_level = sorted(path.name for path in (PROJECT_ROOT / "components").glob("*.py"))
    assert top_level == ["__init__.py", "__main__.py", "program.py", "tf_experiment.py"], top_level


def test_no_module_is_over_400_lines():
    """A module that grows past 400 lines holds more than one thing: split it along its seams."""
    sizes = {
        str(path.relative_to(PROJECT_ROOT)): path.read_text(encoding="utf-8").count("\n")
        for package in ("components", "trainer", "tools")
        for path in (PROJECT_ROOT / package).rglob("*.py")
    }
    assert {path: lines for path, lines in sizes.items() if lines > 400} == {}
