"""Pass authors' regression tests: one pass (or several) over a corpus of models.

``corpus``: the models and their ranges; ``row``: one pass on one model;
``run``: all of them, in worker processes; ``render``: the table, JUnit XML.
"""

from .corpus import BUILTIN, CorpusModel, collect
from .row import VERDICTS, RegressRow, RowRequest, judge_model, changed_model
from .run import EXIT_CLEAN, EXIT_ERROR, EXIT_NOT_CHANGED, EXIT_VIOLATION, RegressRun, regress

__all__ = ["BUILTIN", "CorpusModel", "collect", "VERDICTS", "RegressRow", "RowRequest", "judge_model", "changed_model",
           "EXIT_CLEAN", "EXIT_ERROR", "EXIT_NOT_CHANGED", "EXIT_VIOLATION", "RegressRun", "regress"]
