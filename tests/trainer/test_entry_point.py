"""`python -m trainer`: each role to its program, and a role it has no program for refused by name."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

import trainer.__main__ as entry
from trainer.cluster import TaskConfig
from trainer.shared_names import TRAINER_ROLES


def test_a_role_the_trainer_has_no_program_for_is_refused_by_name_never_run_as_a_chief(monkeypatch, capsys):
    ran = []
    monkeypatch.setattr(entry, "die_with_launcher", lambda: None)
    monkeypatch.setattr(entry, "read_task_config", lambda: SimpleNamespace(task_type="scorer", name="scorer-0",
                                                                             tf_config_json=lambda: "{}"))
    monkeypatch.setattr(entry, "read_settings", lambda: None)
    monkeypatch.setattr(entry, "exit_on_termination", lambda *args, **kwargs: None)
    monkeypatch.setattr(entry, "set_grpc_options", lambda: None)
    monkeypatch.setattr(entry, "serve", lambda task: ran.append(task))
    monkeypatch.setenv("TF_CONFIG", "{}")
    import trainer.chief

    monkeypatch.setattr(trainer.chief, "main", lambda *args: ran.append(args) or 0)
    assert entry.main() == 2
    assert ran == []
    assert "task type 'scorer' has no program in tfk8s's trainer" in capsys.readouterr().err


def test_every_role_of_the_table_has_a_program():
    assert sorted(entry.PROGRAMS) == sorted(role.name for role in TRAINER_ROLES)


@pytest.mark.parametrize(
    "task_type, program", [("chief", "chief"), ("ps", "serve"), ("worker", "serve"), ("evaluator", "evaluator")]
)
def test_each_role_runs_its_program_and_only_the_chief_is_told_to_finish_early(monkeypatch, task_type, program):
    import trainer.chief
    import trainer.evaluator

    ran, told = [], []
    cluster = {"chief": ["c:1"], "ps": ["p:1"], "worker": ["w:1"]}
    monkeypatch.setattr(entry, "die_with_launcher", lambda: None)
    monkeypatch.setattr(entry, "read_task_config", lambda: TaskConfig(cluster, task_type, 0))
    monkeypatch.setattr(entry, "read_settings", lambda: None)
    monkeypatch.setattr(entry, "exit_on_termination", lambda name, on_finish=None: told.append(on_finish))
    monkeypatch.setattr(entry, "set_grpc_options", lambda: None)
    monkeypatch.setattr(entry, "serve", lambda task: ran.append("serve"))
    monkeypatch.setattr(trainer.chief, "main", lambda task, settings, finish: ran.append("chief") or 0)
    monkeypatch.setattr(trainer.evaluator, "main", lambda task, settings: ran.append("evaluator") or 0)
    monkeypatch.setenv("TF_CONFIG", "{}")
    assert entry.main() == 0
    assert ran == [program]
    assert (told[0] is not None) == (task_type == "chief"), "only the chief finishes early on SIGUSR1"
