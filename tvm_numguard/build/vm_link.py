"""What ``relax.build`` does after the Relax pipeline, in two steps.

``lower_for_vm`` is TVM 0.27's ``relax.build`` from the VM code generation on,
up to machine code: ``_vmcodegen``, then ``tvm.tirx.build``'s target binding,
TIR pipeline, host/device split and finalize passes. It makes the same pass
calls in the same order, so every instrument sees the same events, ids and
indices as in ``relax.build`` (tests/test_kernel_cache.py compares them).
``VMLowered.link`` then generates the machine code and links the VM executable:
as ``tirx.build`` and ``VMLink`` do (one library of every kernel), or through a
``kernel_cache.KernelCache``, which compiles only the kernels no earlier build
of the session compiled.

The step between the two is where a build is known without its machine code:
a build whose fingerprint (``compile.Build.fingerprint``) equals one already
run is never linked (``Build.executable`` links on first use), and LLVM's code
generation is most of a build on a CPU.
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Optional

import tvm
from tvm import relax
from tvm.relax import vm_build

from ..ir.relax_ir import pristine

# relax.build's own keywords besides the module, target and pipelines: a call with others builds through relax.build
KNOWN_OPTIONS = frozenset({"params", "exec_mode", "system_lib"})


def tirx_build():
    """TVM's ``tvm/tirx/build.py`` (``tvm.tirx.build`` is the function it defines)."""
    import tvm.tirx  # noqa: F401 - loads it

    return sys.modules["tvm.tirx.build"]


@dataclasses.dataclass(frozen=True)
class Linking:
    """How a build makes its machine code. ``kernels``: a ``KernelCache``
    (each kernel compiled once per session; None: one library, as
    ``relax.build`` makes it); ``alone``: one library all the same, which
    ``kernels`` keeps for later builds (a build a user may be given: the
    pipeline as written, the reference); ``lazy``: only when the executable is
    first asked for (``compile.Build.executable``)."""

    kernels: Optional[object] = None
    alone: bool = False
    lazy: bool = False

    @property
    def in_steps(self) -> bool:
        """Whether the build lowers and links apart (else ``relax.build`` does both, as ever)."""
        return self.kernels is not None or self.lazy


@dataclasses.dataclass
class VMLowered:
    """A Relax module lowered for the VM, up to machine code: the VM's
    instructions (``builder``), the finalized host and device TIR modules, and
    what ``VMLink`` takes besides them."""

    relax_mod: tvm.IRModule  # what the VM's instructions were generated from (a second link generates them anew)
    exec_mode: str
    context: dict  # the PassContext's opt_level and config it was lowered in, which the machine code is made in too
    builder: object  # relax.ExecBuilder, holding the VM's instructions
    target: tvm.target.Target
    target_host: Optional[tvm.target.Target]
    host: Optional[tvm.IRModule]  # None: the module has no PrimFunc
    devices: dict  # Target -> finalized device IRModule
    params: dict
    relax_ext_libs: list
    tir_ext_libs: list
    tir_pipeline_output: Optional[tvm.IRModule] = None  # what the TIR pipeline returned (a build's fingerprint)

    @property
    def kernels_apart(self) -> bool:
        """Whether each host kernel can be compiled on its own (a CPU build with
        nothing else to link: no device code, external library or constant)."""
        return (self.host is not None and not self.devices and not self.tir_ext_libs and not self.relax_ext_libs
                and not self.params)

    def link(self, kernels=None, alone: bool = False):
        """The VM executable: one library of every kernel, as ``relax.build``
        makes it, or (``kernels``: a ``KernelCache``) with each kernel compiled
        once per session, where ``kernels_apart``. ``alone``: one library as
        ``relax.build`` makes it all the same (a build a user may be given),
        which ``kernels`` keeps for the builds after it."""
        # a lazy build links outside the PassContext it was lowered in; the code generator reads its settings
        with tvm.transform.PassContext(**self.context):
            return self._link(kernels, alone)

    def _link(self, kernels, alone: bool):
        if kernels is not None and self.kernels_apart and not alone:
            libraries = kernels.libraries(self.host, self.target_host)
            return self._vm_link(libraries[0], libraries[1:])
        lib = None
        if self.host is not None:
            lib = tirx_build().tir_to_runtime(self.host, self.devices, self.target_host)
            for device_lib in self.tir_ext_libs:
                lib.import_module(device_lib)
            if kernels is not None and self.kernels_apart:
                kernels.keep(lib, self.host, self.target_host)
        return self._vm_link(lib, self.relax_ext_libs)

    def relinked_alone(self):
        """The executable linked again as ``relax.build`` links it (one library
        of every kernel), from VM instructions generated anew: every VMLink of
        one ExecBuilder returns its one executable, with the libraries of each link added."""
        builder = relax.ExecBuilder()
        vm_build._vmcodegen(builder, self.relax_mod, self.exec_mode)
        return dataclasses.replace(self, builder=builder).link()

    def _vm_link(self, lib, ext_libs):
        return vm_build.VMExecutable(relax._ffi_api.VMLink(self.builder, self.target, lib, list(ext_libs),
                                                          self.params))


def follows(options: dict, tir_pipeline, context_config: dict) -> bool:
    """Whether ``lower_for_vm`` follows ``relax.build`` for a call with these
    keywords, TIR pipeline and PassContext settings (``tirx.disable_assert``
    makes ``codegen_build`` run SkipAssert, a pass event of its own, once per library)."""
    return (set(options) <= KNOWN_OPTIONS and (tir_pipeline is None or isinstance(tir_pipeline, str))
            and not bool(context_config.get("tirx.disable_assert", False)))


def lower_for_vm(mod: tvm.IRModule, target: tvm.target.Target, tir_pipeline, options: dict) -> Optional[VMLowered]:
    """``mod`` (the Relax pipeline's result) lowered as ``relax.build(mod,
    target, relax_pipeline=None, tir_pipeline=tir_pipeline, **options)`` lowers
    it; None where this replica does not follow that call (other keywords, a
    TIR pipeline that is not a name, device libraries without TIR): the caller
    builds with ``relax.build``. Errors are TVM's, raised."""
    if not follows(options, tir_pipeline, dict(tvm.transform.PassContext.current().config)):
        return None
    params = dict(options.get("params") or {})
    attrs = dict(mod.attrs) if mod.attrs else {}
    ext_libs = list(attrs.get("external_mods", []))
    params.update(dict(attrs.get("const_name_to_constant", {})))
    builder, exec_mode = relax.ExecBuilder(), options.get("exec_mode", "bytecode")
    tir_mod = vm_build._filter_tir(vm_build._vmcodegen(builder, mod, exec_mode))
    tir_ext_libs = [m for m in ext_libs if vm_build._is_device_module(m)]
    relax_ext_libs = [m for m in ext_libs if not vm_build._is_device_module(m)]
    host, devices, target_host, tir_output = None, {}, None, None
    if tir_mod is not None and len(tir_mod.get_global_vars()) > 0:
        tir_mod = vm_build._auto_attach_system_lib_prefix(tir_mod, target, options.get("system_lib"))
        host, devices, target_host, tir_output = _lower_tir(tir_mod, target, tir_pipeline)
    elif tir_ext_libs:
        return None  # relax.build warns on stdout there: its own words, not ours
    current = tvm.transform.PassContext.current()
    context = {"opt_level": current.opt_level, "config": dict(current.config)}
    return VMLowered(relax_mod=mod, exec_mode=exec_mode, context=context, builder=builder, target=target,
                     target_host=target_host, host=host, devices=devices, params=params,
                     relax_ext_libs=relax_ext_libs, tir_ext_libs=tir_ext_libs, tir_pipeline_output=tir_output)


def _lower_tir(mod: tvm.IRModule, target: tvm.target.Target, pipeline) -> tuple:
    """(finalized host module, {target: finalized device module}, host target,
    what the pipeline returned): ``tvm.tirx.build(mod, target, pipeline)``
    without its last step (the machine code), written as TVM 0.27 writes it,
    for a given target."""
    from tvm_ffi import DLDeviceType

    target = tvm.target.Target(target)
    target_host = "llvm" if tvm.runtime.enabled("llvm") else "c"
    if target.host is not None:
        target_host = target.host
    elif target.get_target_device_type() == DLDeviceType.kDLCPU:
        target_host = target
    target_host = tvm.target.Target(target_host)
    mod = tvm.tirx.transform.BindTarget(target.with_host(target_host))(mod)
    if pipeline is not None:
        pipeline, finalize_host, finalize_device = tvm.tirx.get_tir_pipeline(pipeline)
    else:
        pipeline, finalize_host, finalize_device = tvm.tirx.get_default_tir_pipeline(target)
    mod = pipeline(mod)
    output = pristine(mod)  # what ir/instrument/recorder.TirPipelineOutput keeps of relax.build
    host, devices = tirx_build().split_host_device_mods(mod)
    host = finalize_host()(host)
    devices = {device: finalize_device()(device_mod) for device, device_mod in devices.items()}
    return host, devices, target_host, output
