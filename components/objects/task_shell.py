"""The POSIX shell (`/bin/sh`, in every image a TensorFlow program runs from) that starts a task's
program as its child, as the container's first process: it passes SIGTERM on (the kernel drops a
signal sent to a PID 1 that set no handler, so a program that never handles SIGTERM would keep its
pod for the whole grace period) and exits with the program's status. With tfk8s:logs it also sends
the program's output through the log shipper (components/objects/log_shipping.py).

No `$(` or `$$` in the scripts: the kubelet would expand them in a container's command.
"""

from __future__ import annotations

import math
from typing import Any

from ..spec.logs import CODE_MOUNT
from ..spec.trainer_contract import log_protocol

Manifest = dict[str, Any]

FORWARDER_NAME = "tfk8s-program"  # the shell's $0, in its error messages
# The pipe between a task's program and its log shipper, in the scratch folder every task has
# (components/objects/pods.py SCRATCH_DIR).
SCRATCH_LOG_PIPE = "/scratch/.tfk8s-log-pipe"
SHIPPER_PATH = f"{CODE_MOUNT}/{log_protocol.SHIPPER}"
# The longest the shell waits for the shipper once the program ended: the shipper's own drain
# (trainer/log_protocol.py SHIPPER_DRAIN_S) and a margin, so that a shipper still sending is not killed.
SHIPPER_WAIT_MARGIN_S = 5
SHIPPER_WAIT_S = math.ceil(log_protocol.SHIPPER_DRAIN_S) + SHIPPER_WAIT_MARGIN_S

# The program (its argv: the script's arguments; `exec`, so that a first word such as `echo` is the
# program, not a builtin) starts as the shell's child. A SIGTERM before the child exists is passed
# on as soon as it does. A `wait` that a signal cut short (status above 128 with a trap run) is
# waited again: dash keeps the child for it, bash and busybox reaped it already and still answer
# with its status; only a shell that kept nothing (127, the child gone) leaves the cut-short status.
_PASS_SIGTERM = """\
trap 'stop=1; [ -z "$child" ] || kill -TERM "$child" 2>/dev/null' TERM
"""
_WAIT_LOOP = """\
while :; do
  stop=
  wait "$child"
  code=$?
  if [ -n "$again" ] && [ "$code" -eq 127 ] && ! kill -0 "$child" 2>/dev/null; then break; fi
  status=$code
  if [ -z "$stop" ] || [ "$code" -le 128 ]; then break; fi
  again=1
done
"""
SIGNAL_FORWARDER = (
    _PASS_SIGTERM
    + 'exec "$@" &\n'
    + 'child=$!\n[ -z "$stop" ] || kill -TERM "$child" 2>/dev/null\n'
    + _WAIT_LOOP
    + 'exit "$status"\n'
)

# The same, with the program's output (stdout and stderr, one stream) through a pipe to the log
# shipper, which copies it to the container's output and sends it to the log archive; the program
# stays the shell's child, whose status it exits with. The shipper needs Python 3.8: an older
# python3 would die at once and leave the program writing into a pipe no one reads, so without it
# (or without a pipe) the program runs as without tfk8s:logs, said once. The shipper starts with
# USR1 ignored until its own handler is set (a program that ends at once would have it killed
# before it read a line); once the program ended it is told so (USR1) and waited for, at most
# SHIPPER_WAIT_S, also when that USR1 came too early and a child the program left holds the pipe.
# SIGUSR1 is passed on like SIGTERM (tfk8s's trainer's chief finishes where it stands on it, sent
# to PID 1), with its own flag: one that came before the child existed is dropped, never a TERM.
# The timer holds none of the container's output: its `sleep` may outlive the shell.
LOG_FORWARDER = f"""\
log={SCRATCH_LOG_PIPE}
shipper=
if command -v python3 >/dev/null 2>&1 && python3 -c 'import sys; sys.exit(sys.version_info < (3, 8))' 2>/dev/null \\
    && rm -f "$log" && mkfifo "$log"; then
  (trap '' USR1; exec python3 {SHIPPER_PATH} < "$log") &
  shipper=$!
else
  echo "tfk8s: no python3 3.8 or later, or no pipe in /scratch: this task's log is not archived" >&2
fi
trap 'stop=1; term=1; [ -z "$child" ] || kill -TERM "$child" 2>/dev/null' TERM
trap 'stop=1; [ -z "$child" ] || kill -USR1 "$child" 2>/dev/null' USR1
if [ -n "$shipper" ]; then exec "$@" > "$log" 2>&1 & else exec "$@" & fi
child=$!
[ -z "$term" ] || kill -TERM "$child" 2>/dev/null
{_WAIT_LOOP}if [ -n "$shipper" ]; then
  kill -USR1 "$shipper" 2>/dev/null
  (sleep {SHIPPER_WAIT_S} && kill -KILL "$shipper") < /dev/null > /dev/null 2>&1 &
  timer=$!
  while kill -0 "$shipper" 2>/dev/null; do wait "$shipper"; done
  kill "$timer" 2>/dev/null
  rm -f "$log"
fi
exit "$status"
"""


def shell_started(argv: list[str], archived: bool) -> Manifest:
    """Run `argv` as the shell's child: SIGTERM passed on, and with tfk8s:logs its output archived."""
    script = LOG_FORWARDER if archived else SIGNAL_FORWARDER
    return {"command": ["/bin/sh", "-c", script, FORWARDER_NAME], "args": argv}
