"""Kubeflow's own TFJob examples, from the training operator's release that runs beside tfk8s
(TRAINING_OPERATOR_VERSION, its module's examples/tensorflow): dist-mnist (a TF2 parameter-server
program: chief, PS, workers), mnist_with_summaries (one worker, its TensorBoard events on a claim) and
simple (two independent workers). Each runs to Succeeded under Kubeflow's operator, then, imported
with `import-tfjob`, under tfk8s, on the same real nodes one after the other.

Their images are built here as their Dockerfiles build them (the nodes' TensorFlow with tf_keras, the
example's folder and mnist_utils.py, dist-mnist's TF_USE_LEGACY_KERAS and entrypoint), under the
names their manifests give. Each manifest is amended alike for both sides, and only so:
- the image's tag: the release's, not `latest` (the kubelet pulls a `latest` image at every start,
  from a registry the nodes here cannot reach; tfk8s runs no `latest`);
- `--fake_data --epochs=1`: the examples download MNIST from storage.googleapis.com, which the pods
  here cannot reach (the examples' own option for a test), and one epoch is enough to succeed;
- requests of CPU and memory: the examples ask none, and the two real nodes share one 2-core host;
- the namespace `kubeflow` (dist-mnist names none), and mnist_with_summaries' claim made there on
  this cluster's local volume (the example's own volume is a hostPath of storage class `standard`).
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest
import yaml

from components.cli import import_tfjob as importer
from components.cli.main import main as components_main
from components.objects.loading import load_experiment
from components.plan import labels as L
from tests.realpods.conftest import REAL_CLUSTER, REAL_SERVERS, local_volume_folder
from tests.realpods.test_import_tfjob import _kubectl, _wait_until_none, tfjob_namespace, wait_for_tfjob_succeeded
from tests.realpods.test_programs import FAIL_WITHIN_S, wait_for_phase
from tools.localcluster import realnodes
from tools.localcluster.podlogs import KeptLogs
from tools.localcluster.tfjob_sides import TFJOB_NAME_LABEL
from tools.localcluster.training_operator import TENSORFLOW_EXAMPLES_DIR
from tools.nodeimage.archive import ImageConfig, write_image_archive
from tools.nodeimage.images import tensorflow_image
from tools.nodeimage.program_images import install_packages, packages_beyond_the_image
from tools.toolchain.versions import recorded_versions

RELEASE = recorded_versions()["TRAINING_OPERATOR_VERSION"]
NAMESPACE = "kubeflow"
DIST_MNIST_IMAGE = "ghcr.io/kubeflow/training-v1/tf-dist-mnist-test"
SUMMARIES_IMAGE = "ghcr.io/kubeflow/training-v1/tf-mnist-with-summaries"
AMENDED_ARGS = ["--fake_data", "--epochs=1"]
# Each task's requests, the same on both sides: dist-mnist's four tasks ask 1.4 CPUs together.
REQUESTS = {
    "Chief": {"cpu": "300m", "memory": "2Gi"},
    "PS": {"cpu": "300m", "memory": "2Gi"},
    "Worker": {"cpu": "400m", "memory": "2Gi"},
}
CLAIM = "tfevent-volume"  # mnist_with_summaries' claim, mounted at /train


@dataclass(frozen=True)
class Example:
    manifest: str  # under the examples folder
    image: str  # the image its manifest names, without its tag
    imported: str  # what import-tfjob says of it
    decides: tuple[str, int]  # the task whose exit 0 ends the run: TFJob's rule, and the import's
    last_words: str  # what that task prints once its program has done its work
    writes_to_claim: bool = False  # its TensorBoard events, to the claim CLAIM

    @property
    def stack(self) -> str:
        return "kubeflow-" + self.manifest.split("/")[0].removesuffix(".yaml").replace("_", "-")


EXAMPLES = (
    Example(
        "dist-mnist/tf_job_mnist.yaml",
        DIST_MNIST_IMAGE,
        "chief, 1 PS, 2 workers, done: chief",
        ("chief", 0),
        "Evaluation accuracy:",
    ),
    # Keras prints the validation's loss at the end of the epoch, after the training's.
    Example(
        "mnist_with_summaries/tf_job_mnist.yaml",
        SUMMARIES_IMAGE,
        "0 PS, 1 workers, done: worker-0",
        ("worker", 0),
        "val_loss",
        writes_to_claim=True,
    ),
    Example("simple.yaml", SUMMARIES_IMAGE, "0 PS, 2 workers, done: worker-0", ("worker", 0), "val_loss"),
)


@pytest.fixture(scope="module")
def example_images(real_cluster, tmp_path_factory) -> Iterator[None]:
    """The examples' two images on every real node, in one archive (one copy of TensorFlow's 1.7 GB
    to write and import): one layer holds both folders and tf_keras; each image has its Dockerfile's
    entrypoint and environment."""
    work = tmp_path_factory.mktemp("kubeflow-examples")
    layer = work / "layer"
    for folder, example in (("tf_dist_mnist", "dist-mnist"), ("tf_mnist", "mnist_with_summaries")):
        shutil.copytree(TENSORFLOW_EXAMPLES_DIR / example, layer / "var" / folder)
        shutil.copy(TENSORFLOW_EXAMPLES_DIR / "mnist_utils.py", layer / "var" / folder)
    # dist-mnist's Dockerfile installs tf_keras, the Keras 2 its program needs (TF_USE_LEGACY_KERAS),
    # and the examples' base image (tensorflow/tensorflow) has TensorBoard, which mnist_with_summaries'
    # summaries need and the nodes' TensorFlow image has not: the releases of the nodes' TensorFlow.
    release = tensorflow_image().tag
    install_packages(
        packages_beyond_the_image(f"tf_keras=={release}", f"tensorboard=={release}"), work / "wheels", layer
    )
    path = ImageConfig().env
    dist_mnist = ImageConfig(
        env=(*path, "TF_USE_LEGACY_KERAS=1"), entrypoint=("python", "/var/tf_dist_mnist/dist_mnist.py")
    )
    summaries = ImageConfig(entrypoint=("python", "/var/tf_mnist/mnist_with_summaries.py"))
    archive = work / "examples.tar"
    write_image_archive(
        layer,
        f"{DIST_MNIST_IMAGE}:{RELEASE}",
        dist_mnist,
        archive,
        base=tensorflow_image().archive,
        variants=((f"{SUMMARIES_IMAGE}:{RELEASE}", summaries),),
    )
    try:
        assert realnodes.import_archive(REAL_CLUSTER, archive) == list(REAL_SERVERS)
        yield
    finally:
        archive.unlink()


def amended(example: Example) -> dict:
    """The example's TFJob, amended as this module's docstring says."""
    tfjob = yaml.safe_load((TENSORFLOW_EXAMPLES_DIR / example.manifest).read_text())
    tfjob["metadata"]["namespace"] = NAMESPACE
    for replica_type, replica in tfjob["spec"]["tfReplicaSpecs"].items():
        (container,) = replica["template"]["spec"]["containers"]
        assert container["image"] == f"{example.image}:latest", container["image"]
        container["image"] = f"{example.image}:{RELEASE}"
        container["args"] = [*container.get("args", []), *AMENDED_ARGS]
        memory = REQUESTS[replica_type]["memory"]
        container["resources"] = {"requests": REQUESTS[replica_type], "limits": {"memory": memory}}
    return tfjob


def claim(storage_class: str) -> dict:
    """The example's claim (tfevent-volume/tfevent-pvc.yaml), on this cluster's storage: one local
    volume, so ReadWriteOnce."""
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": CLAIM, "namespace": NAMESPACE},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": storage_class,
            "resources": {"requests": {"storage": "1Gi"}},
        },
    }


def event_files(volume: Path) -> list[str]:
    """The TensorBoard event files mnist_with_summaries wrote under --log_dir=/train/logs."""
    return sorted(str(path.relative_to(volume)) for path in (volume / "logs").rglob("events.out.tfevents.*"))


def kept_lines(kept: KeptLogs, pod: str) -> list[str]:
    return [line for (name, _, _), run in sorted(kept.runs.items()) if name == pod for line in run.log.splitlines()]


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda example: example.stack)
def test_a_kubeflow_example_succeeds_under_its_operator_and_imported_under_tfk8s(
    example, real_cluster, example_images, tmp_path, capsys, monkeypatch, request
):
    tfjob = amended(example)
    name = tfjob["metadata"]["name"]
    tfjob_file = tmp_path / "tfjob.yaml"
    tfjob_file.write_text(yaml.safe_dump(tfjob))
    role, index = example.decides
    volume = None
    if example.writes_to_claim:
        storage_class = request.getfixturevalue("local_volume")
        volume = local_volume_folder(real_cluster)

    with tfjob_namespace(real_cluster, NAMESPACE):
        if volume is not None:
            claim_file = tmp_path / "claim.yaml"
            claim_file.write_text(yaml.safe_dump(claim(storage_class)))
            _kubectl(real_cluster, "apply", "-f", str(claim_file))
        kept = KeptLogs(real_cluster.core, NAMESPACE, f"{TFJOB_NAME_LABEL}={name}")
        started = time.monotonic()
        _kubectl(real_cluster, "apply", "-f", str(tfjob_file))
        wait_for_tfjob_succeeded(real_cluster, name, NAMESPACE, kept)
        kubeflow_s = time.monotonic() - started
        lines = kept_lines(kept, f"{name}-{role}-{index}")
        assert any(example.last_words in line for line in lines), f"the TFJob's {role}-{index}: {lines[-10:]}"
        if volume is not None:
            assert event_files(volume), "the TFJob's worker wrote no TensorBoard events on its claim"
            shutil.rmtree(volume / "logs")  # what tfk8s's run writes is its own
        _kubectl(real_cluster, "delete", "tfjob", name, "-n", NAMESPACE)
        _wait_until_none(real_cluster, f"the TFJob {name}'s pods", "pods", "-n", NAMESPACE)

        monkeypatch.setattr(importer, "STACKS_DIR", real_cluster.stacks_dir)
        arguments = [str(tfjob_file), "--stack", example.stack, "--nodes", REAL_SERVERS[0]]
        code = components_main(["import-tfjob", *arguments])
        said = capsys.readouterr()
        assert code == 0, said.err
        assert example.imported in said.out, said.out
        stack = real_cluster.stacks_dir / f"Pulumi.{example.stack}.yaml"
        if volume is not None:
            # As import-tfjob says: run in the TFJob's namespace, where its claim is.
            assert "set tfk8s:cluster.namespace: {name: kubeflow, existing: true}" in said.err, said.err
            text = stack.read_text().replace(
                "  tfk8s:cluster:\n", "  tfk8s:cluster:\n    namespace: {name: kubeflow, existing: true}\n", 1
            )
            stack.write_text(text)
        namespace = load_experiment(str(stack)).namespace
        started = time.monotonic()
        real_cluster.apply(str(stack), tmp_path / "out", wait=False)  # it may end before every pod was seen
        try:
            wait_for_phase(str(stack), real_cluster, capsys, "Succeeded", FAIL_WITHIN_S)
            tfk8s_s = time.monotonic() - started
            (decided,) = [
                pod
                for pod in real_cluster.pods(str(stack), role)
                if pod.metadata.labels.get(L.COMPLETION_INDEX) == str(index)
            ]
            lines = [text for _, text in real_cluster.log(namespace, decided.metadata.name).lines]
            assert any(example.last_words in line for line in lines), f"tfk8s's {role}-{index}: {lines[-10:]}"
            if volume is not None:
                assert event_files(volume), "tfk8s's worker wrote no TensorBoard events on the claim"
        finally:
            real_cluster.delete(str(stack), tmp_path / "out")
    with capsys.disabled():
        print(
            f"\n{example.manifest} of Kubeflow's {RELEASE}: Succeeded after {kubeflow_s:.1f} s under its operator,"
            f" {tfk8s_s:.1f} s imported under tfk8s"
        )
