"""The precision stage: TVM computes an operator in the model's narrow dtype,
the framework computes it wider.

A float16 model declares float16 operators; TVM computes them in float16 (a
float16 mean accumulates in float16), where ONNX Runtime's CPU provider runs
many float16 kernels in float32 (it inserts casts). Their difference measures
float16 against float32, not a frontend defect. The test is the widening itself:
TVM's import with the differing operator kept in float32
(``ir/narrow/widen.keep_float32``: its inputs cast up, its result cast back),
else with its own chain kept in float32 (it and the narrow operators it is
computed from, never the rest of the model), is built and run on the witness,
the inputs the search tried last and fresh inputs of the range; where it is
no longer at fault on any of them, the difference was precision, and that is
the verified widening. Where it still is (a wrong formula, a wrong shape, a float32
value TVM computes in float16), the import is at fault as before.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Optional, Sequence

import numpy as np
import tvm
from tvm import relax

from ...ir.narrow.widen import NARROW_FLOATS, keep_float32, widenable
from ...ir.relax_ir import function_bindings, tensor_type
from ...build.compile import compile_plain, legalized, run_build
from ...build.kernel_cache import KernelCache
from ..numbers import MAX_ROUNDS
from ...ir.targets import target_of
from ...base.tolerance import Tolerance
from .judgement import ImportOrigin, WidenedOp
from .first_node import Located, first_difference, origin_at
from .local_node import at_fault_alone


def widenable_bindings(mod: tvm.IRModule) -> list:
    """The bindings of ``main`` computed in a narrow float that can be kept in float32, in order."""
    return [b.var.name for b in function_bindings(mod["main"]) if widenable(b)]


def widened_build(model, names: Sequence[str], target, kernels=None):
    """TVM's plain build of ``model`` with ``names`` kept in float32 (built once, run on every trial:
    a float16 GPT2 block took minutes where each trial built it again); ``kernels``: a KernelCache."""
    target = target_of(target)
    build = compile_plain(legalized(keep_float32(model.mod, names), target), target, kernels)
    if not build.ok:
        raise RuntimeError(f"the model with {', '.join(names)} kept in float32 does not build: {build.error}")
    return build


def chain_of(mod: tvm.IRModule, binding: str) -> list:
    """``binding`` of main and every binding it is computed from, in main's order."""
    bindings = function_bindings(mod["main"])
    reads = {b.var.name: {v.name for v in relax.analysis.free_vars(b.value)} for b in bindings}
    wanted, stack = set(), [binding]
    while stack:
        name = stack.pop()
        if name in wanted or name not in reads:
            continue
        wanted.add(name)
        stack.extend(reads[name])
    return [b.var.name for b in bindings if b.var.name in wanted]


def candidate_sets(mod: tvm.IRModule, first: Optional[str], declared_narrow: Callable[[str], bool]) -> list:
    """Which bindings to try keeping in float32: the first differing one alone,
    then its own chain (it and the narrow bindings it is computed from), never
    the rest of the model: widening everything would excuse an unstable formula
    anywhere. Only bindings the model itself declares narrow
    (``declared_narrow``) take part: a float32 model that TVM computes in
    float16 is narrowed by TVM, and that is a defect, not precision."""
    every = [name for name in widenable_bindings(mod) if declared_narrow(name)]
    if first is None or first not in every:
        return []
    chain = [name for name in chain_of(mod, first) if name in every]
    return [[first]] + ([chain] if chain != [first] else [])


@dataclasses.dataclass(frozen=True)
class PrecisionOutcome:
    """What keeping operators in float32 came to: ``widened`` (binding names of
    main); ``explained``: with them kept in float32 TVM agrees on all ``verified_on``
    input sets; else ``origin``, the first node that still differs."""

    widened: tuple
    explained: bool
    origin: Optional[ImportOrigin]
    verified_on: int = 0


def explain_precision(located: Located, origin: ImportOrigin, tol: Tolerance, trials: Sequence,
                      declared_narrow: Callable[[str], bool]) -> PrecisionOutcome:
    """Starting at ``origin``: keep the differing value in float32, else its own
    chain (``candidate_sets``); the whole model must then agree on every one of
    ``trials`` ((inputs, accepts(outputs)) pairs, the witness first). Where it
    does not, the chain stays kept and the next node that still differs is
    explained the same way, up to MAX_ROUNDS: a float16 model may hold several
    operators the framework computes wider, each explained by its own chain."""
    widened: list
    model, mod, widened, first = located.model, located.model.mod, [], origin
    # the rounds' builds differ in the kernels of the few bindings each keeps in float32: each kernel's
    # machine code is made once (a float16 kernel's is slow on x86, docs/findings.md 23)
    kernels = KernelCache()
    stuck = None  # the first differing value that its own widening left differing: where the import is at fault
    for _ in range(MAX_ROUNDS):
        if origin is None or origin.discontinuous or origin.binding is None:
            break
        sets = [[n for n in names if n not in widened]
                for names in candidate_sets(mod, origin.binding, declared_narrow)]
        sets = [names for names in sets if names]
        for names in sets:
            try:
                build = widened_build(model, widened + names, located.target, kernels)
                if all(accepts(run_build(build, model.input_names(), inputs)) for inputs, accepts in trials):
                    return PrecisionOutcome(tuple(widened + names), True, None, len(trials))
            except Exception:  # a widened build that fails proves nothing: the import stays at fault
                return PrecisionOutcome(tuple(widened), False, origin)
        if not sets:
            break
        widened += sets[-1]
        try:
            current = located.of(keep_float32(mod, widened), kernels)
        except Exception:  # as above
            break
        if origin_at(current, origin.key, current.tolerance_of(origin.key, tol)) is not None:  # still differs
            if _wrong_alone(current, origin, tol):
                stuck = origin
                break  # kept in float32 and still off its own float64 truth: a wrong formula, not precision
            stuck = stuck or origin
        # a value kept in float32 may differ from a framework that computes it in float16 too (ONNX Runtime's
        # float16 MatMul accumulates in float16): the next round asks the first value past the widened ones
        following, _ = first_difference(current, current.expected, tol, skip=frozenset(widened))
        if following is None or following.key == origin.key:
            break  # nothing left to widen for, or widening did not help it
        origin = following
    return PrecisionOutcome(tuple(widened), False, stuck or origin or first)


def _wrong_alone(located: Located, origin: ImportOrigin, tol: Tolerance) -> bool:
    """Whether TVM's value of ``origin``, its chain kept in float32, is at fault against the node's float64
    truth on TVM's own arguments (``local_node.at_fault_alone``): no widening explains that."""
    mine, theirs = located.tvm_value(origin.key), located.expected.get(origin.key)
    if mine is None or theirs is None:
        return False
    return at_fault_alone(located, origin.key, np.asarray(mine), np.asarray(theirs),
                          located.tolerance_of(origin.key, tol))


def widened_entries(model, names: Sequence[str]) -> tuple:
    """``names`` as the report keeps them (WidenedOp): binding, the model's own
    name (what ``--keep-float32`` takes) and where it is in the model."""
    entries = []
    for name in names:
        provenance = model.provenance.get(name)
        entries.append(WidenedOp(name, provenance.key if provenance is not None and provenance.key else name,
                                 provenance.label if provenance is not None else name))
    return tuple(entries)


def narrow_dtype(model) -> str:
    """The narrow float the model declares (float16 or bfloat16)."""
    dtypes = {str(tensor_type(b.var)[1]) for b in function_bindings(model.mod["main"])}
    return next((d for d in NARROW_FLOATS if d in dtypes), "float16")


__all__ = ["MAX_ROUNDS", "PrecisionOutcome", "candidate_sets", "chain_of", "explain_precision", "narrow_dtype",
           "widenable_bindings", "widened_build", "widened_entries"]
