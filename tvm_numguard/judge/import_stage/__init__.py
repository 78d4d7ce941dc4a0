"""The import stage: TVM's import (its reference build) judged against the
model's own framework (``framework/``) and the truth in float64.

``framework_watch.FrameworkWatch`` runs the framework beside a session (the
search's inputs, then the witness); ``agreement.py`` holds the rule (when TVM's
reference is the side at fault); ``first_node.py`` names the model's first node
TVM computes differently; ``judgement.ImportJudgement`` is the typed answer a
Finding keeps.
"""

from .agreement import IMPORT_VERDICTS, OutputAgreement
from .judgement import ImportJudgement, ImportOrigin
from .framework_watch import FrameworkWatch

__all__ = ["IMPORT_VERDICTS", "FrameworkWatch", "ImportJudgement", "ImportOrigin", "OutputAgreement"]
