"""Writes an experiment's objects as YAML files, for `kubectl apply --server-side` or GitOps.

The files are exactly the objects the Pulumi program registers (one list,
`objects.experiment_objects`), one per file, numbered in apply order.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import yaml

from components.objects.experiment_objects import experiment_objects
from components.objects.manifests import Manifest
from components.plan.experiment import Experiment

# libyaml's emitter and parser when PyYAML has them (its wheels do): a
# 2,000-worker experiment's objects carry 10 MB of TF_CONFIG text.
_SafeDumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _ManifestDumper(_SafeDumper):
    """Multi-line strings (the trainer's source) as readable `|` blocks."""


def _represent_str(dumper: yaml.BaseDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_ManifestDumper.add_representer(str, _represent_str)


def to_yaml(manifest: Manifest) -> str:
    return yaml.dump(manifest, Dumper=_ManifestDumper, sort_keys=False, width=120)


def file_name(index: int, manifest: Manifest) -> str:
    """`0007-statefulset-ps-0.yaml`: the number keeps apply order in a directory listing."""
    return f"{index:04d}-{manifest['kind'].lower()}-{manifest['metadata']['name']}.yaml"


def render(experiment: Experiment, out_dir: Path) -> Counter[str]:
    """Write every object to `out_dir` (replacing an earlier rendering); count them per kind."""
    out_dir.mkdir(parents=True, exist_ok=True)
    # A stale file of a bigger experiment would otherwise be applied with this one.
    for stale in out_dir.glob("*.yaml"):
        stale.unlink()
    kinds: Counter[str] = Counter()
    for index, obj in enumerate(experiment_objects(experiment)):
        (out_dir / file_name(index, obj.manifest)).write_text(to_yaml(obj.manifest), encoding="utf-8")
        kinds[obj.kind] += 1
    return kinds


def read_rendered(out_dir: Path) -> list[Manifest]:
    """The objects of a rendered folder, in apply order."""
    return [
        yaml.load(path.read_text(encoding="utf-8"), Loader=_SafeLoader)
        for path in sorted(out_dir.glob("*.yaml"))
    ]
