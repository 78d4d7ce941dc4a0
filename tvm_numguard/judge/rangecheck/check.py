"""The static range check (``numguard check``): which operators of the model, and
of the module the pipeline's Relax passes make of it, can leave their domain or
their dtype's range somewhere in the declared input range.

Two modules are analysed (``analysis.analyse``): the model as imported, and
the module just before the pipeline's first ``LegalizeOps`` (after every Relax
pass that rewrites operators: FastMathTransform's kernels, ToMixedPrecision's
float16 casts, a user's rewrite). A warning of the second that the model does
not have at the same operator is **new**: the pipeline brought it. Each warning
gets its binding's name in the user's model (``provenance.describe``) and what
drives it (``drivers.drive``: the corner or band of each input). Nothing is
built or run: a check takes the time of two walks over the graph, plus a few
dozen more per warning to find its drivers.

A warning in words (``warning_line``) is one line, as progress and every report
say it.
"""

from __future__ import annotations

import dataclasses
import time
from typing import TYPE_CHECKING, Mapping, Optional

import tvm

from ...base.errors import BuildError, PipelineError, summarize_error
from ...base.frozen import freeze_fields
from .rounding import RoundingLoss, rounding_loss
from ...ir.instrument import PassGate
from ...ir.relax_ir import function_bindings, op_name, pristine
from ...ir.provenance import describe
from ...ir.pipeline import CompileConfig, pass_context
from .analysis import Analysis, RangeWarning, analyse
from .drivers import Driver, drive
from .interval import Interval
from .patterns import pattern

if TYPE_CHECKING:
    from ...locate.ranges import InputRange

STOP_BEFORE = "LegalizeOps"  # the first pass after which Relax operators are kernels
MAX_DRIVEN = 8  # warnings per module whose drivers are searched (the worst first)


@dataclasses.dataclass(frozen=True)
class CheckWarning:
    """One warning, placed: in which module, where in the user's model, driven by what."""

    warning: RangeWarning
    module: str  # model | pipeline
    provenance: str  # the binding's name in the user's model, or why there is none
    new: bool  # a pipeline warning the model does not have at the same operator
    drivers: Mapping[str, Driver]  # input name -> Driver (empty: not searched)

    def __post_init__(self):
        freeze_fields(self, "drivers")

    def to_json(self) -> dict:
        return {**self.warning.to_json(), "module": self.module, "provenance": self.provenance, "new": self.new,
                "drivers": {name: d.to_json() for name, d in self.drivers.items()}}


@dataclasses.dataclass(frozen=True)
class CheckResult:
    """What ``check`` found. ``warnings``: model's then pipeline's, each in program
    order; ``loose``: warnings whose bound passed through several weighted sums
    (analysis.LOOSE_DEPTH: it can be many times too wide; they are told, not
    counted); ``unanalysed``: warnings downstream of an operator the analysis
    does not know (it widened there, so they prove nothing); ``stopped``: where
    the pipeline's module was taken (None: the pipeline never legalized, only
    the model was analysed)."""

    warnings: list
    loose: list
    unanalysed: list
    unknown: dict  # op -> count, both modules
    stopped: Optional[str]
    bindings: dict  # module -> number of bindings analysed
    seconds: float
    ranges: Mapping = dataclasses.field(default_factory=dict)  # input name -> the InputRange checked
    rounding: Optional[RoundingLoss] = None  # what one rounding costs where the pipeline narrows floats

    def __post_init__(self):
        freeze_fields(self, "warnings", "loose", "unanalysed", "unknown", "bindings", "ranges")

    @property
    def possible_defect(self) -> bool:
        return bool(self.warnings)

    @property
    def exit_code(self) -> int:
        return 1 if self.possible_defect else 0

    def concerning(self, module: str = "pipeline") -> list:
        """The warnings of one module, worst (largest excess) first."""
        return sorted((w for w in self.warnings if w.module == module), key=lambda w: -w.warning.excess)


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
    """The module just before the Relax pipeline's first LegalizeOps (None: it has none),
    the events ``config.disable`` names skipped. A pipeline that fails before that
    point raises its error."""
    capture = _Capture()
    target = config.make_target()
    relax_pass = config.relax_pass(target)
    fix = [config.fix.instrument()] if config.fix else []
    instruments = [*fix, PassGate(config.disable), capture.instrument()]
    try:
        with pass_context(config, instruments):
            with target:
                relax_pass(pristine(mod))
    except Exception:
        if capture.module is None:
            raise
    return capture.module


class RangeCheck:
    """The two functions of one model and pipeline, ready to analyse on any ranges:
    ``run(ranges)`` is the check; ``reached(result, inputs)`` says which of its
    warnings still stand when each input is held to the values of ``inputs``
    (a witness): the violation lies where the check warned."""

    def __init__(self, model, config: CompileConfig):
        self.model = model
        self.functions = {"model": model.mod["main"]}
        try:
            later = pipeline_module(model.mod, config)
        except PipelineError:
            raise
        except Exception as err:  # TVM and user passes raise many types: the pipeline does not run
            raise BuildError(f"the pipeline '{config.pipeline}' fails on this model before LegalizeOps: "
                             f"{summarize_error(err)}") from None
        if later is not None:
            self.functions["pipeline"] = later["main"]
        self.stopped = STOP_BEFORE if later is not None else None
        self.names = [spec.name for spec in model.inputs]

    def drivers(self, func, intervals: dict, warning: RangeWarning) -> dict:
        """{input name: Driver} of one warning of ``func`` (``intervals`` by parameter name)."""
        def present(parts):
            return analyse(func, parts, until=warning.position).find(warning)

        upper = warning.interval.hi >= -warning.interval.lo
        if warning.kind == "overflow":  # the side that overflows more: the other may be cut off downstream
            drivers = drive(present, intervals, (lambda w: w.interval.hi) if upper else (lambda w: -w.interval.lo))
        else:
            drivers = drive(present, intervals)
        if any(d.corner == "mixed" for d in drivers.values()):
            found = pattern(func, warning.position, {p: p.name for p in func.params}, upper)
            if found is not None and found[0] in drivers and drivers[found[0]].corner == "mixed":
                drivers[found[0]] = dataclasses.replace(drivers[found[0]], pattern=found[1])
        names = {p.name: name for p, name in zip(func.params, self.names)}
        return {names[param]: driver for param, driver in drivers.items()}

    def params(self, func, by_input: Mapping[str, Interval]) -> dict:
        """``by_input`` (keyed by the model's input names) keyed by ``func``'s
        parameter names instead: main's parameters are the inputs in order, and
        a frontend may have renamed them (ONNX ``gpu_0/data_0`` is ``gpu_0_data_0``)."""
        return {p.name: by_input[name] for p, name in zip(func.params, self.names) if name in by_input}

    def run(self, ranges: Mapping[str, InputRange], drive_warnings: bool = True) -> CheckResult:
        """The check on ``ranges`` (input name -> InputRange)."""
        started = time.perf_counter()
        loose: list
        unknown: dict
        warnings: list
        warnings, loose, unanalysed, unknown, bindings = [], [], [], {}, {}
        model_result = None
        for which, func in self.functions.items():
            place = _Places(self.model.provenance, self.functions["model"], func)
            intervals = self.params(func, _intervals(ranges))
            result = analyse(func, intervals)
            bindings[which] = sum(1 for key in result.values if isinstance(key, int))
            for op, count in result.unknown.items():
                unknown[op] = unknown.get(op, 0) + count
            model_result = model_result or result
            tight = [w for w in result.warnings if not w.loose]
            worst = sorted(tight, key=lambda w: -w.excess)[:MAX_DRIVEN] if drive_warnings else []
            for w in result.warnings:
                new = which == "pipeline" and not place.in_model(w, model_result)
                if w.kind == "piecewise" and not new:
                    continue  # a split the model itself makes (ONNX Shrink, a clamp) is its definition
                drivers = self.drivers(func, intervals, w) if w in worst else {}
                (loose if w.loose else warnings).append(CheckWarning(w, which, place(w.position), new, drivers))
            unanalysed += [CheckWarning(w, which, place(w.position), False, {}) for w in result.unanalysed]
        rounding = rounding_loss(self.functions["model"], self.functions["pipeline"]) \
            if "pipeline" in self.functions else None
        return CheckResult(warnings, loose, unanalysed, unknown, self.stopped, bindings,
                           time.perf_counter() - started, dict(ranges), rounding)

    def reached(self, result: CheckResult, inputs: Mapping[str, object]) -> list:
        """The pipeline warnings of ``result`` that stand with every input held to
        [min, max] of its values in ``inputs``."""
        func = self.functions.get("pipeline")
        if func is None:
            return []
        hulls = {name: Interval.of_array(values) for name, values in inputs.items()}
        standing = analyse(func, self.params(func, hulls))
        return [w for w in result.warnings if w.module == "pipeline" and standing.find(w.warning) is not None]


def check(model, config: CompileConfig, ranges: Mapping[str, InputRange], drive_warnings: bool = True) -> CheckResult:
    """The static range check of ``model`` (a Model) under ``config`` on ``ranges``
    (input name -> InputRange)."""
    return RangeCheck(model, config).run(ranges, drive_warnings)


def _intervals(ranges: Mapping[str, InputRange]) -> dict:
    return {name: Interval(float(r.low), float(r.high)) for name, r in ranges.items()}


class _Places:
    """Where a binding of the analysed function is in the user's model. Names
    change under passes (ToMixedPrecision renumbers ``lv``), so a binding is
    matched to the model's by its operator and its rank among that operator's
    calls, when both functions call it equally often; a binding a pass made
    (a cast) is placed by the value it was made from."""

    HOPS = 4  # how far up a pass-made value's first argument is followed

    def __init__(self, provenance: Mapping, model_func, func):
        self.provenance = provenance
        self.bindings = function_bindings(func)
        self.by_var = {b.var: k for k, b in enumerate(self.bindings)}
        ranks, model_ranks = _op_ranks(self.bindings), _op_ranks(function_bindings(model_func))
        self.counterpart = {}
        for op, positions in ranks.items():
            if len(model_ranks.get(op, ())) == len(positions):
                for k, m in zip(positions, model_ranks[op]):
                    self.counterpart[k] = (m, op)
        self.model_names = [b.var.name for b in function_bindings(model_func)]

    def in_model(self, warning: RangeWarning, model: Analysis) -> bool:
        """The model has the same kind of warning at the same operator: at the
        binding matched by operator rank (else by name)."""
        matched = self.counterpart.get(warning.position)
        return any(w.kind == warning.kind and w.op == warning.op
                   and (w.position == matched[0] if matched else w.binding == warning.binding)
                   for w in model.warnings + model.unanalysed)

    def __call__(self, position: int) -> str:
        if not self.provenance:
            return describe(self.provenance, None, None)
        k = position
        for hop in range(self.HOPS + 1):
            if k in self.counterpart:
                m, op = self.counterpart[k]
                text = describe(self.provenance, self.model_names[m], op)
                return text if hop == 0 else f"made by a pass from a value of the model: {text}"
            value = self.bindings[k].value
            args = [a for a in getattr(value, "args", ()) if a in self.by_var]
            if not args:
                break
            k = self.by_var[args[0]]
        return describe(self.provenance, self.bindings[position].var.name, None)


def _op_ranks(bindings: list) -> dict:
    """op name -> positions of its calls, in order."""
    ranks: dict = {}
    for k, b in enumerate(bindings):
        op = op_name(b.value)
        if op is not None:
            ranks.setdefault(op, []).append(k)
    return ranks


KIND_WORDS = {
    "domain": "can leave its domain",
    "overflow": "can overflow",
    "approximation": "gets arguments where its approximation departs",
    "piecewise": "splits the range",
}


def number(v: float) -> str:
    return f"{v:.6g}"


def interval(pair) -> str:
    return f"[{number(pair[0])}, {number(pair[1])}]"


def warning_line(w: dict) -> str:
    """One warning (its document form) in a line: where, what, the interval, against which limit."""
    new = " (new: the pipeline brought it)" if w["new"] else ""
    return (f"{w['binding']} = {w['op']} {KIND_WORDS[w['kind']]}{new}: {w['dtype']} values in "
            f"{interval(w['interval'])}, limit: {w['limit']}")
