"""Container image archives in the `docker save` layout, which `ctr images import` reads.

No registry is reachable from these machines, so images are packed here from a
root filesystem folder: one uncompressed layer, its config, and a manifest
that names the image.
"""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

CHUNK = 1 << 20


@dataclass(frozen=True)
class ImageConfig:
    """The parts of an image config a pod relies on."""

    env: tuple[str, ...] = ("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",)
    entrypoint: tuple[str, ...] = ()
    cmd: tuple[str, ...] = ()
    working_dir: str = "/"
    labels: dict[str, str] = field(default_factory=dict)


def _sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def pack_layer(rootfs: Path, layer: Path) -> None:
    """Tar `rootfs` as one layer: numeric owners, links, devices and modes kept."""
    subprocess.run(
        ["tar", "--numeric-owner", "--xattrs", "-C", str(rootfs), "-cf", str(layer), "."],
        check=True,
    )


def write_image_archive(
    rootfs: Path,
    reference: str,
    config: ImageConfig,
    archive: Path,
    base: Optional[Path] = None,
    also_tagged: tuple[str, ...] = (),
    variants: tuple[tuple[str, ImageConfig], ...] = (),
) -> str:
    """Write `rootfs` as image `reference` to `archive` (written next to it, then renamed); its layer
    digest. With `base` (an archive of this layout), `rootfs` is a layer on top of the base's layers.
    `also_tagged`: more names for the same image, each imported as an image of its own (one archive,
    one copy of the base's gigabytes to write and import, for images that differ only in name).
    `variants`: more images over the same layers, each a name with a config of its own (an
    entrypoint, an environment), in the same one archive."""
    archive.parent.mkdir(parents=True, exist_ok=True)
    base_layers = _layers_of(base) if base is not None else []
    with tempfile.TemporaryDirectory(dir=archive.parent) as work:
        layer = Path(work) / "layer.tar"
        pack_layer(rootfs, layer)
        layer_digest = _sha256_of(layer)
        layer_name = f"{layer_digest}/layer.tar"
        layers = [*(n for n, _ in base_layers), layer_name]
        diff_ids = [*(d for _, d in base_layers), f"sha256:{layer_digest}"]
        configs = {}  # file name -> its bytes
        manifest = []
        for tags, image in (([reference, *also_tagged], config), *(([name], c) for name, c in variants)):
            config_bytes = _config_bytes(image, diff_ids)
            config_name = f"{hashlib.sha256(config_bytes).hexdigest()}.json"
            configs[config_name] = config_bytes
            manifest.append({"Config": config_name, "RepoTags": tags, "Layers": layers})
        partial = archive.with_name(archive.name + ".partial")
        with tarfile.open(partial, "w") as out:
            for config_name, config_bytes in configs.items():
                _add_bytes(out, config_name, config_bytes)
            _add_bytes(out, "manifest.json", json.dumps(manifest).encode())
            if base is not None:
                _copy_members(base, out, [name for name, _ in base_layers])
            out.add(layer, arcname=layer_name)
        partial.replace(archive)
    return layer_digest


def _config_bytes(config: ImageConfig, diff_ids: list[str]) -> bytes:
    """An image's config file: what a pod relies on, over these layers."""
    image_config = {
        "architecture": "amd64",
        "os": "linux",
        "config": {
            "Env": list(config.env),
            "Entrypoint": list(config.entrypoint) or None,
            "Cmd": list(config.cmd) or None,
            "WorkingDir": config.working_dir,
            "Labels": dict(config.labels),
        },
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
        "history": [{"created_by": "tfk8s tools/nodeimage"}],
    }
    return json.dumps(image_config, sort_keys=True).encode()


def _layers_of(archive: Path) -> list[tuple[str, str]]:
    """An archive's layers, bottom first: (member name, diff ID)."""
    with tarfile.open(archive) as source:
        (manifest,) = _json_member(archive, source, "manifest.json")
        config = _json_member(archive, source, manifest["Config"])
    return list(zip(manifest["Layers"], config["rootfs"]["diff_ids"]))


def _json_member(archive: Path, source: tarfile.TarFile, name: str) -> Any:
    member = source.extractfile(name)
    if member is None:  # a folder or link by that name: not an archive this module wrote
        raise ValueError(f"{archive}: {name} is not a file")
    return json.load(member)


def _copy_members(archive: Path, out: tarfile.TarFile, names: list[str]) -> None:
    """Copy these members of `archive` into `out` as they are (a layer the nodes hold already:
    containerd keeps one copy of a layer however many images share it)."""
    with tarfile.open(archive) as source:
        for name in names:
            info = source.getmember(name)
            out.addfile(info, source.extractfile(info))


def _add_bytes(out: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o644
    out.addfile(info, io.BytesIO(data))
