"""dlight's schedule rules as pass events of their own: one per rule and kernel.

To TVM, dlight's ``ApplyDefaultSchedule`` is one pass: on each kernel not yet
scheduled it tries its rules in order and keeps the first schedule a rule
returns. As one event it could only be blamed whole ("ApplyDefaultSchedule#0")
and switched off whole. Inside a PassContext that holds a numguard instrument,
each schedule a rule gives one kernel is a pass of its own, named for both::

    ApplyDefaultSchedule#0                    a wrapper now (catalog.is_wrapper): never skipped
      dlight.gpu.Reduction@fused_mean#0       optional: this rule schedules this kernel
      dlight.gpu.Fallback@fused_add_relu#0    optional

and the wrapper's children take its place in the event path, so their ids are
top-level ones (``dlight.gpu.Reduction@fused_mean#0``): bisection candidates,
places a fix can name. Skipping one (an instrument's ``should_run`` says no)
leaves that kernel to the next rule that gives a schedule, in the end dlight's
``Fallback``, or numguard's required ``numguard.GpuFallback`` after the
pipeline: so a culprit is "dlight.gpu.Reduction on fused_mean", and a fix can
switch one rule off for one kernel and keep every other schedule. The
reference skips them all, as it skipped ``ApplyDefaultSchedule`` before.

How: TVM 0.27 tries the rules in one module function,
``tvm.s_tir.dlight.base.transform._apply_rules``, which ``ApplyDefaultSchedule``
looks up at each call. ``install`` replaces it, once per process, with
``_rules_as_events``, which calls TVM's own function unchanged unless this
thread is inside a PassContext that holds a numguard instrument (``entered`` and
``left``, called from ``EventInstrument.enter_pass_ctx``/``exit_pass_ctx``).
So a compile without numguard runs exactly TVM's code, and so does tuning
(``tunable=True``, MetaSchedule's design spaces).

Limits:
  - a rule that gives no schedule for a kernel makes no event (it was asked
    first: ``rule.apply`` builds a new Schedule and changes nothing it is given);
    one that raises makes an event that raises its error where it runs;
  - the kernel's name is its name in the module ``ApplyDefaultSchedule`` was
    given (``kernels_of``, from ``EventInstrument.run_before_pass``; dlight
    hands its rules the function alone), else its ``global_symbol``, else
    ``kernel``, told apart by their counter then (``dlight.gpu.Fallback@kernel#1``);
  - a rule applied elsewhere than through ``_apply_rules`` (a user's own
    loop over ``rule.apply``) stays inside the pass that applies it;
  - a TVM whose dlight lacks ``_apply_rules`` keeps ``ApplyDefaultSchedule``
    one pass: ``install`` then changes nothing (``installed()`` says so).
"""

from __future__ import annotations

import threading

import tvm
import tvm_ffi

RULE_PREFIX = "dlight."
RULE_WRAPPER = "ApplyDefaultSchedule"
# a PassContext with a numguard instrument is open in this thread: how many deep
_OPEN = threading.local()
_INSTALL = threading.Lock()


def rule_name(rule) -> str:
    """``dlight.gpu.Reduction`` for TVM's rules (their kind: gpu, cpu, adreno),
    ``dlight.MyRule`` for a rule of the user's own."""
    module = type(rule).__module__
    head, found, tail = module.partition(".dlight.")
    kind = tail.split(".")[0] if found and head.startswith("tvm") else ""
    return RULE_PREFIX + (f"{kind}." if kind else "") + type(rule).__name__


def kernels_of(mod) -> None:
    """``ApplyDefaultSchedule`` starts on ``mod``: its kernels' names, for ``kernel_name``."""
    _OPEN.names = {func: gvar.name_hint for gvar, func in mod.functions_items()}


def kernel_name(func) -> str:
    name = getattr(_OPEN, "names", {}).get(func)
    symbol = func.attrs.get("global_symbol") if func.attrs is not None else None
    return str(name or symbol or "kernel")


def event_name(rule, func) -> str:
    """The pass name of ``rule``'s schedule of ``func``: ``dlight.gpu.Reduction@fused_mean``."""
    return f"{rule_name(rule)}@{kernel_name(func)}"


def is_rule_event(name: str) -> bool:
    return name.startswith(RULE_PREFIX) and "@" in name


def entered() -> None:
    """A PassContext holding a numguard instrument opens in this thread."""
    install()
    _OPEN.depth = getattr(_OPEN, "depth", 0) + 1


def left() -> None:
    _OPEN.depth = max(0, getattr(_OPEN, "depth", 0) - 1)
    if _OPEN.depth == 0:
        _OPEN.names = {}


def _dlight_transform():
    try:
        from tvm.s_tir.dlight.base import transform
    except ImportError:  # a TVM without dlight
        return None
    return transform if callable(getattr(transform, "_apply_rules", None)) else None


def installed() -> bool:
    transform = _dlight_transform()
    return transform is not None and getattr(transform._apply_rules, "tvm_apply_rules", None) is not None


def install() -> None:
    """Put ``_rules_as_events`` in place of dlight's ``_apply_rules`` (once)."""
    with _INSTALL:
        transform = _dlight_transform()
        if transform is None or installed():
            return
        original = transform._apply_rules

        def _rules_as_events(func, target, rules, tunable):
            if tunable or getattr(_OPEN, "depth", 0) == 0:
                return original(func, target, rules, tunable)
            return _first_kept_schedule(func, target, rules)

        setattr(_rules_as_events, "tvm_apply_rules", original)  # TVM's own: marks the patch as installed
        transform._apply_rules = _rules_as_events


def _first_kept_schedule(func, target, rules):
    """TVM's ``_apply_rules`` with each schedule it would keep proposed as a pass first."""
    from tvm import s_tir

    for rule in rules:
        try:
            space = rule.apply(func, target, False)
        except Exception as err:  # the rule's own error is its event's: raised only where it runs
            space = _Raises(err)
        if space is None:
            continue
        space = [space] if isinstance(space, (s_tir.Schedule, _Raises)) else list(space)
        kept = _proposed(event_name(rule, func), func, space[0])
        if kept is not None:
            return [s_tir.Schedule(kept)]
    return None


class _Raises:
    """A rule's ``apply`` that raised: the error comes back where its event runs
    (so a build failure is blamed on the rule and kernel, and the reference,
    which skips the event, builds)."""

    def __init__(self, error: Exception):
        self.error = error

    @property
    def mod(self):
        raise self.error


def _proposed(name: str, func, schedule):
    """Run the pass ``name`` that turns the one-kernel module of ``func`` into
    ``schedule``'s, and return the kernel it returned: the instruments see the
    kernel before and after and may edit what it returned (a fix's undo, in
    place). None where one of them skipped it, or undid it (the kernel came
    back as it went in): then the next rule is tried."""
    kernel = kernel_name(func)

    @tvm.transform.module_pass(opt_level=0, name=name)
    def schedule_kernel(mod, _ctx):
        return tvm.IRModule({kernel: schedule.mod["main"]})

    given = tvm.IRModule({kernel: func})
    returned = schedule_kernel(given)
    if returned.same_as(given) or tvm_ffi.structural_equal(returned[kernel], func):
        return None
    return returned[kernel]


__all__ = ["RULE_WRAPPER", "entered", "event_name", "install", "installed", "is_rule_event", "kernel_name",
           "kernels_of", "left", "rule_name"]
