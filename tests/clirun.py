"""Running the numguard CLI inside a test: its exit code and what it printed."""

import pytest

from tvm_numguard.cli import main


def run_cli(capsys, *args):
    """(exit code, stdout, stderr) of ``numguard ARGS``."""
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def assert_one_line_error(code, err, *fragments):
    """Bad input: exit code 2 and one line on stderr holding every fragment, no traceback."""
    assert code == 2, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
