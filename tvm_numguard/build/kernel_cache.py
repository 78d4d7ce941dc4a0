"""The machine code of a session's kernels, compiled once and linked into every build that holds them.

A bisection's probes, the reference, a fix's trials and trace's snapshots are
builds of one model that share most of their kernels: a probe that skips a
TIR pass changes the kernels that pass acted on, and no other. LLVM's code
generation (``target.build.llvm``, then its machine code when the first VM is
made) is most of a build on a CPU, so a ``KernelCache`` compiles the kernels a
build holds that no earlier build compiled, as one library, and links the
libraries of earlier builds for the rest (``vm_link.VMLowered.link``).

A kernel is the finalized host PrimFunc (after the TIR pipeline and the host
finalize passes: what the code generator gets), known by its name, its
structural hash and what else decides its machine code (the host target, the
PassContext's settings and opt level, the module's attributes); a kernel
found by hash is also compared whole (``structural_equal``) before its machine
code is reused. The VM looks a kernel up by name in the executable's libraries
in order, the first that has it wins (TVM 0.27's ``VirtualMachine``, pinned
by tests/test_kernel_cache.py): so the library compiled for a build comes
first, and an earlier library is linked only where each kernel it has that the
build needs and no library before it has is the very kernel the build holds.
An earlier library may thus hold other kernels of the same names: an
executable linked so runs as one linked alone (tested bit for bit on every
model of the tests), but ``export_library`` would see a name twice, so a build
given to a user is linked alone (``compile.Build.standalone``).

The cache lives in a session (forked workers start with a copy of it, its
machine code included) and ends with it.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

import tvm
import tvm_ffi


@dataclasses.dataclass(eq=False)
class _Library:
    """One compiled library: its runtime module, and each kernel it holds by
    name (hash, PrimFunc), hashed when a later build first looks (a guard's
    cached compile keeps the build as written's library and never looks)."""

    module: object
    host: tvm.IRModule  # the kernels it was compiled from
    context: str
    _kernels: Optional[dict] = None

    @property
    def kernels(self) -> dict:
        if self._kernels is None:
            self._kernels = _kernels(self.host)
        return self._kernels


class KernelCache:
    """The libraries compiled for one session's builds, newest last;
    ``compiled``/``reused``: kernels compiled and kernels linked from an earlier library."""

    def __init__(self):
        self._libraries: list = []
        self.compiled = 0
        self.reused = 0

    def keep(self, module, host: tvm.IRModule, target_host: tvm.target.Target) -> None:
        """``module`` (compiled from every kernel of ``host``, as ``tirx.build`` does) for the builds to come."""
        self._libraries.append(_Library(module, host, _context(host, target_host)))

    def libraries(self, host: tvm.IRModule, target_host: tvm.target.Target) -> list:
        """The libraries that hold ``host``'s kernels, to be linked in this
        order: first those compiled now (every kernel no earlier library can
        give), then earlier ones, each kernel found in the first that has its name."""
        context = _context(host, target_host)
        needed = _kernels(host)
        chosen, resolved = self._choose(needed, context)
        missing = [name for name in needed if name not in resolved]
        if missing:
            functions = {gvar: func for gvar, func in host.functions.items() if gvar.name_hint in missing}
            part = tvm.IRModule(functions, attrs=host.attrs)
            library = _Library(_codegen(part, target_host), part, context, {name: needed[name] for name in missing})
            self._libraries.append(library)
            chosen.insert(0, library)
            self.compiled += len(missing)
        self.reused += len(needed) - len(missing)
        return [library.module for library in chosen]

    def _choose(self, needed: dict, context: str) -> tuple:
        """(earlier libraries to link, in order; the kernel names they give):
        newest first, each linked where every needed kernel it would be the first
        to give is the one needed; until no library adds one."""
        chosen: list = []
        resolved: set = set()
        added = True
        while added:
            added = False
            for library in reversed(self._libraries):
                if library in chosen or library.context != context:
                    continue
                gives = (library.kernels.keys() & needed.keys()) - resolved
                if gives and all(_same(library.kernels[name], needed[name]) for name in gives):
                    chosen.append(library)
                    resolved |= gives
                    added = True
        return chosen, resolved


def _kernels(host: tvm.IRModule) -> dict:
    """Each PrimFunc of ``host`` by name: (structural hash, the function)."""
    return {gvar.name_hint: (tvm_ffi.structural_hash(func, map_free_vars=True), func)
            for gvar, func in host.functions.items()}


def _same(kept: tuple, wanted: tuple) -> bool:
    # a 64-bit hash picks the candidate; the whole function decides (bit-identical outputs are the contract)
    return kept[0] == wanted[0] and (kept[1].same_as(wanted[1])
                                     or bool(tvm_ffi.structural_equal(kept[1], wanted[1], map_free_vars=True)))


def _context(host: tvm.IRModule, target_host: tvm.target.Target) -> str:
    """What besides a kernel decides its machine code: the host target, the
    PassContext's opt level and settings (``codegen_build`` reads them), the module's attributes."""
    context = tvm.transform.PassContext.current()
    settings = sorted((str(k), str(v)) for k, v in dict(context.config).items())
    attrs = tvm_ffi.structural_hash(host.attrs, map_free_vars=True) if host.attrs is not None else 0
    return f"{target_host}|{context.opt_level}|{settings}|{attrs:x}"


def _codegen(mod: tvm.IRModule, target_host: tvm.target.Target):
    """``mod``'s machine code, as ``tirx.build`` generates a host module's (``codegen_build``)."""
    from .vm_link import tirx_build

    whole = tvm.IRModule({}, attrs=mod.attrs)
    whole.update(mod)
    return tirx_build().codegen_build(whole, target_host)

