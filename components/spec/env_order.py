"""`tfk8s:program.env` in the order the stack file writes it, whoever read the file.

The order is part of what env means: a task's variables are set in that order, and the kubelet
expands `$(NAME)` in a value only from the variables set before it. `plan` and `render` read the
stack file and keep its order; the engine hands the Pulumi program each mapping with its keys
sorted (`{Z: z, A: $(Z)}` arrives as `{A: $(Z), Z: z}`), so without the file `pulumi up` would
set A before Z and leave '$(Z)' in A as text. The program takes the order back from the file.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

from .secrets import PROGRAM_KEY


def in_stack_file_order(values: Mapping[str, Any], written: Optional[Mapping[str, Any]]) -> dict[str, Any]:
    """`values` with `tfk8s:program.env`'s names in `written`'s order (the stack file's values); a name the
    file does not hold keeps its place after those it does. Without the file (`written` None, or no env in
    it), the values as they are."""
    program = values.get(PROGRAM_KEY)
    written_program = written.get(PROGRAM_KEY) if written is not None else None
    env = program.get("env") if isinstance(program, Mapping) else None
    written_env = written_program.get("env") if isinstance(written_program, Mapping) else None
    if not isinstance(env, Mapping) or not isinstance(written_env, Mapping):
        return dict(values)
    order = [name for name in written_env if name in env] + [name for name in env if name not in written_env]
    assert isinstance(program, Mapping)
    return {**values, PROGRAM_KEY: {**program, "env": {name: env[name] for name in order}}}
