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


@pytest.fixture(autouse=True)
def _guard_limit_off_the_clock(monkeypatch):
    """The guard's default time limit follows the machine's speed (20x the compile, at least
    120 s); a test's verdict must not. Its own tests set the factor and floor they check."""
    from tvm_numguard.api.guard import clock

    monkeypatch.setattr(clock, "AUTO_FLOOR_S", 3600.0)
    yield
