"""One run of numguard, told top-down, above the judge, the search and the builds (``engine.py``)."""

from . import engine

__all__ = ["engine"]
