"""The exit codes of `python -m components`, one table for every subcommand.

Scripts and CI branch on them, so each code means one thing everywhere: 1 is
an answer (the experiments differ, the experiment failed), never a crash; 2 is
input tfk8s cannot use, named in one line on stderr. `--help` prints this
table and docs/commands.md holds the same rows (a test compares them).
"""

from __future__ import annotations

import textwrap

OK = 0
NO = 1
BAD_INPUT = 2
INTERRUPTED = 130

EXIT_CODES: tuple[tuple[int, str], ...] = (
    (OK, "done; where the command answers a question, the answer is yes (diff: the same; status: succeeded or "
         "every task running as planned)"),
    (NO, "the answer is no: diff: the experiments differ; status: the experiment failed, or a task is not "
         "running where the plan put it; top: the experiment failed; import-tfjob: nothing usable came of FILE "
         "(nothing written)"),
    (BAD_INPUT, "bad input or usage: a stack, file, kubeconfig or flag tfk8s cannot use, a cluster it cannot "
                "read, or an output it cannot write; one line on stderr names it"),
    (INTERRUPTED, "interrupted (Ctrl-C)"),
)


def exit_codes_help() -> str:
    """The table as `--help` shows it."""
    width = max(len(str(code)) for code, _ in EXIT_CODES)
    rows = [
        textwrap.fill(meaning, 100, initial_indent=f"  {code:<{width}}  ", subsequent_indent=" " * (width + 4))
        for code, meaning in EXIT_CODES
    ]
    return "exit codes:\n" + "\n".join(rows)
