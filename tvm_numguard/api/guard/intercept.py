"""Catching compile calls and top-level pass calls inside a guard block.

``Interceptor.install`` replaces ``tvm.compile``, ``tvm.relax.build`` and
``tvm.transform.Pass.__call__`` with wrappers and ``restore`` puts back exactly
what was there, so guards nest (each restores what the one outside installed).
The wrappers are process-wide, but a guard block is code in one thread: only
calls from the thread that entered the block are caught; another thread's
compiles (a server compiling beside it) go straight to TVM, not judged and
undisturbed. While a guard works on a call, ``busy`` is set for its thread:
every compile and pass call made meanwhile (its own builds, TVM's calls
inside ``tvm.compile``) goes straight to the original, so nothing is caught
twice and the innermost guard is the one that judges.
"""

from __future__ import annotations

import dataclasses
import linecache
import os
import sys
import threading
import types
from typing import Callable, Optional

import tvm
from tvm import relax

from ...ir.relax_ir import pristine

_state = threading.local()  # .busy: this thread is inside a guard's own work


def busy() -> bool:
    return getattr(_state, "busy", False)


_PACKAGE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep


def user_stacklevel() -> int:
    """``warnings.warn``'s ``stacklevel``, asked where the warning is raised,
    that attributes it to the user's line: the first frame outside numguard.
    A guard's warning is about the compile the user wrote, and a fixed level
    counts frames that moving code around changes (it pointed at this wrapper)."""
    frame: Optional[types.FrameType] = sys._getframe(1)
    level = 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level


class Busy:
    """``with Busy():`` marks the thread as inside a guard's own work."""

    def __enter__(self):
        self.before = busy()
        _state.busy = True

    def __exit__(self, *exc):
        _state.busy = self.before


@dataclasses.dataclass(frozen=True)
class CallSite:
    """Where the user's code called a pass: ``file``, ``line``, and that line
    as written (``code``; None where its source cannot be read: code given to
    ``exec``, a REPL). The advice to delete the call prints it."""

    file: str
    line: int
    code: Optional[str]

    @classmethod
    def of(cls, frame) -> "CallSite":
        file, line = frame.f_code.co_filename, frame.f_lineno
        return cls(file, line, linecache.getline(file, line).strip() or None)


def pass_qualname(pass_) -> Optional[str]:
    """The qualified name of a pass object, as code names it: ``relax.transform.X``
    for TVM's, ``module.Class`` for a class the user decorated with
    ``module_pass`` (TVM's wrapper keeps the class's module and name); None for
    a pass made of a function, which keeps neither."""
    kind = type(pass_)
    if not kind.__module__.startswith(("tvm.", "tvm_ffi")):
        return f"{kind.__module__}.{kind.__name__}"
    name = pass_.info.name
    return f"relax.transform.{name}" if callable(getattr(relax.transform, name, None)) else None


@dataclasses.dataclass(frozen=True)
class PassCall:
    """One top-level pass call the user made: ``returned = pass_(given)``.

    A pass may edit the module it is given in place, and the user's later
    calls may edit ``returned``: ``input`` and ``output`` are pristine copies
    of the module as it was just before and just after the call; ``given`` and
    ``returned`` are the objects themselves, to follow a chain of calls by
    identity; ``site``: where the user's code made the call."""

    pass_: tvm.transform.Pass
    input: tvm.IRModule
    output: tvm.IRModule
    given: tvm.IRModule
    returned: tvm.IRModule
    site: Optional[CallSite] = None

    def to_json(self) -> dict:
        """What a report says of the call (``guard.prelude_calls``)."""
        site = self.site
        return {"pass": self.pass_.info.name, "qualname": pass_qualname(self.pass_),
                "file": site.file if site else None, "line": site.line if site else None,
                "code": site.code if site else None}


class PassCallLog:
    """The top-level pass calls made in a guard block, in order."""

    def __init__(self):
        self.calls: list = []

    def add(self, call: PassCall) -> None:
        self.calls.append(call)

    def chain_to(self, mod: tvm.IRModule) -> list:
        """The calls that produced ``mod`` from a module made outside them, in
        the order they ran (empty if ``mod`` came from no logged call)."""
        chain, current = [], mod
        for call in reversed(self.calls):
            if call.returned.same_as(current):
                chain.append(call)
                current = call.given
        return chain[::-1]


class Interceptor:
    """Installs the wrappers; ``on_compile(kind, original, args, kwargs)`` decides
    what a caught compile call returns."""

    def __init__(self, on_compile: Callable, log: PassCallLog):
        self.on_compile = on_compile
        self.log = log
        self.saved: Optional[dict] = None
        self.owner: Optional[int] = None  # the thread that entered the guard block

    def _passes_through(self) -> bool:
        return busy() or threading.get_ident() != self.owner

    def install(self) -> None:
        self.owner = threading.get_ident()
        saved = {"compile": tvm.compile, "relax.build": relax.build, "Pass.__call__": tvm.transform.Pass.__call__}
        self.saved = saved
        tvm.compile = self._wrap("tvm.compile", saved["compile"])
        relax.build = self._wrap("tvm.relax.build", saved["relax.build"])
        original_call = saved["Pass.__call__"]
        log = self.log
        passes_through = self._passes_through

        def pass_call(pass_self, mod):
            if passes_through() or not isinstance(mod, tvm.IRModule):
                return original_call(pass_self, mod)
            before = pristine(mod)
            site = CallSite.of(sys._getframe(1))  # the user's line that called the pass
            with Busy():  # passes this pass calls are not the user's
                out = original_call(pass_self, mod)
            if isinstance(out, tvm.IRModule):
                log.add(PassCall(pass_self, before, pristine(out), mod, out, site))
            return out

        tvm.transform.Pass.__call__ = pass_call

    def restore(self) -> None:
        if self.saved is None:
            return
        tvm.compile = self.saved["compile"]
        relax.build = self.saved["relax.build"]
        tvm.transform.Pass.__call__ = self.saved["Pass.__call__"]
        self.saved = None

    def _wrap(self, kind: str, original: Callable) -> Callable:
        on_compile = self.on_compile
        passes_through = self._passes_through

        def wrapper(*args, **kwargs):
            if passes_through():
                return original(*args, **kwargs)
            return on_compile(kind, original, args, kwargs)

        setattr(wrapper, "__wrapped__", original)  # as functools.wraps marks a wrapper
        wrapper.__doc__ = original.__doc__
        wrapper.__name__ = getattr(original, "__name__", kind)
        return wrapper
