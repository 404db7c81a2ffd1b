"""A TFJob's program as the stack's `tfk8s:program` section: the workers' command and args for every
task (a role's own where it differs), the env, working directory and claims every role shares, and
TFJob's success rule as `done`."""

from __future__ import annotations

from typing import Any

from ..spec.program import PROGRAM_VARIABLES
from ..spec.trainer_contract import escaped
from .containers import RoleView
from .tfjob import Note, TFJob

DONE_COMMENTS = {
    "worker-0": "No Chief or Master in the TFJob: its worker 0 was the chief, and the experiment\n"
    "succeeds when worker 0 exits 0, as the TFJob did. done: workers waits for every worker.",
    "workers": "No Chief or Master in the TFJob: its worker 0 was the chief. successPolicy: AllWorkers:\n"
    "the experiment succeeds when every worker has exited 0.",
}


def _done(job: TFJob, roles: dict[str, RoleView]) -> str:
    """TFJob's success rule: the chief's exit 0; without one, worker 0's (its default), or every
    worker's (`successPolicy: AllWorkers`)."""
    if "chief" in roles:
        return "chief"
    return "workers" if job.spec.get("successPolicy") == "AllWorkers" else "worker-0"


def program_section(
    job: TFJob, roles: dict[str, RoleView], notes: list[Note], sources: dict[str, str]
) -> dict[str, Any]:
    """The workers' command and args for every task, a role's own where it differs; env, workingDir
    and claims every role shares."""
    workers = roles["worker"]
    program: dict[str, Any] = {}
    env = _shared_env(roles, notes)
    known = set(PROGRAM_VARIABLES) | set(env)
    for key in ("command", "args"):
        if workers.container.get(key) is not None:
            program[key] = _kept_literal(workers, key, known, notes)
    working_dir = workers.container.get("workingDir")
    if working_dir:
        program["workingDir"] = working_dir
    shown = working_dir or "the image's"
    for view in roles.values():
        if view.container.get("workingDir") != working_dir:
            notes.append(
                Note(view.at("workingDir"), f"tfk8s gives every task the workers' working directory ({shown})")
            )
    if env:
        program["env"] = env
    claims = _claims(roles, notes, sources)
    if claims:
        program["volumes"] = claims
    program["done"] = _done(job, roles)
    own: dict[str, Any] = {}
    for role in ("chief", "ps", "evaluator"):
        if role not in roles:
            continue
        view = roles[role]
        for key in ("command", "args"):
            if view.container.get(key) == workers.container.get(key):
                continue
            if view.container.get(key) is None:
                notes.append(
                    Note(
                        view.at(key),
                        f"unset, where the workers' is set: tfk8s runs the workers' {key} in "
                        "this role too; give it in tfk8s:program.roles",
                    )
                )
                continue
            own.setdefault(role, {})[key] = _kept_literal(view, key, known, notes)
    if own:
        program["roles"] = own
    return program


def _kept_literal(view: RoleView, key: str, known: set[str], notes: list[Note]) -> list[str]:
    """A command or args, with `$(NAME)` of a variable the task will not have escaped to `$$(NAME)`:
    Kubernetes passed it on as literal text, and tfk8s refuses what it would not expand."""
    words = []
    for index, word in enumerate(view.container[key]):
        word, unknown = escaped(str(word), known)
        for name in unknown:
            notes.append(
                Note(
                    f"{view.at(key)}[{index}]",
                    f"$({name}) names no variable a task has: kept as literal text ($$), as Kubernetes passed it on",
                )
            )
        words.append(word)
    return words


def _shared_env(roles: dict[str, RoleView], notes: list[Note]) -> dict[str, Any]:
    """The variables every role sets alike; tfk8s gives every task the same env."""
    names = {name for view in roles.values() for name in view.env}
    shared = {}
    for name in sorted(names):
        values = [view.env.get(name) for view in roles.values()]
        if all(value == values[0] for value in values) and values[0] is not None:
            shared[name] = values[0]
            continue
        for view in roles.values():
            if name in view.env:
                notes.append(
                    Note(
                        f"{view.at('env')} ({name})",
                        "set for some roles only, or differently: tfk8s gives "
                        "every task the same env (tfk8s:program.env)",
                    )
                )
    return shared


def _claims(roles: dict[str, RoleView], notes: list[Note], sources: dict[str, str]) -> list[dict[str, Any]]:
    """Every claim any role mounts, mounted in every task; each value's TFJob field into `sources`."""
    by_path: dict[str, dict[str, Any]] = {}
    for view in roles.values():
        for claim in view.claims:
            kept = by_path.setdefault(claim["mountPath"], claim)
            if kept["claim"] != claim["claim"]:
                notes.append(
                    Note(
                        f"{view.at('volumeMounts')} ({claim['mountPath']})",
                        f"another role mounts claim "
                        f"'{kept['claim']}' there; tfk8s mounts one claim per path in every task",
                    )
                )
    for index, claim in enumerate(by_path.values()):
        for key, source in claim["sources"].items():
            sources[f"tfk8s:program.volumes[{index}].{key}"] = source
    return [
        {"claim": c["claim"], "mountPath": c["mountPath"], **({"readOnly": True} if c["readOnly"] else {})}
        for c in by_path.values()
    ]
