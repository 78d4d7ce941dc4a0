"""A session's builds made in this process: memoized, counted, shown to ``on_build``."""

from __future__ import annotations

from typing import Callable, Optional

from ..ir.pipeline import CompileConfig
from .compile import Build, BuildRequest, compile_model, compile_plain
from .resume import RelaxPhase
from .tasks import RemoteBuild
from .vm_link import Linking


class BuildMemo:
    """Every compile of one model and configuration made in this process
    (and the builds workers made, counted when taken): ``count`` of them and
    their ``seconds``; ``on_build`` sees each. ``kernels``: the session's
    ``KernelCache``, through which every build but the pipeline as written
    (given to a guard's user as TVM links it) makes its machine code."""

    def __init__(self, mod, config: CompileConfig, on_build: Optional[Callable] = None, kernels=None):
        self._mod, self._config, self._on_build = mod, config, on_build
        self.kernels = kernels
        self._builds: dict = {}  # BuildRequest.slot -> Build
        self._module_builds: dict = {}  # structural hash -> Build (failed ones carry their error)
        self.count = 0
        self.seconds = 0.0

    def timing(self) -> dict:
        return {"builds": self.count, "build_seconds": round(self.seconds, 3)}

    def silence(self) -> None:
        """In a worker: its parent counts and shows what it builds."""
        self._on_build = None

    def get(self, request: BuildRequest, resume: Optional[RelaxPhase] = None, lazy: bool = False) -> Build:
        """The build ``request`` asks for: remembered, or compiled now (from
        ``resume``, the Relax phase of the pipeline as written, when it serves).
        ``lazy``: its machine code only when its executable is asked for (a
        probe whose run is shared under its fingerprint never needs it);
        otherwise a build remembered unlinked is linked now."""
        known = self._builds.get(request.slot)
        if known is None or not request.served_by(known):
            resume = resume if resume is not None and resume.can_start(request, self._config) else None
            linking = Linking(self.kernels, alone=not request.skip, lazy=lazy)
            known = compile_model(self._mod, self._config, request, resume, linking)
            self.note(known)
            if known.ok or request.slot not in self._builds:
                self._builds[request.slot] = known
        if not lazy:
            known.executable  # noqa: B018 - linked now: a link that fails makes it a failed build
        return known

    def configured(self, config: CompileConfig) -> Build:
        """The model built as another configuration of it says (a narrow
        fix's trial: the pipeline with a fix), its machine code through the
        kernel cache (the kernels the fix leaves as they were come from earlier
        builds), counted."""
        build = compile_model(self._mod, config, linking=Linking(self.kernels))
        self.note(build)
        return build

    def known(self, skip: frozenset) -> Optional[Build]:
        """The build of the (closed) skip set ``skip`` made so far, failed or not, if any."""
        return self._builds.get(BuildRequest(skip).slot)

    def remember(self, skip: frozenset, build: Build, replace: bool = False) -> None:
        """``build`` (made elsewhere) answers a request to skip ``skip``, unless
        one already does (``replace``: from now on all the same)."""
        if replace:
            self._builds[BuildRequest(skip).slot] = build
        else:
            self._builds.setdefault(BuildRequest(skip).slot, build)

    def module(self, mod, target) -> Build:
        """``mod`` built alone with the plain lowering, memoized by structure."""
        import tvm_ffi

        key = tvm_ffi.structural_hash(mod)
        if key not in self._module_builds:
            self._module_builds[key] = compile_plain(mod, target, self.kernels)
            self.note(self._module_builds[key])
        return self._module_builds[key]

    def note(self, build) -> None:
        """A compile made: counted, and shown to ``on_build``."""
        self.count += 1
        self.seconds += build.seconds
        if self._on_build is not None:
            self._on_build(build)

    def note_remote(self, skip: frozenset, attempt) -> None:
        """A build a worker made (its Attempt), counted here."""
        self.note(RemoteBuild(skip, attempt))
