"""Which images the real nodes need, and where their archives are cached.

An archive's file name carries a key derived from everything that goes into
it (versions, this package's source), so a changed input builds a new archive
and an unchanged one is never rebuilt. The cache lives outside the clone
(`TFK8S_CACHE`, default ~/.cache/tfk8s): a fresh CI clone finds it warm.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..toolchain.versions import recorded_versions as versions

PROJECT_ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
TRAINER_REQUIREMENTS = PROJECT_ROOT / "trainer" / "requirements.txt"
TENSORFLOW_PACKAGE = "tensorflow-cpu"
IMAGE_REPOSITORY = "localhost/tfk8s"
DNS_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def cache_root() -> Path:
    return Path(os.environ.get("TFK8S_CACHE", Path.home() / ".cache" / "tfk8s"))


def tensorflow_version() -> str:
    """The trainer's pinned TensorFlow: the image runs exactly what the trainer is tested with."""
    match = re.search(rf"^{TENSORFLOW_PACKAGE}==([\w.]+)", TRAINER_REQUIREMENTS.read_text(), re.M)
    if not match:
        raise ValueError(f"{TRAINER_REQUIREMENTS} pins no {TENSORFLOW_PACKAGE}")
    return match.group(1)


def _key(*parts: str | Path) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.read_bytes() if isinstance(part, Path) else part.encode())
        digest.update(b"\0")
    return digest.hexdigest()[:12]


@dataclass(frozen=True)
class Image:
    name: str
    tag: str
    key: str
    folder: str = "images"  # under the cache; PROGRAM_IMAGES for a team's program images

    @property
    def reference(self) -> str:
        return f"{IMAGE_REPOSITORY}/{self.name}:{self.tag}"

    @property
    def archive(self) -> Path:
        return cache_root() / self.folder / f"{self.name}-{self.tag}-{self.key}.tar"


# Images for teams' programs (make image, make load-image): every real node imports each
# archive here when it starts, beside its own two.
PROGRAM_IMAGES = "images/programs"


def earlier_archives(image: Image) -> list[Path]:
    """Archives of `image`'s name from builds with other inputs: a node imports only the current
    one, and each is as large as the image (TensorFlow's, 1.7 GB)."""
    named = re.compile(rf"{re.escape(image.name)}-[^-]+-[0-9a-f]{{12}}\.tar")
    folder = image.archive.parent
    return sorted(path for path in folder.glob("*.tar") if named.fullmatch(path.name) and path != image.archive)


def program_image_archives() -> list[Path]:
    return sorted((cache_root() / PROGRAM_IMAGES).glob("*.tar"))


def program_image(name: str, requirements: Path) -> Image:
    """`localhost/tfk8s/<name>:<TensorFlow version>`: the TensorFlow image plus `requirements`."""
    base = tensorflow_image()
    return Image(name, base.tag, _key(base.key, requirements, HERE / "program_images.py"), PROGRAM_IMAGES)


def tensorflow_image() -> Image:
    """Stands in for tensorflow/tensorflow:<version>: Debian with Python 3 and the pinned TensorFlow."""
    version = tensorflow_version()
    pinned = versions()
    key = _key(version, pinned["DEBIAN_SUITE"], HERE / "build.py", HERE / "archive.py")
    return Image("tensorflow", version, key)


def pause_image() -> Image:
    """The pod sandbox image containerd starts first in every pod."""
    source = HERE / "pause" / "main.go"
    return Image("pause", "tfk8s", _key(source, HERE / "archive.py"))
