"""`python -m components plan | render | status | top | diff | export`: the command line (components/cli)."""

import signal
import sys

from components.cli.main import main

if __name__ == "__main__":
    # Killed quietly by a closed pipe (`plan ... | head`), as command-line tools are.
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.exit(main())
