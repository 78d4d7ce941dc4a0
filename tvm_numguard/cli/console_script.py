"""The ``numguard`` console script.

Importing the CLI (click, numguard's commands) takes most of a second before
``cli.main`` can handle anything; a Ctrl-C then ends with 130 and one line
too, not a traceback, and a SIGTERM with 143 and its line (no worker exists
yet). Nothing here imports more than the standard library.
"""

import os
import signal
import sys


def _terminated_while_starting(signum, frame) -> None:
    os.write(2, b"numguard: terminated (SIGTERM) while starting\n")
    os._exit(128 + signum)


def main() -> None:
    signal.signal(signal.SIGTERM, _terminated_while_starting)  # cli.main installs its own
    try:
        from . import main as run
    except KeyboardInterrupt:
        sys.stderr.write("numguard: interrupted\n")
        sys.exit(130)
    run()
