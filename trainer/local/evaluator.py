"""The evaluator beside a local run: TensorFlow's side-car evaluator, outside the training cluster.

Started with the PS and workers, with the TF_CONFIG its pod gets (task `evaluator`, index 0, a
cluster without it), it follows the chief's checkpoints. As in a cluster, it never decides the
run's outcome: a failed evaluator is started again, alone. Once the chief has ended, it is given
a little time to evaluate the last checkpoint (or to exit by itself), then stopped with the rest.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

from ..log_lines import EvaluationLine, evaluation_line, read_evaluation_event
from .tasks import Task, last_lines, stop_all

if TYPE_CHECKING:
    from .tasks import TextOut

EVALUATOR_TASK = "evaluator-0"
EVALUATOR_RESTARTS = 5
# After the chief ended: time for the evaluator to evaluate the last checkpoint, which it looks
# for every few seconds (trainer/evaluator.py's POLL_S), or to exit by itself.
FINAL_EVALUATION_WAIT_S = 60.0
FOLLOW_S = 0.2


@dataclass
class LocalEvaluator:
    task: Task
    out: TextOut
    # tfk8s's trainer prints an `evaluation` event per checkpoint; a team's program, lines of its own.
    prints_events: bool = True
    evaluations: list[EvaluationLine] = field(default_factory=list)  # the `evaluation` events it printed
    restarts: int = 0
    exit_code: Optional[int] = None  # its last exit, once it has exited
    _stopping: bool = False
    _thread: Optional[threading.Thread] = None
    _lock: threading.Lock = field(default_factory=threading.Lock)  # no restart once it is being stopped

    def start(self) -> None:
        self.task.start()
        self._thread = threading.Thread(target=self._follow, name=EVALUATOR_TASK, daemon=True)
        self._thread.start()

    def _follow(self) -> None:
        """Show its evaluations as they come; start it again when it fails (not when it is done)."""
        with open(self.task.directory / "task.log", "rb") as log:
            log.seek(self.task.log_offset)
            pending = b""
            while True:
                stopping = self._stopping
                chunk = log.read()
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    self._line(line.decode(errors="replace"))
                if stopping:
                    return
                if not chunk and not self.task.alive():
                    self._exited()
                time.sleep(FOLLOW_S)

    def _line(self, line: str) -> None:
        evaluation = read_evaluation_event(line)
        if evaluation is not None:
            self.evaluations.append(evaluation)
            print(evaluation_line(evaluation.step, evaluation.eval_loss), file=self.out, flush=True)

    def _exited(self) -> None:
        process = self.task.process
        code = process.returncode if process is not None else None
        with self._lock:
            if self.exit_code is not None or self._stopping:
                return
            if code != 0 and self.restarts < EVALUATOR_RESTARTS:
                said = last_lines(self.task.output_since_start())
                self.restarts += 1
                print(
                    f"{EVALUATOR_TASK} exited {code}: {said}; starting it again (restart {self.restarts})",
                    file=self.out,
                    flush=True,
                )
                self.task.start()
                return
            self.exit_code = code
        print(f"{EVALUATOR_TASK} exited {code}", file=self.out, flush=True)

    def evaluated(self, step: int) -> bool:
        return any(evaluation.step >= step for evaluation in self.evaluations)

    def finish(self, until_evaluated: Optional[int] = None, wait_s: float = FINAL_EVALUATION_WAIT_S) -> dict[str, Any]:
        """Once the chief has ended: wait until it exits by itself, or until it has evaluated step
        `until_evaluated` (a chief that finished early: the evaluator waits for its final step),
        at most `wait_s`; then stop it. What it did, for the run's summary."""
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline and self.exit_code is None:
            if until_evaluated is not None and self.evaluated(until_evaluated):
                break
            time.sleep(FOLLOW_S)
        self.stop()
        report: dict[str, Any] = {"restarts": self.restarts}
        if self.prints_events:
            report["evaluations"] = len(self.evaluations)
        else:
            report["log"] = last_lines(self.task.output_since_start())
        if self.evaluations:
            last = self.evaluations[-1]
            report["last"] = {"step": last.step, "eval_loss": last.eval_loss}
        if self.exit_code is not None:
            report["exit_code"] = self.exit_code
        else:
            report["stopped"] = True
        return report

    def stop(self) -> None:
        with self._lock:
            if self._stopping:
                return
            self._stopping = True
            stop_all([self.task])
        if self._thread is not None:
            self._thread.join(timeout=5.0)  # the lines it printed last are read and shown
