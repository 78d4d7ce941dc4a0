"""The static range check (``numguard check``): which operators of the model, and
of the module the pipeline's Relax passes make of it, can leave their domain or
their dtype's range somewhere in the declared input range.

Two modules are analysed (``analysis.analyse``): the model as imported, and
the module just before the pipeline's first ``LegalizeOps`` (after every Relax
pass that rewrites operators: FastMathTransform's kernels, ToMixedPrecision's
float16 casts, a user's rewrite). A warning of the second that the model does
not have at the same operator is **new**: the pipeline brought it. Each warning
gets its binding's name in the user's model (``origins.describe``) and what
drives it (``drivers.drive``: the corner or band of each input). Nothing is
built or run: a check takes the time of two walks over the graph, plus a few
dozen more per warning to find its drivers.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Mapping, Optional

import tvm

from ..modules import pristine
from ..origins import describe
from ..pipeline import CompileConfig
from .analysis import Analysis, RangeWarning, analyse
from .drivers import Driver, drive
from .interval import Interval

STOP_BEFORE = "LegalizeOps"  # the first pass after which Relax operators are kernels
MAX_DRIVEN = 8  # warnings per module whose drivers are searched (the worst first)
MODULES = ("model", "pipeline")


@dataclasses.dataclass(frozen=True)
class CheckWarning:
    """One warning, placed: in which module, where in the user's model, driven by what."""

    warning: RangeWarning
    module: str  # model | pipeline
    origin: str  # the binding's name in the user's model, or why there is none
    new: bool  # a pipeline warning the model does not have at the same operator
    drivers: Mapping[str, Driver]  # input name -> Driver (empty: not searched)

    def to_json(self) -> dict:
        return {**self.warning.to_json(), "module": self.module, "origin": self.origin, "new": self.new,
                "drivers": {name: d.to_json() for name, d in self.drivers.items()}}


@dataclasses.dataclass
class CheckResult:
    """What ``check`` found. ``warnings``: model's then pipeline's, each in program
    order; ``unanalysed``: warnings downstream of an operator the analysis does
    not know (it widened there, so they prove nothing); ``stopped``: where the
    pipeline's module was taken (None: the pipeline never legalized, only the
    model was analysed)."""

    warnings: list
    unanalysed: list
    unknown: dict  # op -> count, both modules
    stopped: Optional[str]
    bindings: dict  # module -> number of bindings analysed
    seconds: float

    @property
    def possible_defect(self) -> bool:
        return bool(self.warnings)

    @property
    def exit_code(self) -> int:
        return 1 if self.possible_defect else 0

    def concerning(self, module: str = "pipeline") -> list:
        """The warnings of one module, worst (largest excess) first."""
        return sorted((w for w in self.warnings if w.module == module), key=lambda w: -w.warning.excess)

    def warned(self, binding: str) -> Optional[CheckWarning]:
        """The pipeline warning at ``binding`` (a violation's origin), if any."""
        return next((w for w in self.warnings if w.module == "pipeline" and w.warning.binding == binding), None)


class _Capture:
    """Keeps the module the first ``STOP_BEFORE`` pass receives, then stops the pipeline."""

    class Reached(Exception):
        pass

    def __init__(self):
        self.module = None

    def instrument(self):
        capture = self

        @tvm.instrument.pass_instrument
        class StopBefore:
            def run_before_pass(self, mod, info):
                if info.name == STOP_BEFORE and capture.module is None:
                    capture.module = pristine(mod)
                    raise _Capture.Reached()
        return StopBefore()


def pipeline_module(mod: tvm.IRModule, config: CompileConfig) -> Optional[tvm.IRModule]:
    """The module just before the Relax pipeline's first LegalizeOps (None: it has none).
    A pipeline that fails before that point raises its error."""
    capture = _Capture()
    target = config.make_target()
    relax_pass = config.relax_pass(target)
    context = getattr(config, "context_options", dict)()
    try:
        with tvm.transform.PassContext(opt_level=config.opt_level, instruments=[capture.instrument()], **context):
            with target:
                relax_pass(pristine(mod))
    except Exception:
        if capture.module is None:
            raise
    return capture.module


def check(model, config: CompileConfig, ranges: Mapping[str, object], drive_warnings: bool = True) -> CheckResult:
    """The static range check of ``model`` (a Model) under ``config`` on ``ranges``
    (input name -> InputRange)."""
    started = time.perf_counter()
    intervals = {name: Interval(float(r.low), float(r.high)) for name, r in ranges.items()}
    modules = {"model": model.mod}
    later = pipeline_module(model.mod, config)
    if later is not None:
        modules["pipeline"] = later
    warnings, unanalysed, unknown, bindings = [], [], {}, {}
    model_result = None
    for which, mod in modules.items():
        func = mod["main"]
        place = _Places(model.origins, model.mod["main"], func)
        result = analyse(func, intervals)
        bindings[which] = sum(1 for key in result.values if isinstance(key, int))
        for op, count in result.unknown.items():
            unknown[op] = unknown.get(op, 0) + count
        model_result = model_result or result
        worst = sorted(result.warnings, key=lambda w: -w.excess)[:MAX_DRIVEN] if drive_warnings else []
        for w in result.warnings:
            new = which == "pipeline" and not _in_model(w, model_result)
            drivers = _drivers(func, intervals, w) if w in worst else {}
            warnings.append(CheckWarning(w, which, place(w.position), new, drivers))
        unanalysed += [CheckWarning(w, which, place(w.position), False, {}) for w in result.unanalysed]
    return CheckResult(warnings, unanalysed, unknown, STOP_BEFORE if later is not None else None, bindings,
                       time.perf_counter() - started)


class _Places:
    """Where a binding of the analysed function is in the user's model. Names
    change under passes (ToMixedPrecision renumbers ``lv``), so a binding is
    matched to the model's by its operator and its rank among that operator's
    calls, when both functions call it equally often; a binding a pass made
    (a cast) is placed by the value it was made from."""

    HOPS = 4  # how far up a pass-made value's first argument is followed

    def __init__(self, origins: Mapping, model_func, func):
        self.origins = origins
        self.bindings = _bindings(func)
        self.by_var = {b.var: k for k, b in enumerate(self.bindings)}
        ranks, model_ranks = _op_ranks(self.bindings), _op_ranks(_bindings(model_func))
        self.counterpart = {}
        for op, positions in ranks.items():
            if len(model_ranks.get(op, ())) == len(positions):
                for k, m in zip(positions, model_ranks[op]):
                    self.counterpart[k] = (m, op)
        self.model_names = [b.var.name for b in _bindings(model_func)]

    def __call__(self, position: int) -> str:
        if not self.origins:
            return describe(self.origins, None, None)
        k = position
        for hop in range(self.HOPS + 1):
            if k in self.counterpart:
                m, op = self.counterpart[k]
                text = describe(self.origins, self.model_names[m], op)
                return text if hop == 0 else f"made by a pass from a value of the model: {text}"
            value = self.bindings[k].value
            args = [a for a in getattr(value, "args", ()) if a in self.by_var]
            if not args:
                break
            k = self.by_var[args[0]]
        return describe(self.origins, self.bindings[position].var.name, None)


def _bindings(func) -> list:
    body = func.body
    return [b for block in body.blocks for b in block.bindings] if hasattr(body, "blocks") else []


def _op_ranks(bindings: list) -> dict:
    """op name -> positions of its calls, in order."""
    ranks = {}
    for k, b in enumerate(bindings):
        op = getattr(getattr(b.value, "op", None), "name", None)
        if isinstance(op, str):
            ranks.setdefault(op, []).append(k)
    return ranks


def _in_model(warning: RangeWarning, model: Analysis) -> bool:
    """The model has the same kind of warning at the same operator (by binding and op)."""
    return any(w.kind == warning.kind and w.op == warning.op and w.binding == warning.binding for w in model.warnings)


def _drivers(func, intervals, warning: RangeWarning) -> dict:
    def present(parts):
        return analyse(func, parts).find(warning)
    return drive(present, intervals)
