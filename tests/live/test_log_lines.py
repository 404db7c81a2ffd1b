"""The trainer's log lines: the format users and `top` read, written and read by one module."""

from __future__ import annotations

from trainer.log_lines import ProgressLine, event_line, last_summary, progress_line, read_event, read_progress_line


def test_the_progress_line_reads_as_users_have_seen_it():
    assert progress_line(936, 0.31764, 9506.14) == "step     936  loss 0.3176      9506.1 examples/s"
    assert progress_line(1234567, -0.5, 12.0) == "step 1234567  loss -0.5000        12.0 examples/s"


def test_a_progress_line_reads_back_to_its_figures():
    assert read_progress_line(progress_line(104, 0.512, 9506.1)) == ProgressLine(104, 0.512, 9506.1)
    assert read_progress_line("step     936  loss 0.3176      9506.1 examples/s\n") == ProgressLine(936, 0.3176, 9506.1)
    nan = read_progress_line(progress_line(5, float("nan"), 1.0))
    assert nan is not None and nan.step == 5 and nan.loss != nan.loss
    for loss in (float("inf"), float("-inf"), -1.5e-7):
        read = read_progress_line(progress_line(6, loss, 1.0))
        assert read is not None and read.loss == round(loss, 4), loss


def test_other_lines_are_not_progress():
    for line in ["", "step", "steps 10 done", "epoch 1/3 ... done", event_line("start", step=0), "step 5 loss x 1 examples/s"]:
        assert read_progress_line(line) is None, line


def test_an_event_is_one_json_object_with_its_name_first():
    assert event_line("checkpoint", step=100) == '{"event": "checkpoint", "step": 100}'
    assert read_event('{"event": "checkpoint", "step": 100}\n') == {"event": "checkpoint", "step": 100}


def test_other_lines_are_not_events():
    for line in ["", "{not json", '{"step": 1}', "[1, 2]", progress_line(1, 0.5, 1.0), "chief: waiting"]:
        assert read_event(line) is None, line


def test_the_summary_is_the_last_summary_event():
    first = event_line("summary", steps=1, loss_last=0.9)
    last = event_line("summary", steps=400, loss_last=0.41, examples_per_sec=42270.0)
    log = "\n".join([event_line("start", step=0), "not json {", first, progress_line(400, 0.41, 1.0), last, "bye", ""])
    assert last_summary(log) == {"event": "summary", "steps": 400, "loss_last": 0.41, "examples_per_sec": 42270.0}
    assert last_summary("no summary here\n" + event_line("start", step=0)) is None
