"""A real node's unpacked images are kept between runs: a start imports only what its store lacks."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.localcluster import image_store, paths, realnodes
from tools.localcluster.node_files import NodeDir, nodes_dir


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("TFK8S_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def archives(*names: str) -> list[Path]:
    return [Path("/cache/images") / f"{name}.tar" for name in names]


def run(node_folder: Path, wanted: list[Path], node: str = "srv-00") -> list[Path]:
    """A start that imports what it is told to and a teardown: what the start had to import."""
    store = node_folder / "containerd" / "root"
    to_import = image_store.take(node, store, wanted)
    store.mkdir(parents=True, exist_ok=True)
    (store / "unpacked").mkdir(exist_ok=True)
    for archive in to_import:
        (store / "unpacked" / archive.name).write_text("layers")
        image_store.imported(store, [archive])
    image_store.give_back(node, store)
    assert not store.exists(), "the store stayed in the node's folder"
    return to_import


def test_a_second_start_imports_nothing_and_finds_the_images_unpacked(cache, tmp_path):
    wanted = archives("pause-1", "tensorflow-2")
    assert run(tmp_path / "a", wanted) == wanted
    assert run(tmp_path / "b", wanted) == []  # another cluster folder (another clone) alike
    store = tmp_path / "c" / "containerd" / "root"
    image_store.take("srv-00", store, wanted)
    assert sorted(p.name for p in (store / "unpacked").iterdir()) == ["pause-1.tar", "tensorflow-2.tar"]


def test_each_node_keeps_its_own_store(cache, tmp_path):
    wanted = archives("pause-1")
    assert run(tmp_path / "a", wanted, node="srv-00") == wanted
    assert run(tmp_path / "b", wanted, node="srv-01") == wanted
    assert run(tmp_path / "c", wanted, node="srv-01") == []


def test_a_start_wanting_fewer_images_leaves_the_rest_and_one_wanting_more_imports_only_those(cache, tmp_path):
    assert run(tmp_path / "a", archives("pause-1", "tensorflow-2")) == archives("pause-1", "tensorflow-2")
    assert run(tmp_path / "b", archives("pause-1")) == []
    assert run(tmp_path / "c", archives("pause-1", "tensorflow-2", "program-3")) == archives("program-3")
    assert run(tmp_path / "d", archives("pause-1", "tensorflow-2", "program-3")) == []


def test_a_rebuilt_image_starts_the_store_over_instead_of_keeping_both(cache, tmp_path):
    run(tmp_path / "a", archives("pause-1", "tensorflow-2"))
    rebuilt = archives("pause-1", "tensorflow-2b")
    assert run(tmp_path / "b", rebuilt) == rebuilt
    store = tmp_path / "c" / "containerd" / "root"
    assert image_store.take("srv-00", store, rebuilt) == []
    assert sorted(p.name for p in (store / "unpacked").iterdir()) == ["pause-1.tar", "tensorflow-2b.tar"]


def test_a_start_killed_before_any_import_completed_keeps_nothing(cache, tmp_path):
    store = tmp_path / "a" / "containerd" / "root"
    image_store.take("srv-00", store, archives("pause-1"))
    (store / "half-written").mkdir(parents=True)
    image_store.give_back("srv-00", store)
    assert store.exists(), "a store without a record was kept as if it held images"
    assert run(tmp_path / "b", archives("pause-1")) == archives("pause-1")


def test_a_store_left_in_the_node_folder_is_used_and_the_kept_one_left_alone(cache, tmp_path):
    run(tmp_path / "a", archives("pause-1"))
    left = tmp_path / "b" / "containerd" / "root"  # a teardown that could not finish left it
    left.mkdir(parents=True)
    image_store.imported(left, archives("pause-1", "tensorflow-2"))
    assert image_store.take("srv-00", left, archives("pause-1", "tensorflow-2")) == []
    assert run(tmp_path / "c", archives("pause-1")) == []  # the kept one, untouched


@pytest.fixture
def running_nodes(tmp_path, monkeypatch) -> tuple[paths.ClusterDir, list[tuple[str, str]]]:
    """A cluster folder whose two real nodes' containerd sockets exist; `ctr images import` recorded."""
    where = paths.ClusterDir(tmp_path / "cluster")
    where.root.mkdir(parents=True)
    realnodes.RealNodes(nodes={"srv-00": "10.0.0.2", "srv-01": "10.0.0.3"}).save(where)
    for name in ("srv-00", "srv-01"):
        node = NodeDir(nodes_dir(where) / name)
        node.containerd_socket.parent.mkdir(parents=True, exist_ok=True)
        node.containerd_socket.touch()
        node.containerd_root.mkdir(parents=True, exist_ok=True)
    imports: list[tuple[str, str]] = []
    monkeypatch.setattr(realnodes, "_import_archive", lambda node, archive: imports.append((node.root.name, archive.name)))
    return where, imports


def test_make_image_imports_a_build_once_into_each_running_node(running_nodes):
    where, imports = running_nodes
    built = Path("/cache/images/programs/tensorboard-2.21.0-0123abcd.tar")
    assert realnodes.import_archive(where, built, keyed=True) == ["srv-00", "srv-01"]
    assert realnodes.import_archive(where, built, keyed=True) == ["srv-00", "srv-01"]
    assert imports == [("srv-00", built.name), ("srv-01", built.name)], "the second found it in both nodes"
    rebuilt = built.with_name("tensorboard-2.21.0-4567ef01.tar")
    assert realnodes.import_archive(where, rebuilt, keyed=True) == ["srv-00", "srv-01"]
    assert imports[2:] == [("srv-00", rebuilt.name), ("srv-01", rebuilt.name)]


def test_an_archive_built_elsewhere_is_imported_each_time_its_name_may_hold_new_content(running_nodes):
    where, imports = running_nodes
    loaded = Path("/cache/images/programs/loaded-ctr-model.tar")
    for _ in range(2):
        assert realnodes.import_archive(where, loaded) == ["srv-00", "srv-01"]
    assert imports == [("srv-00", loaded.name), ("srv-01", loaded.name)] * 2
    assert all(loaded.name not in image_store.held(NodeDir(nodes_dir(where) / n).containerd_root) for n in ("srv-00", "srv-01"))
