"""`python -m trainer`: each role to its program, and a role it has no program for refused by name."""

from __future__ import annotations

from types import SimpleNamespace

import trainer.__main__ as entry


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
