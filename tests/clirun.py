"""Running the numguard CLI inside a test: its exit code and what it printed."""

import pytest

from tvm_numguard.cli import main


def run_cli(capsys, *args):
    """(exit code, stdout, stderr) of ``numguard ARGS``."""
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out, err = capsys.readouterr()
    return exc.value.code, out, err
