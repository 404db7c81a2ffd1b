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
    (
        OK,
        "done; where the command answers a question, the answer is yes (diff: the same; status: succeeded or "
        "every task running as planned)",
    ),
    (
        NO,
        "the answer is no: diff: the experiments differ; status: the experiment failed, or a task is not "
        "running where the plan put it; top: the experiment failed; import-tfjob: nothing usable came of FILE "
        "(unreadable, not YAML, no TFJob, a field it cannot carry, or a stack that --image, --nodes or --pool make "
        "invalid), --stack is no stack name, or the stack file exists and --force is not given; nothing is written",
    ),
    (
        BAD_INPUT,
        "bad input or usage: a stack or kubeconfig tfk8s cannot use; a file it cannot read as text "
        "(missing, a folder, no permission, binary, not UTF-8; import-tfjob's FILE is exit 1, as above); an unknown "
        "command or flag, or a flag's "
        "value not of its form (--watch SECONDS, an empty --kubeconfig); a cluster it "
        "cannot read; an output it cannot write. One line on stderr names it",
    ),
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
