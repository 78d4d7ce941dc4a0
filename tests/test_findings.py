"""Every finding in docs/findings.md reproduces from its standalone script
(TVM and numpy only, no numguard): the day TVM fixes one, this test says so."""

import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FINDINGS = os.path.join(ROOT, "findings")
SCRIPTS = sorted(f for f in os.listdir(FINDINGS) if f.endswith(".py"))


def test_every_script_is_a_finding_of_the_write_up_and_needs_no_numguard():
    text = open(os.path.join(ROOT, "docs", "findings.md")).read()
    linked = set(re.findall(r"\(\.\./findings/([a-z0-9_]+\.py)\)", text))
    assert linked == set(SCRIPTS)
    for name in SCRIPTS:
        source = open(os.path.join(FINDINGS, name)).read()
        assert "numguard" not in source, name
        assert "Exit status: 0 when" in source, name  # the script says what its exit status means


@pytest.mark.slow
@pytest.mark.parametrize("script", SCRIPTS)
def test_the_finding_still_reproduces(script):
    done = subprocess.run([sys.executable, os.path.join(FINDINGS, script)], capture_output=True, text=True,
                          timeout=300, cwd=FINDINGS)
    assert done.returncode == 0, f"{script} no longer reproduces (TVM fixed it?):\n{done.stdout}\n{done.stderr[-2000:]}"
