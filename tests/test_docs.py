"""The README is one screen of orientation, and every link in it and in docs/ leads somewhere."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from components.spec.stack_files import PROJECT_ROOT

PAGES = [PROJECT_ROOT / "README.md", *sorted((PROJECT_ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_the_readme_is_at_most_200_lines():
    lines = (PROJECT_ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= 200, f"README.md has {lines} lines: move what a user looks up into docs/"


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_relative_link_resolves(page: Path):
    targets = [m.group(1) for m in LINK.finditer(page.read_text(encoding="utf-8")) if "://" not in m.group(1)]
    broken = [target for target in targets if not (page.parent / target).exists()]
    assert broken == [], f"{page.relative_to(PROJECT_ROOT)} links to missing {broken}"
