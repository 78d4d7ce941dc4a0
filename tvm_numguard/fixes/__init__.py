"""Narrow fixes: the culprit pass kept from acting only where it breaks the model.

``find_fix`` (``numguard fix``) bisects, narrows each culprit by delta
debugging over its rewrites and verifies the fixed build on a fresh search;
``load(path)`` reads the fix a user puts into their own ``tvm.compile``.
The mechanism (where a pass acted, undoing it there, the instrument) is
``narrow/``.
"""

from .fix_file import Fix, fix_document, load, switch_off
from .finder import FixOutcome, find_fix

__all__ = ["Fix", "FixOutcome", "find_fix", "fix_document", "load", "switch_off"]
