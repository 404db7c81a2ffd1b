"""`tfk8s:tensorboard` on real nodes: TensorBoard, in an image built with it, reads the chief's
scalars from the checkpoint volume, and `python -m components tensorboard` serves its HTTP API on
127.0.0.1 through a port-forward, as a user would open it.

What a user checks: TensorBoard's scalars API returns the trainer's loss at the steps the chief
reported and the evaluator's eval_loss at the checkpoints' steps, and the chief, sharing the volume,
trains and finishes as without it. The same experiment's evaluator is then lost and replaced alone
(tests/realpods/test_evaluator.py's checks): one experiment brought up for both.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.request

from components.live.tensorboard_forward import serve_tensorboard
from components.objects.loading import load_experiment
from components.spec.tensorboard import TENSORBOARD_PORT
from components.plan.labels import TENSORBOARD
from tests.harness import PROJECT_ROOT
from tests.realpods.conftest import REAL_CLUSTER, REAL_SERVERS, UNTIL_STOPPED, scaled_to_real_nodes
from tests.realpods.test_evaluator import EVALUATOR, check_the_trainers_evaluator, wait_until_no_evaluator_runs
from tests.realpods.test_network_policy import connect, refused_in_time, side_pod
from tests.realpods.test_programs import FAIL_WITHIN_S, wait_for_phase
from tests.stack_variants import write_variant
from tools.localcluster import realnodes
from tools.nodeimage.program_images import build_program_image

TENSORBOARD_REQUIREMENTS = PROJECT_ROOT / "tests" / "team_programs" / "tensorboard" / "requirements.txt"
SERVES_WITHIN_S = 300.0
SCALARS_WITHIN_S = 240.0


def _get(url: str) -> object:
    with urllib.request.urlopen(url, timeout=30) as answer:
        return json.loads(answer.read())


CHECKPOINT_EVERY = 200


def test_tensorboard_serves_the_trainers_loss_and_its_evaluator_is_replaced_alone(
    real_cluster, local_volume, tmp_path, capsys
):
    image = build_program_image("tensorboard", TENSORBOARD_REQUIREMENTS)
    assert realnodes.import_archive(REAL_CLUSTER, image.archive, keyed=True) == list(REAL_SERVERS)

    def edit(values):
        trains = {"steps": UNTIL_STOPPED, "checkpointEvery": CHECKPOINT_EVERY}
        scaled_to_real_nodes("servers", "servers", trains, ps=1, workers=1)(values)
        values["tfk8s:cluster"]["chief"]["checkpointVolume"] = {"size": "1Gi", "storageClass": local_volume}
        values["tfk8s:tensorboard"] = {"image": image.reference, "cpu": "100m", "memory": "768Mi"}
        values["tfk8s:cluster"]["evaluator"] = dict(EVALUATOR)

    stack = write_variant(real_cluster.stacks_dir, "scene1-case1", "real-tensorboard", edit)
    experiment = load_experiment(stack)
    stop, urls = threading.Event(), []
    serving = threading.Thread(
        target=serve_tensorboard,
        args=(experiment, str(real_cluster.kubeconfig), None, 0, stop, urls.append),
        daemon=True,
    )
    with real_cluster.running(stack, tmp_path):
        serving.start()
        try:
            deadline = time.monotonic() + SERVES_WITHIN_S
            while not urls:
                assert serving.is_alive(), capsys.readouterr().err
                assert time.monotonic() < deadline, f"TensorBoard was not served within {SERVES_WITHIN_S:.0f} s"
                time.sleep(1.0)
            (url,) = urls
            # Its NetworkPolicy admits no one by default (no allowFrom): not even the experiment's
            # own chief, on the real nodes' enforcing agents; the port-forward is no pod's connection.
            board = side_pod(real_cluster.core, experiment.namespace, experiment.stack, TENSORBOARD)
            chief = real_cluster.running_chief(stack).metadata.name
            said = connect(real_cluster.core, experiment.namespace, chief, board.status.pod_ip, TENSORBOARD_PORT)
            assert refused_in_time(said), f"the chief reached TensorBoard: {said}"
            deadline = time.monotonic() + SCALARS_WITHIN_S
            while True:
                runs = _get(f"{url}data/runs")
                points = _get(f"{url}data/plugin/scalars/scalars?run=train&tag=loss") if "train" in runs else []
                if len(points) >= 2:
                    break
                assert time.monotonic() < deadline, f"no loss in TensorBoard within {SCALARS_WITHIN_S:.0f} s: {runs}"
                time.sleep(2.0)
            # [wall time, step, value] per point, one per progress line of the chief.
            steps = [step for _, step, _ in points]
            assert steps == sorted(steps) and steps[0] > 0, steps
            assert all(0.0 < value < 10.0 for _, _, value in points), points
            tags = _get(f"{url}data/plugin/scalars/tags")
            assert set(tags["train"]) >= {"loss", "examples_per_sec"}, tags
            # The evaluator's, written into TensorBoard's folder of the volume it otherwise only reads.
            deadline = time.monotonic() + SCALARS_WITHIN_S
            while not (evaluated := _get(f"{url}data/plugin/scalars/scalars?run=eval&tag=eval_loss") if "eval" in
                       _get(f"{url}data/runs") else []):
                assert time.monotonic() < deadline, f"no eval_loss in TensorBoard within {SCALARS_WITHIN_S:.0f} s"
                time.sleep(2.0)
            assert all(step % CHECKPOINT_EVERY == 0 and 0.0 < value < 10.0 for _, step, value in evaluated), evaluated
        finally:
            stop.set()
            serving.join(timeout=30)
        said = capsys.readouterr().out  # the command's lines; `status --json` comes next
        assert f"TensorBoard of stack '{experiment.stack}'" in said and url in said, said
        # The same experiment's evaluator: `top` shows it, and lost, it is replaced alone.
        check_the_trainers_evaluator(real_cluster, stack, experiment.namespace, capsys, CHECKPOINT_EVERY)
        real_cluster.finish(stack)
        summary, _ = real_cluster.chief_summary(stack)
        assert summary["steps"] >= CHECKPOINT_EVERY
        wait_for_phase(stack, real_cluster, capsys, "Succeeded", FAIL_WITHIN_S)
        wait_until_no_evaluator_runs(real_cluster, stack)
