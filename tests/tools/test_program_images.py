"""Images for a team's program: a layer on top of the nodes' TensorFlow image, keyed by its inputs."""

from __future__ import annotations

import hashlib
import json
import tarfile

import pytest

from tools.nodeimage.archive import ImageConfig, write_image_archive
from tools.nodeimage.images import earlier_archives, program_image, tensorflow_image
from tools.nodeimage.program_images import build_program_image, packages_beyond


def test_a_layer_on_a_base_archive_keeps_the_base_layer_as_it_is(tmp_path):
    base_root, top_root = tmp_path / "base", tmp_path / "top"
    (base_root / "usr").mkdir(parents=True)
    (base_root / "usr" / "python").write_text("the interpreter\n")
    (top_root / "usr" / "local").mkdir(parents=True)
    (top_root / "usr" / "local" / "tf_keras.py").write_text("the extra package\n")
    base = tmp_path / "base.tar"
    base_digest = write_image_archive(base_root, "localhost/tfk8s/tensorflow:2.21.0", ImageConfig(), base)
    top = tmp_path / "top.tar"
    top_digest = write_image_archive(top_root, "localhost/tfk8s/keras:2.21.0", ImageConfig(cmd=("python3",)), top, base=base)

    with tarfile.open(top) as archive:
        (manifest,) = json.load(archive.extractfile("manifest.json"))
        config = json.load(archive.extractfile(manifest["Config"]))
        layers = [archive.extractfile(name).read() for name in manifest["Layers"]]
        with tarfile.open(base) as original:
            (base_manifest,) = json.load(original.extractfile("manifest.json"))
            base_layer = original.extractfile(base_manifest["Layers"][0]).read()
    assert manifest["RepoTags"] == ["localhost/tfk8s/keras:2.21.0"]
    assert config["rootfs"]["diff_ids"] == [f"sha256:{base_digest}", f"sha256:{top_digest}"]
    assert [hashlib.sha256(layer).hexdigest() for layer in layers] == [base_digest, top_digest]
    assert layers[0] == base_layer, "the base layer is copied byte for byte: the nodes hold it already"
    assert config["config"]["Cmd"] == ["python3"]


def test_one_archive_names_an_image_twice_for_two_teams_programs(tmp_path):
    root = tmp_path / "root"
    (root / "opt").mkdir(parents=True)
    archive = tmp_path / "both.tar"
    write_image_archive(
        root, "registry.example.com/ml/ctr:2.21.0", ImageConfig(), archive, also_tagged=("registry.example.com/ml/mwms:2.21.0",)
    )
    with tarfile.open(archive) as written:
        (manifest,) = json.load(written.extractfile("manifest.json"))
    assert manifest["RepoTags"] == ["registry.example.com/ml/ctr:2.21.0", "registry.example.com/ml/mwms:2.21.0"]


def test_one_archive_holds_images_that_differ_in_config_over_the_same_layers(tmp_path):
    """Two examples' images built from one folder, each with its own entrypoint and environment."""
    root = tmp_path / "root"
    (root / "var" / "tf_dist_mnist").mkdir(parents=True)
    archive = tmp_path / "examples.tar"
    dist = ImageConfig(env=("TF_USE_LEGACY_KERAS=1",), entrypoint=("python", "/var/tf_dist_mnist/dist_mnist.py"))
    summaries = ImageConfig(entrypoint=("python", "/var/tf_mnist/mnist_with_summaries.py"))
    write_image_archive(root, "example/dist:1", dist, archive, variants=(("example/summaries:1", summaries),))
    with tarfile.open(archive) as written:
        first, second = json.load(written.extractfile("manifest.json"))
        configs = [json.load(written.extractfile(entry["Config"]))["config"] for entry in (first, second)]
        assert len([name for name in written.getnames() if name.endswith("layer.tar")]) == 1
    assert (first["RepoTags"], second["RepoTags"]) == (["example/dist:1"], ["example/summaries:1"])
    assert first["Layers"] == second["Layers"]
    assert configs[0]["Entrypoint"] == ["python", "/var/tf_dist_mnist/dist_mnist.py"]
    assert configs[0]["Env"] == ["TF_USE_LEGACY_KERAS=1"]
    assert configs[1]["Entrypoint"] == ["python", "/var/tf_mnist/mnist_with_summaries.py"]
    assert "TF_USE_LEGACY_KERAS=1" not in configs[1]["Env"]


def test_the_image_is_keyed_by_its_requirements(tmp_path):
    first = tmp_path / "a.txt"
    first.write_text("tf-keras==2.21.0\n")
    second = tmp_path / "b.txt"
    second.write_text("tf-keras==2.21.0\npandas==2.3.3\n")
    assert program_image("ctr", first).reference == "localhost/tfk8s/ctr:2.21.0"
    assert program_image("ctr", first).key != program_image("ctr", second).key
    assert program_image("ctr", first).archive.parent.name == "programs"


@pytest.mark.parametrize("name, expected", [("CTR_Model", "must be lower-case letters"), ("ctr", "no such file")])
def test_a_bad_name_or_requirements_file_is_refused_before_anything_is_built(tmp_path, name, expected):
    with pytest.raises(ValueError, match=expected):
        build_program_image(name, tmp_path / "missing.txt")


def test_the_image_gets_what_the_requirements_need_beyond_the_tensorflow_image():
    """pandas brings pytz and tzdata; numpy and TensorFlow (any of its names) the image has already."""
    image_has = {"tensorflow_cpu": "2.21.0", "numpy": "2.4.6", "protobuf": "6.33.0", "six": "1.17.0"}
    resolved = {
        "tensorflow": "2.21.0", "tensorflow-cpu": "2.21.0", "tf_keras": "2.21.0", "numpy": "2.4.6",
        "pandas": "2.2.3", "pytz": "2026.6", "tzdata": "2026.6", "Six": "1.17.0",
    }
    assert packages_beyond(resolved, image_has) == ["pandas==2.2.3", "pytz==2026.6", "tf_keras==2.21.0", "tzdata==2026.6"]


def test_only_earlier_builds_of_the_same_image_are_pruned(tmp_path, monkeypatch):
    """`make node-image` and `make image` keep one archive per image: the current one, and nothing
    of another image's or that tfk8s did not write."""
    monkeypatch.setenv("TFK8S_CACHE", str(tmp_path))
    current = tensorflow_image()
    images = current.archive.parent
    images.mkdir(parents=True)
    programs = images / "programs"
    programs.mkdir()
    kept = [
        current.archive,
        images / f"pause-tfk8s-{'0' * 12}.tar",  # another image
        images / f"tensorflow-gpu-{current.tag}-{'1' * 12}.tar",  # another image whose name begins alike
        images / f"tensorflow-{current.tag}-{'2' * 12}.tar.partial",  # a write under way
        images / "tensorflow-notes.tar",  # not an archive tfk8s names
        programs / f"tensorflow-{current.tag}-{'3' * 12}.tar",  # a team's program image, of its own folder
    ]
    earlier = [images / f"tensorflow-2.20.0-{'4' * 12}.tar", images / f"tensorflow-{current.tag}-{'5' * 12}.tar"]
    for path in kept + earlier:
        path.write_bytes(b"")
    assert earlier_archives(current) == sorted(earlier)

    requirements = tmp_path / "requirements.txt"
    requirements.write_text("tf-keras==2.21.0\n")
    team = program_image("ctr", requirements)
    (programs / f"ctr-{team.tag}-{'6' * 12}.tar").write_bytes(b"")
    (programs / f"ctr-model-{team.tag}-{'7' * 12}.tar").write_bytes(b"")
    assert earlier_archives(team) == [programs / f"ctr-{team.tag}-{'6' * 12}.tar"]
