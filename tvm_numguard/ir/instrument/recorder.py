"""Instruments that record what a compilation's pass events saw.

``PassRecorder`` sees every pass event and keeps what a bisection needs.
``EventSnapshot`` keeps the module just before and just after one pass event.
``TirPipelineOutput`` keeps the module the TIR pipeline returned, for a build's
fingerprint: ``tvm.tirx.build`` runs ``tirx.BindTarget``, then the TIR pipeline
as one top-level pass call, then TVM's own host/device split and finalization
on parts of the module. The module that top-level call returned is therefore
the whole lowered TIR as the pipeline made it; what follows depends only on it
and on the TVM version. The builder enables the instrument for the TIR phase
only.
"""

from __future__ import annotations

import hashlib
import dataclasses
import time
from typing import Optional

import tvm
import tvm_ffi

from ..relax_ir import pristine
from .base import EventInstrument
from .events import PassEvent


@tvm.instrument.pass_instrument
class PassRecorder(EventInstrument):
    """Records every pass event of a compilation.

    ``should_run`` sees a pass before it is decided on (it always says yes; a
    PassGate next to it says no); ``run_before_pass``/``run_after_pass`` see the
    passes that really run, nested ones included (wrappers, the TIR pipelines
    that FoldConstant runs inside itself). Each event gets its stable id, its
    duration, whether it changed the module (structural hash), and for
    Relax-level events at the Relax phase a snapshot of the module after it.
    Only top-level events are hashed (nested ones are never skipped alone),
    function by function (``ModuleHasher``).
    A snapshot is a pristine copy (shallow: the functions are shared), since
    a later pass may edit the module object it was handed in place.
    """

    def __init__(self, keep_snapshots: bool = True, hash_modules: bool = True):
        super().__init__()
        self.keep_snapshots = keep_snapshots
        self.hash_modules = hash_modules
        self.events: list[PassEvent] = []
        self.snapshots: dict[str, tvm.IRModule] = {}
        self._open: dict[int, tuple] = {}  # event index -> (its position in events, its start time)
        self._hash = ModuleHasher()

    def entered(self, event, mod):
        # nested events (FoldConstant's inner TIR builds) are never bisected on
        # their own, and hashing them all costs as much as the build
        if self.hash_modules and not event.wrapper and "/" not in event.id:
            event = dataclasses.replace(event, hash_before=self._hash(mod))
        # a PassEvent is frozen: the one recorded is replaced when its pass ends
        self._open[event.index] = (len(self.events), time.perf_counter())
        self.events.append(event)

    def left(self, event, mod):
        position, started = self._open.pop(event.index)
        done = dataclasses.replace(self.events[position], duration_s=time.perf_counter() - started)
        if done.hash_before is not None:
            after = self._hash(mod)
            done = dataclasses.replace(done, hash_after=after, changed=after != done.hash_before)
        self.events[position] = done
        if (
            self.keep_snapshots
            and self.path.phase == "relax"
            and event.level == "relax"
            and not event.wrapper
            and "/" not in event.id  # top level: wrappers are transparent in ids
        ):
            self.snapshots[event.id] = pristine(mod)

    def checkpoint(self) -> tuple:
        """What ``resume_from`` needs to go on from here in another build: the
        events so far and where the open ones (wrappers) sit among them."""
        return tuple(self.events), tuple((index, position) for index, (position, _) in self._open.items())

    def resume_from(self, checkpoint: tuple) -> None:
        """Go on from ``checkpoint`` (an open event's duration counts from now)."""
        events, open_events = checkpoint
        self.events = list(events)
        now = time.perf_counter()
        self._open = {index: (position, now) for index, position in open_events}

    def finish(self) -> list[PassEvent]:
        """All events in execution order, skipped ones included."""
        self.path.finish()
        merged = self.events + [e for e in self.path.skipped_events]
        merged.sort(key=lambda e: e.index)
        return merged

    def event(self, event_id: str) -> Optional[PassEvent]:
        for e in self.events:
            if e.id == event_id:
                return e
        return None


class ModuleHasher:
    """Structural hashes of modules, function by function: a function object
    hashed once is not hashed again. A pass leaves most functions as they
    were, and a model's weights are constants in ``main``: hashing each whole
    module before and after each event cost as much as the build itself on
    ResNet-50 (142 hashes, 2.5 s). The hasher holds every function it hashed,
    so a handle is never reused for another object, and no function it holds
    is ever edited in place (TVM copies a node on write unless it is the only
    reference). GlobalVars count by name (``map_free_vars``), as in a module.
    Hashes compare only within one hasher's life."""

    def __init__(self):
        self._functions: dict = {}  # handle -> (function, its structural hash)

    def __call__(self, mod: tvm.IRModule) -> int:
        digest = hashlib.blake2b(digest_size=8)
        for gvar, func in sorted(mod.functions.items(), key=lambda item: item[0].name_hint):
            digest.update(f"{gvar.name_hint}\0{self._function(func):x}\0".encode())
        for extra in (mod.attrs, mod.global_infos):
            extra_hash = tvm_ffi.structural_hash(extra, map_free_vars=True) if extra is not None else 0
            digest.update(f"{extra_hash:x}\0".encode())
        return int.from_bytes(digest.digest(), "little")

    def _function(self, func) -> int:
        handle = func.__chandle__()
        known = self._functions.get(handle)
        if known is None:
            known = self._functions[handle] = (func, tvm_ffi.structural_hash(func, map_free_vars=True))
        return known[1]


@tvm.instrument.pass_instrument
class EventSnapshot(EventInstrument):
    """Keeps the module that the event ``event_id`` received (``before``) and
    returned (``after``); for TIR events these are TIR modules, which a
    recorder does not keep. Use it in a build that skips nothing: ids of
    events after a skipped one are only stable for the instruments that the
    skipping gate precedes."""

    def __init__(self, event_id: str):
        super().__init__()
        self.event_id = event_id
        self.before = None
        self.after = None

    def entered(self, event, mod):
        if event.id == self.event_id:
            self.before = pristine(mod)  # the pass may edit it in place

    def left(self, event, mod):
        if event.id == self.event_id:
            self.after = pristine(mod)


@tvm.instrument.pass_instrument
class TirPipelineOutput(EventInstrument):
    """``module``: a pristine copy of what the first top-level pass after
    ``tirx.BindTarget`` returned in the TIR phase (None before that)."""

    def __init__(self):
        super().__init__()
        self.active = False
        self.bound = False
        self.module: Optional[tvm.IRModule] = None

    def set_phase(self, phase: str) -> None:
        super().set_phase(phase)
        self.active = phase == "tir"

    def left(self, event, mod):
        if not self.active or event.depth != 0:
            return
        if event.name == "tirx.BindTarget":
            self.bound = True
        elif self.bound and self.module is None:
            self.module = pristine(mod)
