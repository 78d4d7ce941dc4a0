"""The ``numguard`` command line (see ``numguard --help`` for the exit codes).

Errors are told in one line with one prefix, ``numguard: error:``: a usage
error exits 2, an internal error 3 (with a line asking for a bug report),
Ctrl-C 130, SIGTERM 143. Nothing from deep inside TVM reaches the user as a traceback.
"""

from __future__ import annotations

import os
import platform
import signal
import sys
import warnings

import click

from .. import __version__
from ..base.errors import (BUG_REPORT, EXIT_UNSUPPORTED, ImportFailure, InternalError, Terminated, UnsupportedModel,
                      UsageError, summarize_error)
from .commands import COMMANDS, EXIT_CODES
from ..base.quiet import captured_stderr
from .console import Interrupted, Invocation
from .signals import InterruptDeadline, exit_code
from ..base.flags import FLAG, invoked_as
from .range_check import Check
from .reduce import Reduce
from .regress import Regress

ERROR = "numguard: error:"


def version_text() -> str:
    """numguard, TVM and Python versions: what a bug report needs first."""
    try:
        import tvm

        tvm_version = tvm.__version__
    except Exception as err:  # a broken TVM install is worth knowing about, not a crash here
        tvm_version = f"not importable ({summarize_error(err)})"
    return f"numguard {__version__}\nTVM {tvm_version}\nPython {platform.python_version()} ({sys.executable})"


def _print_version(ctx, param, value):
    if value and not ctx.resilient_parsing:
        click.echo(version_text())
        ctx.exit(0)


@click.group(epilog=EXIT_CODES)
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_print_version,
              help="Show the numguard, TVM and Python versions and exit.")
def cli():
    """Find the TVM compiler pass that changes what a model computes."""


for _command in COMMANDS + (Check(), Regress(), Reduce()):
    _command.register(cli)


def main(argv=None) -> None:
    """The console script: run ``numguard ARGS`` and exit with its code."""
    words = list(sys.argv[1:] if argv is None else argv)
    invocation = Invocation()
    with InterruptDeadline(invocation.interrupted_line):
        code = _run(argv, words, invocation)
    if argv is None:  # the console script: what the interpreter's exit does after numguard's last line
        signal.signal(signal.SIGINT, _exit_interrupted)  # ends with 130 on a Ctrl-C (143 on SIGTERM) too,
        signal.signal(signal.SIGTERM, _exit_interrupted)
        _quiet_teardown()  # and TVM's destructors ("BlockBuilder destroyed ...") say nothing after it
    sys.exit(code)


def _quiet_teardown() -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    os.close(devnull)


def _exit_interrupted(signum, frame) -> None:
    sys.stderr.flush()
    sys.stdout.flush()
    os._exit(exit_code(signum))


def kept(invocation: Invocation) -> str:
    """What a command that ends on an error had found, where a witness was kept ("" where none was)."""
    return f"; {invocation.found()}" if invocation.witness_path else ""


def _run(argv, words: list, invocation: Invocation) -> int:
    """``main``'s body: every way a command ends, as a line and the exit code."""
    try:
        # what TVM (C++ log lines) and torch (FutureWarnings) write to stderr is held back
        # (kept in a JSON report's diagnostics), so stderr has numguard's own lines; -v lets it through
        with captured_stderr(enabled=not {"-v", "--verbose"} & set(words)) as captured, warnings.catch_warnings():
            invocation.captured = captured
            # TVM's own Python warnings (e.g. "Tag 'broadcast' declared via TagScope was not used") are
            # about TVM's internals; the user asked numguard a question and gets its answer
            warnings.filterwarnings("ignore", module=r"tvm(\.|$)")
            code = cli.main(args=argv, prog_name="numguard", standalone_mode=False, obj=invocation)
            held = len(captured.lines())
        if held and not {"-q", "--quiet"} & set(words):
            click.echo(f"numguard: {held} line(s) that TVM or the frontend wrote to stderr were held back "
                       "(a --json report keeps them as diagnostics; -v shows them)", err=True)
    except UsageError as err:
        click.echo(f"{ERROR} {err.said_with(FLAG)}{kept(invocation)}", err=True)
        return 2
    except ImportFailure as err:  # a finding about TVM's import, delivered like a verdict
        click.echo(f"numguard: IMPORT: {err.said_with(FLAG)}", err=True)
        if err.repro:
            click.echo("numguard: TVM alone shows it:\n" + err.repro, err=True)
        return 1
    except UnsupportedModel as err:  # TVM's limit, not the user's mistake: its own exit code
        click.echo(f"numguard: TVM cannot import the model: {err.said_with(FLAG)}", err=True)
        return EXIT_UNSUPPORTED
    except InternalError as err:
        click.echo(f"{ERROR} internal error: {err}{kept(invocation)}", err=True)
        return 3
    except Interrupted as err:
        click.echo(f"numguard: {err}", err=True)
        return err.code
    except (click.exceptions.Abort, KeyboardInterrupt) as err:  # click makes a KeyboardInterrupt an Abort
        signum = signal.SIGTERM if isinstance(err, Terminated) or isinstance(err.__cause__, Terminated) \
            else signal.SIGINT
        click.echo(f"numguard: {invocation.interrupted_line(signum)}", err=True)
        return exit_code(signum)
    except click.UsageError as err:
        program = invoked_as()
        hint = f" (see '{program} {err.ctx.info_name} --help')" if err.ctx is not None and err.ctx.parent else \
            f" (see '{program} --help')"
        click.echo(f"{ERROR} {err.format_message()}{hint}", err=True)
        return 2
    except click.ClickException as err:
        click.echo(f"{ERROR} {err.format_message()}", err=True)
        return 2
    except Exception as err:  # a bug of ours, or a failure nobody turned into a clear error
        click.echo(f"{ERROR} internal error: {summarize_error(err)} ({BUG_REPORT}){kept(invocation)}", err=True)
        return 3
    return code if isinstance(code, int) else 0


if __name__ == "__main__":
    main()
