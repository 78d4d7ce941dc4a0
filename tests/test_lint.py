"""The lint .ci/run makes, as a test: ruff over every Python file of the project (a second at
most). The type check (mypy) is CI's alone: it takes most of a minute."""

import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# what .ci/run checks: every folder that holds Python, and the pytest plugin
PATHS = ["tvm_numguard", "tests", "benchmarks", "patches", "findings", "examples", "numguard_pytest.py"]


def test_ruff_finds_nothing_to_fix():
    beside = os.path.join(os.path.dirname(sys.executable), "ruff")  # the venv's, as pip installs it
    ruff = beside if os.path.exists(beside) else shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed (the test extra has it: pip install -e '.[test]')")
    done = subprocess.run([ruff, "check", "--no-cache", *PATHS], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
