"""Keeping a pass from acting at chosen places (the mechanism of a narrow fix).

``rewrites`` finds where one pass event acted; ``undo.narrowed`` undoes it at
some of those places; a ``FixPlan`` says, per culprit event, where; its
``FixInstrument`` applies it while any compilation runs. Pure IR: no search,
no runs (``fixes/`` finds and verifies the places).
"""

from .instrument import FixInstrument, FixMismatch
from .plan import REMEDIES, CulpritFix, FixPlan
from .rewrites import Correspondence, Place, rewrites
from .undo import CannotUndo, narrowed

__all__ = ["REMEDIES", "CannotUndo", "Correspondence", "CulpritFix", "FixInstrument", "FixMismatch", "FixPlan",
           "Place", "narrowed", "rewrites"]
