"""Images for a team's program on the local cluster, which reaches no registry.

- `make image NAME=<name> REQUIREMENTS=<file>` builds `localhost/tfk8s/<name>:<TensorFlow
  version>`: the nodes' TensorFlow image plus the file's pinned packages, as a layer of its own
  on top of the TensorFlow image's (the nodes hold that one already, and keep one copy of it).
  The packages are installed as pinned, with what they depend on beyond the TensorFlow image
  (pip resolves the file together with the image's TensorFlow; what the image has already, and
  TensorFlow under any of its names, is left out). Cached by its inputs: the same file builds
  nothing.
- `make load-image ARCHIVE=<file>` takes an image built elsewhere (`docker save`, `podman
  save`, an OCI tarball), as `kind load image-archive` does.

Both keep the archive in the cache (`images/programs/`), whose every archive a real node
imports when it starts (so a later `make cluster-up` has them too); `python -m
tools.localcluster image | load-image` also imports it at once into the real nodes of a running
local cluster (tools/localcluster/realnodes.py).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

from .archive import ImageConfig, write_image_archive
from .build import ensure_images
from .images import (
    DNS_NAME,
    PROGRAM_IMAGES,
    TENSORFLOW_PACKAGE,
    Image,
    cache_root,
    earlier_archives,
    program_image,
    tensorflow_image,
)

Say = Callable[[str], None]
PIP = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet"]
# One framework under several distribution names: a package that requires `tensorflow` runs on
# the image's `tensorflow-cpu`.
TENSORFLOW_NAMES = frozenset({"tensorflow", "tensorflow-cpu", "tensorflow-intel", "tensorflow-gpu"})


def _say(message: str) -> None:
    print(f"[image] {message}", flush=True)


def build_program_image(name: str, requirements: Path, say: Say = _say) -> Image:
    """The image, built unless the cache has it; the archive of an earlier build of `name` goes."""
    if not DNS_NAME.match(name):
        raise ValueError(f"NAME '{name}' must be lower-case letters, digits and '-' (an image name)")
    if not requirements.is_file():
        raise ValueError(f"REQUIREMENTS {requirements}: no such file")
    image = program_image(name, requirements)
    if image.archive.is_file():
        say(f"cached: {image.reference} ({image.archive})")
        return image
    ensure_images()
    base = tensorflow_image()
    started = time.monotonic()
    wheels = cache_root() / "wheels" / f"program-{name}-{image.key}"
    say(f"pip resolves {requirements} with {TENSORFLOW_PACKAGE}=={base.tag}")
    extra = packages_beyond_the_image("-r", str(requirements))
    if not extra:
        raise ValueError(
            f"REQUIREMENTS {requirements}: the TensorFlow image has every package it needs already; "
            f"use {base.reference}"
        )
    say(f"pip download {' '.join(extra)} into {wheels}")
    with tempfile.TemporaryDirectory(prefix=f"{name}-", dir=image.archive.parent.parent) as work:
        layer = Path(work) / "layer"
        install_packages(extra, wheels, layer)
        for earlier in earlier_archives(image):
            earlier.unlink()  # one archive per name: a node imports every archive here
        write_image_archive(
            layer,
            image.reference,
            ImageConfig(
                cmd=("python3",),
                labels={"org.opencontainers.image.description": f"{base.reference} + {requirements.name}"},
            ),
            image.archive,
            base=base.archive,
        )
    say(f"built {image.reference} in {time.monotonic() - started:.0f} s -> {image.archive}")
    return image


def packages_beyond_the_image(*requirements: str) -> list[str]:
    """`name==version` of what `requirements` (pip's arguments: pins, or -r FILE) need beyond the
    TensorFlow image, resolved together with the image's TensorFlow."""
    base_requirement = f"{TENSORFLOW_PACKAGE}=={tensorflow_image().tag}"
    return packages_beyond(_resolved(*requirements, base_requirement), _resolved(base_requirement))


def install_packages(packages: list[str], wheels: Path, layer: Path) -> None:
    """Download `packages` (pinned, each alone: no dependencies) into `wheels` and install them into
    the folder of a layer over the TensorFlow image where its Python finds packages
    (tools/nodeimage/build.py)."""
    subprocess.run([*PIP, "download", "--only-binary=:all:", "--no-deps", "--dest", str(wheels), *packages], check=True)
    python = f"python{sys.version_info.major}.{sys.version_info.minor}"
    target = layer / "usr" / "local" / "lib" / python / "dist-packages"
    downloaded = sorted(map(str, wheels.glob("*.whl")))
    subprocess.run([*PIP, "install", "--no-index", "--no-deps", "--target", str(target), *downloaded], check=True)


def _resolved(*requirements: str) -> dict[str, str]:
    """Distribution name -> version, as pip resolves `requirements` for this Python (metadata only)."""
    with tempfile.TemporaryDirectory(prefix="resolve-") as work:
        report = Path(work) / "report.json"
        subprocess.run(
            [
                *PIP,
                "install",
                "--dry-run",
                "--ignore-installed",
                "--only-binary=:all:",
                "--report",
                str(report),
                *requirements,
            ],
            check=True,
        )
        installs = json.loads(report.read_text())["install"]
    return {item["metadata"]["name"]: item["metadata"]["version"] for item in installs}


def _normalized(name: str) -> str:
    """A distribution's name as the package index compares names (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def packages_beyond(resolved: dict[str, str], image_has: dict[str, str]) -> list[str]:
    """`name==version` of each resolved package the TensorFlow image does not have, TensorFlow under
    any of its names left out; the image's own versions stay as they are."""
    kept = {_normalized(name) for name in image_has} | TENSORFLOW_NAMES
    return sorted(f"{name}=={version}" for name, version in resolved.items() if _normalized(name) not in kept)


def keep_archive(archive: Path) -> Path:
    """An image archive built elsewhere, kept in the cache for the real nodes to import."""
    if not archive.is_file():
        raise ValueError(f"ARCHIVE {archive}: no such file")
    folder = cache_root() / PROGRAM_IMAGES
    folder.mkdir(parents=True, exist_ok=True)
    kept = folder / f"loaded-{archive.stem}.tar"
    shutil.copyfile(archive, kept)
    return kept
