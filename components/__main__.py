"""`python -m components plan | render | status | top | export | diff | stacks | import-tfjob`: the command line
(components/cli; exit codes in components/cli/exit_codes.py)."""

import os
import signal
import sys

# As components.cli.exit_codes says; here, before anything is imported.
BAD_INPUT = 2
INTERRUPTED = 130


def _run() -> int:
    # Killed quietly by a closed pipe (`plan ... | head`), as command-line tools are.
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    try:
        # Imported here: Ctrl-C while the Kubernetes and Pulumi modules load is an interruption too.
        from components.cli.main import main

        code = main()
        sys.stdout.flush()
        return code
    except KeyboardInterrupt:
        print(file=sys.stderr)
        return INTERRUPTED
    except OSError as error:
        if error.filename is not None:
            raise  # a file's error is its command's to name; this is for standard output alone
        # `plan > /dev/full`: one line, and nothing left to flush when the interpreter exits.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        print(f"python -m components: cannot write standard output: {error.strerror or error}", file=sys.stderr)
        return BAD_INPUT


if __name__ == "__main__":
    sys.exit(_run())
