"""Passes written the way pass authors write them, for the regress tests.

``noop``: a module pass that returns the module it was given (a pass whose
pattern never occurs): it must be reported as having fired on no model.
"""

import tvm


@tvm.transform.module_pass(opt_level=0, name="NoOpRewrite")
def noop(mod, ctx):
    return mod
