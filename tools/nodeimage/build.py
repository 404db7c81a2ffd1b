"""Build the real nodes' images into the cache: `python -m tools.nodeimage` (make node-image).

- `localhost/tfk8s/tensorflow:<version>`: a Debian minbase root file system
  (debootstrap) with Python 3, `python` pointing at it, and the trainer's
  pinned tensorflow-cpu wheels, downloaded by pip on the host and installed
  offline into the root (pip inside the root would need the host's TLS
  certificates). It stands in for `tensorflow/tensorflow:<version>`.
- `localhost/tfk8s/pause:tfk8s`: the pod sandbox, one static Go program.

An archive already in the cache is kept; the command says what it built.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .archive import ImageConfig, write_image_archive
from .images import HERE, TENSORFLOW_PACKAGE, Image, cache_root, pause_image, tensorflow_image, versions

DEBIAN_MIRROR = "http://deb.debian.org/debian"
# Dropped from the image: documentation and package caches no pod reads.
PRUNED = ("usr/share/doc", "usr/share/man", "usr/share/info", "usr/share/locale", "var/cache/apt", "var/lib/apt/lists")


def _say(message: str) -> None:
    print(f"[node-image] {message}", flush=True)


def _run(args: list[str], **kwargs: Any) -> None:
    subprocess.run(args, check=True, **kwargs)


def build_tensorflow(image: Image, work: Path) -> None:
    pinned = versions()
    rootfs = work / "rootfs"
    started = time.monotonic()
    _say(f"debootstrap {pinned['DEBIAN_SUITE']} minbase with python3 (about 3 minutes)")
    _run(
        ["debootstrap", "--variant=minbase", "--include=python3", pinned["DEBIAN_SUITE"], str(rootfs), DEBIAN_MIRROR],
        stdout=subprocess.DEVNULL,
    )
    os.symlink("python3", rootfs / "usr" / "bin" / "python")
    for pruned in PRUNED:
        shutil.rmtree(rootfs / pruned, ignore_errors=True)
    _say(f"root file system in {time.monotonic() - started:.0f} s")

    wheels = cache_root() / "wheels" / f"{TENSORFLOW_PACKAGE}-{image.tag}"
    requirement = f"{TENSORFLOW_PACKAGE}=={image.tag}"
    started = time.monotonic()
    _say(f"pip download {requirement} into {wheels}")
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet"]
    _run([*pip, "download", "--only-binary=:all:", "--dest", str(wheels), requirement])
    python_dir = _debian_python(rootfs)
    target = rootfs / "usr" / "local" / "lib" / python_dir / "dist-packages"
    # Debian's python3 reads /usr/local/lib/python3.X/dist-packages; the host's pip
    # (same Python minor version) installs there offline and byte-compiles, so a
    # read-only root never needs to write .pyc files.
    _run([*pip, "install", "--no-index", "--find-links", str(wheels), "--target", str(target), requirement])
    _say(f"{requirement} installed in {time.monotonic() - started:.0f} s")
    write_image_archive(
        rootfs,
        image.reference,
        ImageConfig(
            cmd=("python3",),
            labels={"org.opencontainers.image.description": f"Debian {pinned['DEBIAN_SUITE']} with {requirement}"},
        ),
        image.archive,
    )


def _debian_python(rootfs: Path) -> str:
    """python3.X of the root file system; it must match the host's, whose pip installs the wheels."""
    found = sorted(p.name for p in (rootfs / "usr" / "lib").glob("python3.*") if p.is_dir())
    host = f"python{sys.version_info.major}.{sys.version_info.minor}"
    if host not in found:
        raise RuntimeError(f"the image has {', '.join(found) or 'no python3'}, the host {host}: wheels would not match")
    return host


def build_pause(image: Image, work: Path) -> None:
    rootfs = work / "rootfs"
    rootfs.mkdir()
    env = {**os.environ, "CGO_ENABLED": "0", "GOFLAGS": "-buildvcs=false", "GOTOOLCHAIN": "local"}
    _run(["go", "build", "-trimpath", "-ldflags=-s -w", "-o", str(rootfs / "pause"), "."], cwd=HERE / "pause", env=env)
    write_image_archive(rootfs, image.reference, ImageConfig(entrypoint=("/pause",), env=()), image.archive)


BUILDERS = {"tensorflow": build_tensorflow, "pause": build_pause}


def ensure_images() -> list[Image]:
    """Build what the cache lacks; every image the real nodes load."""
    images = [pause_image(), tensorflow_image()]
    for image in images:
        if image.archive.is_file():
            _say(f"cached: {image.reference} ({image.archive})")
            continue
        started = time.monotonic()
        image.archive.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=f"{image.name}-", dir=image.archive.parent) as work:
            BUILDERS[image.name](image, Path(work))
        size_mb = image.archive.stat().st_size / 1e6
        _say(f"built {image.reference} in {time.monotonic() - started:.0f} s ({size_mb:.0f} MB) -> {image.archive}")
    return images
