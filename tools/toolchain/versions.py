"""tools/toolchain/versions.env, the one record of the toolchain's versions, for Python."""

from __future__ import annotations

from pathlib import Path

VERSIONS_FILE = Path(__file__).resolve().parent / "versions.env"


def recorded_versions() -> dict[str, str]:
    """Its NAME=value lines."""
    pairs = {}
    for line in VERSIONS_FILE.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            name, value = line.split("=", 1)
            pairs[name] = value
    return pairs
