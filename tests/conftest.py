import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# patches/ is a top-level folder of fault-injection modules named in pipelines
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA device (skipped without one)")
    config.addinivalue_line("markers", "pool: the test runs numguard's default worker pool (one worker per core); "
                                       "every other test builds in-process unless it asks for workers itself")


@pytest.fixture(autouse=True)
def _builds_in_process(request, monkeypatch):
    """Builds run in the test's own process unless a test names its workers (or is marked ``pool``):
    forking a pool per check costs more than the builds of a tiny model (a tiny-MLP bisect 8.5 s with
    the default pool, 4 s in-process), and pytest-xdist already gives every core a test."""
    if request.node.get_closest_marker("pool") is None:
        from tvm_numguard.build.workers import pool

        monkeypatch.setattr(pool, "available_cores", lambda: 0)
    yield


# the console script beside this Python: what the README's install makes (.venv/bin/numguard)
SCRIPT = os.path.join(os.path.dirname(sys.executable), "numguard")


@pytest.fixture
def script_not_on_path(monkeypatch):
    """numguard run as ``.venv/bin/numguard`` from a shell whose PATH does not
    find it (the README's install): the command lines it prints must start
    with that path. Returns the path."""
    monkeypatch.setattr(sys, "argv", [SCRIPT] + sys.argv[1:])
    folders = os.environ.get("PATH", "").split(os.pathsep)
    monkeypatch.setenv("PATH", os.pathsep.join(f for f in folders if not os.path.exists(os.path.join(f, "numguard"))))
    return SCRIPT
