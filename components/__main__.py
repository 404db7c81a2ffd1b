"""`python -m components plan | render | status | top | export | diff | stacks | import-tfjob`: the command line
(components/cli; exit codes in components/cli/exit_codes.py)."""

import os
import signal
import sys

# The standard library alone: loaded before a Ctrl-C could need its code.
from .cli.exit_codes import BAD_INPUT, INTERRUPTED


def run(argv: list[str] | None = None) -> int:
    """The command's exit code: Ctrl-C is 130 and a full standard output 2, each in one line, no traceback.
    The one place that catches them, around the import too."""
    try:
        # Imported here: Ctrl-C while the Kubernetes and Pulumi modules load is an interruption too.
        from .cli.main import main

        code = main(argv)
        sys.stdout.flush()
        return code
    except KeyboardInterrupt:
        print(file=sys.stderr)  # past the terminal's ^C, so the shell's prompt starts a line of its own
        return INTERRUPTED
    except OSError as error:
        if error.filename is not None:
            raise  # a file's error is its command's to name; this is for standard output alone
        # `plan > /dev/full`: one line, and nothing left to flush when the interpreter exits.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        print(f"python -m components: cannot write standard output: {error.strerror or error}", file=sys.stderr)
        return BAD_INPUT


if __name__ == "__main__":
    # Killed quietly by a closed pipe (`plan ... | head`), as command-line tools are.
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.exit(run())
