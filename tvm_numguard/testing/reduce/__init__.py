"""``numguard reduce``: a violation cut down to a few Relax operators, written as a repro.

``reduce_violation`` (reducer.py) searches within a build budget; ``write_repro``
(files.py) writes the TVMScript, its constants, the witness and a pytest file;
``cut.py`` does the graph surgery on main's bindings.
"""

from .files import write_repro
from .reducer import BUILD_BUDGET, PassQuestion, Reduction, ReduceError, reduce_violation

__all__ = ["BUILD_BUDGET", "PassQuestion", "Reduction", "ReduceError", "reduce_violation", "write_repro"]
