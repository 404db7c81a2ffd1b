"""Writes an experiment's objects as YAML, for `kubectl apply --server-side` or GitOps.

The objects are exactly those the Pulumi program registers (one list,
`objects.experiment_objects`): one per file, numbered in apply order, in a
folder that render_folder.py puts in place whole; or one multi-document
stream, for `kubectl apply -f -`.

All but the node labels and one object. Node labels are never a `kind: Node` object here, which
`kubectl delete -f` or a GitOps prune would take for a node to delete: they are two scripts,
`label-nodes.sh` and `unlabel-nodes.sh` (node_labels.py), which the stream leaves to the caller.
And the Secret of the stack's secret `env` values. Read from the
stack file those values are encrypted, so the Secret holds placeholders, and
applied it would replace the team's real Secret with them. In a folder it is a
`.yaml.template` file, which `kubectl apply -f FOLDER` does not read (kubectl
reads .json, .yaml and .yml); in the stream it is left out.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, TextIO

import yaml

from ..plan.experiment import Experiment
from ..spec.strict_yaml import text_style
from .experiment_objects import experiment_objects
from .manifests import Manifest
from .node_labels import is_node, label_scripts
from .render_folder import place_rendering
from .render_record import read_record

# libyaml's emitter and parser when PyYAML has them (its wheels do): a
# 2,000-worker experiment's objects carry 10 MB of TF_CONFIG text.
try:
    from yaml import CSafeDumper as _SafeDumper
    from yaml import CSafeLoader as _SafeLoader
except ImportError:
    from yaml import SafeDumper as _SafeDumper
    from yaml import SafeLoader as _SafeLoader


class _ManifestDumper(_SafeDumper):
    """Multi-line strings (the trainer's source) as readable `|` blocks, and text quoted wherever
    YAML 1.2 would read it as a number."""


def _represent_str(dumper: yaml.BaseDumper, value: str) -> yaml.ScalarNode:
    # Text stays text for kubectl too: `--lr 1e-3` written plain would reach it as a number.
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=text_style(value))


_ManifestDumper.add_representer(str, _represent_str)


def to_yaml(manifest: Manifest) -> str:
    return yaml.dump(manifest, Dumper=_ManifestDumper, sort_keys=False, width=120)


# What a file of an object that is not applied ends with: kubectl reads a folder's .json, .yaml and .yml files only.
TEMPLATE_SUFFIX = ".yaml.template"


def file_name(index: int, manifest: Manifest) -> str:
    """`0007-statefulset-ps-0.yaml`: the number keeps apply order in a directory listing."""
    suffix = TEMPLATE_SUFFIX if not is_applied(manifest) else ".yaml"
    return f"{index:04d}-{manifest['kind'].lower()}-{manifest['metadata']['name']}{suffix}"


def is_applied(manifest: Manifest) -> bool:
    """Whether a rendering's object is one to apply: not the Secret, whose values are placeholders."""
    return manifest["kind"] != "Secret"


@dataclass(frozen=True)
class Rendering:
    kinds: Counter[str]  # objects written to be applied, per kind
    templates: tuple[str, ...]  # files of the objects not to be applied as they are (the Secret)
    kept: tuple[str, ...]  # files in the folder that are not render's, left as they were (forced)
    leftover: Path | None  # the earlier rendering, set aside beside the folder, where it could not be removed


def render(experiment: Experiment, out_dir: Path, force: bool = False) -> Rendering:
    """Write every object to `out_dir`, replacing an earlier rendering and nothing else.

    A folder holding files render did not write is refused (render_folder.ForeignFile) unless
    `force`: then the rendering is written beside them, and they are kept.
    """
    kinds: Counter[str] = Counter()
    placed = place_rendering(out_dir, experiment.stack, _files(experiment, kinds), force=force)
    templates = tuple(name for name in placed.written if name.endswith(TEMPLATE_SUFFIX))
    return Rendering(kinds, templates, placed.kept, placed.leftover)


def write_stream(experiment: Experiment, stream: TextIO) -> Counter[str]:
    """Every object to apply to `stream` as one multi-document YAML stream, in apply order; counted per kind."""
    kinds: Counter[str] = Counter()
    for obj in experiment_objects(experiment):
        if is_applied(obj.manifest) and not is_node(obj.manifest):
            stream.write("---\n" + to_yaml(obj.manifest))
            kinds[obj.kind] += 1
    return kinds


def _files(experiment: Experiment, kinds: Counter[str]) -> Iterator[tuple[str, str]]:
    yield from label_scripts(experiment)
    objects = [obj for obj in experiment_objects(experiment) if not is_node(obj.manifest)]
    for index, obj in enumerate(objects):
        yield file_name(index, obj.manifest), to_yaml(obj.manifest)
        if is_applied(obj.manifest):
            kinds[obj.kind] += 1


def read_rendered(out_dir: Path) -> list[Manifest]:
    """The objects `kubectl apply -f` applies from a rendered folder, in apply order: the YAML files
    its record lists (any other file in the folder is not the rendering's, and a template is not
    applied), or every YAML file of a folder without one."""
    record = read_record(out_dir)
    names = record.names if record else tuple(sorted(path.name for path in out_dir.glob("*.yaml")))
    return [
        yaml.load((out_dir / name).read_text(encoding="utf-8"), Loader=_SafeLoader)
        for name in names
        if name.endswith(".yaml")
    ]
