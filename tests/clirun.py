"""Running the numguard CLI inside a test: its exit code and what it printed;
and running a command line it printed as a user pasting it into a shell would."""

import os
import subprocess

import pytest

from tvm_numguard.cli import main
from tvm_numguard.cli.console import PROGRESS_PREFIX


def run_cli(capsys, *args):
    """(exit code, stdout, stderr) of ``numguard ARGS``."""
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def error_lines(err: str) -> list:
    """stderr less the progress lines (``numguard: [  1.2s] ...``): what the user is told went wrong."""
    return [ln for ln in err.splitlines() if ln.strip() and not ln.startswith(PROGRESS_PREFIX)]


def assert_one_line_error(code, err, *fragments):
    """Bad input: exit code 2 and one line on stderr holding every fragment, no traceback."""
    assert code == 2, err
    lines = error_lines(err)
    assert len(lines) == 1, err
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def run_printed(line: str, cwd, importable=()) -> subprocess.CompletedProcess:
    """``line`` run as printed: by a shell in ``cwd``, with this test's
    environment (PATH included), and the folders ``importable`` on PYTHONPATH
    (where the line names a module of them, as patches.exp_range:make_pass)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*importable, *filter(None, [env.get("PYTHONPATH")])])
    return subprocess.run(line, shell=True, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
