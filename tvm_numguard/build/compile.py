"""Builds: compile a model under a skip set, run it on inputs.

Ctrl-C or SIGTERM during a build: TVM must not swallow it. Python runs a
signal handler at the next Python bytecode, which during a build is often an
instrument hook inside a nested pass; the KeyboardInterrupt it raises there
becomes an error of that pass, and FoldConstant, which runs whole builds inside
itself and gives up folding when one fails, swallows it: the build goes on as
if nothing happened. ``InterruptWatch`` notes every SIGINT (and every SIGTERM
the CLI turned into ``Terminated``) that arrives while it is active, so the
builder can raise it again once TVM returns, whatever TVM did with the first
one.
"""

from __future__ import annotations

import dataclasses
import gc
import signal
import threading
import time
from typing import TYPE_CHECKING, Literal, Mapping, Optional, Sequence

import numpy as np
import tvm
import tvm_ffi
from tvm import relax

from ..base.errors import Terminated, summarize_error
from ..ir.instrument import EveryOptional, PassEvent, PassGate, PassRecorder
from ..ir.instrument.checkpoint import Checkpoints, FastForward, restore
from ..ir.instrument.recorder import TirPipelineOutput
from ..ir.relax_ir import pristine
from ..ir.pipeline import CompileConfig, pass_context, target_device
from ..base.quiet import silenced_stderr
from .resume import RelaxPhase
from .vm_link import Linking, VMLowered, follows, lower_for_vm

if TYPE_CHECKING:
    from ..ir.narrow.instrument import FixInstrument


@dataclasses.dataclass
class Build:
    """One compilation of a model, successful or not."""

    skip: frozenset
    linked: Optional[object]  # the executable, once linked (``executable`` links a lazy build)
    events: list
    trace: list
    snapshots: dict
    error: Optional[str]
    seconds: float
    device: object = None
    _vm: Optional[object] = None
    # what the pipelines produced (compile_model(fingerprint=True)): equal
    # fingerprints, same TVM, same executable
    fingerprint: Optional[str] = None
    events_recorded: bool = False  # built with record=True: module hashes and snapshots kept
    relax_phase: Optional[RelaxPhase] = None  # the pipeline as written's: what a TIR-only skip set starts from
    # what the configuration's fix could not do: places it lacks, culprit events that never ran
    fix_problems: tuple = ()
    vm_seconds: float = 0.0  # creating its VirtualMachine (0 until made)
    lowered: Optional[VMLowered] = None  # lowered apart from its link (``vm_link``), kept for a second link
    linking: Linking = Linking()  # how its machine code is made; ``lazy``: not yet, until asked for

    @property
    def ok(self) -> bool:
        """Built (a lazy build not linked yet counts: its lowering passed every pass)."""
        return self.linked is not None or (self.error is None and self.linking.lazy and self.lowered is not None)

    @property
    def executable(self):
        """The VM executable, linked now if the build was lazy (a link that
        fails leaves it None and says why in ``error``)."""
        if self.linked is None and self.linking.lazy and self.error is None and self.lowered is not None:
            start = time.perf_counter()
            try:
                self.linked = self.lowered.link(self.linking.kernels, self.linking.alone)
            except Exception as err:  # LLVM's code generation may fail too: the build does not build
                self.error = summarize_error(err)
            self.seconds += time.perf_counter() - start
        return self.linked

    def made_as(self, other: "Build") -> bool:
        """Whether this build and ``other`` made the same executable: equal
        fingerprints, taken now from what each kept of its lowering where none was asked for."""
        mine, theirs = self.known_fingerprint(), other.known_fingerprint()
        return mine is not None and mine == theirs

    def known_fingerprint(self) -> Optional[str]:
        """``fingerprint``, or (a build in steps that was not asked for one) taken from its lowering now."""
        if self.fingerprint is None and self.error is None and self.lowered is not None:
            self.fingerprint = _fingerprint(self.lowered.relax_mod, self.lowered.tir_pipeline_output)
        return self.fingerprint

    def take_record(self, recorded: "Build") -> None:
        """What ``recorded`` (the same executable, built again recording its
        events) kept: its events, trace, snapshots and Relax phase."""
        self.events, self.trace, self.snapshots = recorded.events, recorded.trace, recorded.snapshots
        self.events_recorded, self.relax_phase = recorded.events_recorded, recorded.relax_phase

    def standalone(self):
        """The executable as ``relax.build`` links it, one library of every
        kernel (what a user is given: a build linked through a kernel cache may
        hold another kernel of the same name in a library it does not look up)."""
        if self.lowered is None or self.linking.alone or self.linking.kernels is None:
            return self.executable
        return self.lowered.relinked_alone()

    def vm(self):
        """The build's VirtualMachine (its first creation generates the machine
        code: as long as a build on a CNN)."""
        if self._vm is None:
            executable = self.executable
            if executable is None:
                raise RuntimeError(f"does not build: {self.error}")
            start = time.perf_counter()
            self._vm = relax.VirtualMachine(executable, self.device)
            self.vm_seconds = time.perf_counter() - start
        return self._vm


def compile_model(mod: tvm.IRModule, config: CompileConfig, request: Optional["BuildRequest"] = None,
                  resume: Optional[RelaxPhase] = None, linking: Linking = Linking()) -> Build:
    """Compile ``mod`` with ``config`` as ``request`` asks (default: the pipeline as written, unrecorded);
    ``resume``: a ``RelaxPhase`` that ``serves`` the request stands in for the Relax phase; ``linking``:
    how the machine code is made (default: as ``relax.build`` makes it, at once).
    Both phases run under one PassContext, so the recorder knows each event's level. A failure is
    ``Build.error``, never raised; the pipeline runs on a pristine copy of ``mod`` (a pass editing its
    input in place changes no later build); a Ctrl-C during the build raises KeyboardInterrupt when it
    ends, also where a pass swallowed it."""
    request = request or BuildRequest()
    skip, reference, instruments = request.skip, request.reference, request.instruments
    if resume is not None and not resume.can_start(request, config):
        raise ValueError("a build starts inside the pipeline as written only where it skips optional events, "
                         "unrecorded, uninstrumented, without a fix")
    target = config.make_target()
    steps = _in_steps(config, target, linking)
    # a build in steps knows what its TIR pipeline returned (its fingerprint) without an instrument
    ours = _Instruments.of(config, request, tir_output=request.fingerprint and not steps)
    # where the Relax phase of a build that skips a Relax event starts: that event's checkpoint
    forward = _fast_forward(resume, request, config, ours)
    # kept for the pipeline as written only (what sessions resume from: one lowered
    # module held, not one per build); a user's instrument may have acted on the phase
    keep_phase = not skip and not reference and not instruments
    start = time.perf_counter()
    executable, error, lowered, relax_phase, vm_lowered = None, None, None, None, None
    with InterruptWatch() as watch:
        try:
            relax_pass, tir_pass = config.relax_pass(target), config.tir_pass(target)
            with pass_context(config, [*([forward] if forward else []), *ours.all, *instruments]):
                if resume is not None and forward is None:
                    lowered = resume.resume(ours.gate, ours.recorder, ours.all)
                else:
                    with target:  # a fast-forward is made only from a resume (_fast_forward)
                        lowered = relax_pass(resume.input_of(forward.checkpoint) if forward and resume is not None
                                             else pristine(mod))
                    relax_phase = ours.relax_phase(lowered) if keep_phase else None
                if forward is None or forward.reached:  # else the pipeline never got to the event again
                    for instrument in ours.all:
                        instrument.set_phase("tir")
                    executable, vm_lowered = _tir_phase(lowered, target, tir_pass, config.build_options(),
                                                        linking if steps else Linking())
        except Exception as err:  # TVM raises many types; all mean "does not build"
            error, failure = summarize_error(err), err
    watch.reraise()  # even where a pass swallowed the KeyboardInterrupt
    if forward is not None and not forward.reached:
        return compile_model(mod, config, request, None, linking)
    if error is not None:
        with silenced_stderr():  # the failed build's IR builders warn on stderr when freed
            del failure
            gc.collect()
    built = error is None
    return Build(skip=frozenset(ours.gate.skipped) if reference else frozenset(skip), linked=executable,
                 events=ours.recorder.finish(), trace=ours.gate.trace, snapshots=ours.recorder.snapshots,
                 error=error, seconds=time.perf_counter() - start, device=target_device(target),
                 fingerprint=ours.fingerprint(lowered, vm_lowered) if built and request.fingerprint else None,
                 events_recorded=request.record,
                 relax_phase=relax_phase if built else None, fix_problems=ours.fix_problems(skip, reference),
                 lowered=vm_lowered, linking=linking if vm_lowered is not None else Linking())


def _fast_forward(resume: Optional[RelaxPhase], request: "BuildRequest", config,
                  ours: "_Instruments") -> Optional[FastForward]:
    """The instrument that runs the pipeline again from inside the Relax
    phase of the pipeline as written, for a request that skips a Relax event
    (``RelaxPhase.start_of``); None where the build starts elsewhere."""
    checkpoint = resume.start_of(request, config) if resume is not None and not resume.serves(request) else None
    if checkpoint is None:
        return None
    forward = FastForward(checkpoint, lambda at: restore(ours.all, ours.recorder, ours.gate, at, forward))
    return forward


def _in_steps(config, target: tvm.target.Target, linking: Linking) -> bool:
    """Whether a build of ``config`` lowers and links apart (``vm_link``):
    where ``linking`` asks for it and ``lower_for_vm`` follows the call."""
    if not linking.in_steps:
        return False
    try:
        tir_pass = config.tir_pass(target)
    except Exception:  # noqa: BLE001 - the build says why it does not build
        return False
    return follows(config.build_options(), tir_pass, dict(config.context_options().get("config") or {}))


def _tir_phase(lowered: tvm.IRModule, target: tvm.target.Target, tir_pass, options: dict, linking: Linking) -> tuple:
    """(executable or None, VMLowered or None): the build's TIR phase, in the
    PassContext it runs in: in steps (``vm_link``) where ``linking`` asks for
    them (``_in_steps``), linked at once unless ``linking.lazy``."""
    vm_lowered = lower_for_vm(lowered, target, tir_pass, options) if linking.in_steps else None
    if vm_lowered is None:
        return relax.build(lowered, target, relax_pipeline=None, tir_pipeline=tir_pass, **options), None
    if linking.lazy:
        return None, vm_lowered
    return vm_lowered.link(linking.kernels, linking.alone), vm_lowered


def relax_phase_events(mod: tvm.IRModule, config: CompileConfig) -> Optional[list]:
    """The recorded events (``changed`` known) of ``config``'s Relax pipeline
    alone on a pristine copy of ``mod``: what a pass under test there did, and
    that the module legalizes and lowers to the VM, without the TIR lowering and
    code generation of a build (four fifths of a small model's build here).
    None where that cannot be told so: the pass under test is a TIR one, or
    the phase fails (a build then says how)."""
    if not config.relax_under_test():
        return None
    target = config.make_target()
    # a build's own instruments (its fix included), with hashes for ``changed`` but no snapshots
    ours = dataclasses.replace(_Instruments.of(config, BuildRequest()),
                               recorder=PassRecorder(keep_snapshots=False, hash_modules=True))
    with InterruptWatch() as watch:
        try:
            with pass_context(config, ours.all), target:
                config.relax_pass(target)(pristine(mod))
            events = ours.recorder.finish()
        except Exception:  # noqa: BLE001 - TVM raises many types; the full build reports the failure
            events = None
    watch.reraise()
    return events


@dataclasses.dataclass(frozen=True)
class BuildRequest:
    """What changes a build of a model under a configuration: ``skip`` (the
    events skipped, closed over what they need), or ``reference`` (every
    optional event skipped, decided as the events come: no list needed
    first); ``instruments`` run after numguard's own (a guarded user's; TVM
    objects hash and compare by identity); ``record`` keeps module hashes and
    Relax snapshots; ``fingerprint`` hashes what the Relax and TIR pipelines
    made (``Build.fingerprint``). A build made for more (recorded,
    fingerprinted) serves a request for less. Checked when made."""

    skip: frozenset = frozenset()
    instruments: tuple = ()
    record: bool = False
    fingerprint: bool = False
    reference: bool = False

    def __post_init__(self):
        object.__setattr__(self, "skip", frozenset(self.skip))
        object.__setattr__(self, "instruments", tuple(self.instruments))
        if self.reference and self.skip:
            raise ValueError("a reference build skips every optional event: it takes no skip set")

    @property
    def slot(self) -> tuple:
        """Requests that differ only in what a build carries share one slot."""
        return (self.skip, self.instruments)

    def served_by(self, build: Build) -> bool:
        return (build.events_recorded or not self.record) and (build.fingerprint is not None or not self.fingerprint)


@dataclasses.dataclass(frozen=True)
class _Instruments:
    """numguard's own instruments of one build: the gate, the recorder and,
    for a fingerprint, what the TIR pipeline returned; with a fix in the
    configuration, the instrument that applies it (first: the recorder sees
    the module it leaves)."""

    gate: PassGate
    recorder: PassRecorder
    tir_output: Optional[TirPipelineOutput]
    fixer: Optional[FixInstrument] = None
    checkpoints: Optional[Checkpoints] = None  # a recorded build's: where a build skipping a Relax event starts

    @classmethod
    def of(cls, config: CompileConfig, request: BuildRequest, tir_output: bool = False) -> "_Instruments":
        every_optional = EveryOptional(bracketed=config.under_test is not None) if request.reference else None
        # a full record (hashes, snapshots) is for the build as written; gated
        # builds only need their event list
        gate = PassGate(request.skip | frozenset(config.disable), every_optional)
        recorder = PassRecorder(keep_snapshots=request.record, hash_modules=request.record)
        return cls(gate, recorder, TirPipelineOutput() if tir_output else None,
                   config.fix.instrument() if config.fix else None,
                   Checkpoints(recorder, gate) if request.record and not request.reference else None)

    @property
    def all(self) -> list:
        # the checkpoints first: they read what the recorder and the gate saw before each event
        return ([self.checkpoints] if self.checkpoints else []) + ([self.fixer] if self.fixer else []) + [
            self.gate, self.recorder] + ([self.tir_output] if self.tir_output else [])

    def relax_phase(self, lowered) -> RelaxPhase:
        return RelaxPhase.of(lowered, self.gate, self.recorder, self.checkpoints.taken if self.checkpoints else None)

    def fix_problems(self, skip: frozenset, reference: bool) -> tuple:
        """What the fix could not do in this build; a culprit the build skipped is not one."""
        if self.fixer is None:
            return ()
        # a culprit in (or under) a skipped event never runs, rightly
        unapplied = self.fixer.unapplied() if not skip and not reference and not self.gate.skipped else []
        return tuple(self.fixer.problems) + tuple(f"{e}: the compilation never ran this pass event" for e in unapplied)

    def fingerprint(self, lowered, vm_lowered: Optional[VMLowered]) -> str:
        """What the pipelines made: the TIR pipeline's output as the instrument
        caught it, or as a build in steps kept it."""
        tir = self.tir_output.module if self.tir_output else vm_lowered.tir_pipeline_output if vm_lowered else None
        return _fingerprint(lowered, tir)


def _fingerprint(relax_result: tvm.IRModule, tir_result: Optional[tvm.IRModule]) -> str:
    import tvm_ffi

    parts = [relax_result] + ([tir_result] if tir_result is not None else [])
    # map_free_vars: lowered TIR refers to buffer vars outside their definitions (storage_alignment)
    return "-".join("%016x" % (tvm_ffi.structural_hash(m, map_free_vars=True) & (2**64 - 1)) for m in parts)


def legalized(mod: tvm.IRModule, target: tvm.target.Target) -> tvm.IRModule:
    """``mod`` with every operator made a TIR kernel call, as a plain build
    makes them before code generation: sort, scan and sampling operators by
    their dispatch passes (LegalizeOps has no legalization for cumsum or
    topk), then the rest by LegalizeOps; every kernel a build runs is then a
    binding (what capturing a run's values pairs kernel calls with)."""
    from tvm.relax import backend

    with target:
        dispatched = backend.DispatchSortScan()(backend.DispatchSampling()(mod))
        return relax.transform.LegalizeOps()(dispatched)


def compile_plain(mod: tvm.IRModule, target: tvm.target.Target, kernels=None) -> Build:
    """``mod`` compiled on its own as ``tvm.compile(mod, target)`` compiles it
    (TVM's plain lowering, no gating, no record), under the caller's
    PassContext: for snapshots and chain modules, which are not the model a
    session was made for. Fingerprinted (``Build.fingerprint``) unless that
    context has instruments of its own, which a context of ours around the
    build would enter again; ``kernels``: a session's ``KernelCache``, for
    its machine code. A failure is ``Build.error``, never raised."""
    start = time.perf_counter()
    executable, error, lowered, vm_lowered = None, None, None, None
    tir_output = TirPipelineOutput()
    context = _context_with(tir_output)
    linking = Linking(kernels)
    with InterruptWatch() as watch:
        try:
            if context is None:
                executable = tvm.compile(pristine(mod), target)
            else:  # tvm.compile's two phases, apart so that the fingerprint sees what each made
                with context:
                    with target:
                        lowered = _plain_relax_pipeline(target)(pristine(mod))
                    tir_output.set_phase("tir")
                    executable, vm_lowered = _tir_phase(lowered, target, "default", {}, linking)
        except Exception as err:  # a snapshot after the VM lowering may not build on its own
            error = summarize_error(err)
    watch.reraise()
    fingerprint = _fingerprint(lowered, tir_output.module) if executable is not None and context is not None else None
    return Build(frozenset(), executable, [], [], {}, error, time.perf_counter() - start,
                 device=target_device(target), fingerprint=fingerprint, lowered=vm_lowered,
                 linking=linking if vm_lowered is not None else Linking())


def _context_with(instrument) -> Optional[tvm.transform.PassContext]:
    """The caller's PassContext again, with ``instrument``; None where the
    caller's has instruments of its own (a new context enters them again) or
    does not copy."""
    outer = tvm.transform.PassContext.current()
    if list(outer.instruments):
        return None
    try:
        return tvm.transform.PassContext(opt_level=outer.opt_level, required_pass=list(outer.required_pass),
                                         disabled_pass=list(outer.disabled_pass), config=dict(outer.config),
                                         instruments=[instrument])
    except Exception:  # TVM raises many types; the build goes on unfingerprinted
        return None


def _plain_relax_pipeline(target: tvm.target.Target) -> tvm.transform.Pass:
    """The Relax pipeline ``tvm.compile(mod, target)`` runs (``relax.build``'s
    rule for ``relax_pipeline="default"``)."""
    if "gpu" in target.keys:
        try:
            return relax.get_default_pipeline(target)
        except Exception:  # a GPU target TVM has no target-specific pipeline for
            return relax.get_pipeline("default")
    return relax.get_pipeline("default")


def run_build(build: Build, input_names: Sequence[str], inputs: Mapping[str, np.ndarray]) -> list:
    """Run ``main`` on one set of inputs; returns every output as a numpy array."""
    return call_main(build.vm(), build.device, input_names, inputs)


def call_main(vm, device, input_names: Sequence[str], inputs: Mapping[str, np.ndarray]) -> list:
    """Call ``vm["main"]`` with ``inputs`` (in ``input_names`` order) and return
    its outputs flattened in order (nested tuples depth first), each a numpy
    array: 0-d inputs and outputs stay 0-d (``np.ascontiguousarray`` would make
    them 1-d), bool, integer, float16, bfloat16 and float64 keep their dtype."""
    args = [tvm.runtime.tensor(device_array(inputs[name]), device) for name in input_names]
    outputs: list = []
    _flatten(vm["main"](*args), outputs)
    return outputs


def device_array(value) -> np.ndarray:
    """``value`` as a C-contiguous array of its own shape, 0-d included."""
    return np.require(np.asarray(value), requirements="C")


def _flatten(value, out: list) -> None:
    if isinstance(value, (tvm.runtime.Tensor,)):
        out.append(value.numpy())
    elif isinstance(value, tvm_ffi.Shape):  # a shape value (ONNX's Shape output) is one int64 tensor, not a tuple
        out.append(np.asarray(list(value), dtype=np.int64))
    elif hasattr(value, "numpy") and not isinstance(value, (list, tuple)):
        out.append(np.asarray(value.numpy()))
    elif isinstance(value, (bool, int, float, np.generic)):
        out.append(np.asarray(value))
    else:
        for item in value:
            _flatten(item, out)


def optional_events(events: Sequence[PassEvent]) -> list:
    """The events a bisection may skip: top-level, not wrappers, not required;
    with a pass under test (a bracketed pipeline part), only its own events,
    so the reference is the same pipeline without that pass."""
    from ..ir.instrument.catalog import under_test_span

    rule = EveryOptional(bracketed=under_test_span(events) is not None)  # the reference's gate decides alike
    optional = []
    for event in events:
        if event.ran and rule.skips(event):
            optional.append(event)
        rule.entered(event.name)
    return optional


class InterruptWatch:
    """``with InterruptWatch() as watch:`` ... ``watch.reraise()``; the previous
    handlers are called as usual and put back on exit, and what the first of
    them raised (KeyboardInterrupt, the CLI's Terminated) is raised again by
    ``reraise``; a caller's handler that raises nothing (one that sets a flag)
    is left to do its work. SIGINT is watched unless ignored, SIGTERM only where
    a Python handler takes it (elsewhere it ends the process as it always did).
    Signals can only be handled in the main thread: elsewhere the watch sees nothing."""

    def __init__(self):
        self.caught: Optional[int] = None  # the first signal seen
        self._previous: dict = {}

    @property
    def interrupted(self) -> bool:
        return self.caught is not None

    def __enter__(self) -> "InterruptWatch":
        if threading.current_thread() is not threading.main_thread():
            return self
        # a process started with SIGINT ignored (nohup, a script's background job) keeps ignoring it
        if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
            self._previous[signal.SIGINT] = signal.getsignal(signal.SIGINT)
        if callable(signal.getsignal(signal.SIGTERM)):
            self._previous[signal.SIGTERM] = signal.getsignal(signal.SIGTERM)
        for signum in self._previous:
            signal.signal(signum, self._on_signal)
        return self

    def __exit__(self, *exc) -> Literal[False]:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        self._previous = {}
        return False

    def reraise(self) -> None:
        """Raise what the first signal seen raises (nothing if none came)."""
        if self.caught == signal.SIGTERM:
            raise Terminated
        if self.caught is not None:
            raise KeyboardInterrupt

    def _on_signal(self, signum, frame) -> None:
        previous = self._previous.get(signum)
        try:
            if callable(previous):
                previous(signum, frame)
            elif previous == signal.SIG_DFL:
                raise KeyboardInterrupt
        except BaseException:  # what the handler raised is raised again after the build
            if self.caught is None:
                self.caught = signum
            raise
