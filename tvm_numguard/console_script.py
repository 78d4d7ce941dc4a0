"""The ``numguard`` console script.

Importing the CLI (click, numguard's commands) takes most of a second before
``cli.main`` can handle anything; a Ctrl-C then ends with 130 and one line
too, not a traceback. Nothing here imports more than the standard library.
"""

import sys


def main() -> None:
    try:
        from .cli import main as run
    except KeyboardInterrupt:
        sys.stderr.write("numguard: interrupted\n")
        sys.exit(130)
    run()
