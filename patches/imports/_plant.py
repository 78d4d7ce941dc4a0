"""How an import defect is planted: a converter of TVM 0.27's own frontends
replaced for the length of a ``with`` block, and put back on the way out
(an error inside the block included). Not a defect itself.

ONNX: a converter is a class of ``tvm.relax.frontend.onnx.onnx_frontend``
whose ``_impl_vNN`` classmethods the importer picks by opset; every version
is wrapped, so the defect holds at any opset. Torch: the
``ExportedProgramImporter`` builds its table of converters (``create_convert_map``,
keyed by ATen overload: ``"leaky_relu.default"``) once per import; the
planted table has one entry replaced.
"""

from __future__ import annotations

import contextlib
from typing import Callable

_MISSING = object()


@contextlib.contextmanager
def onnx_converter(class_name: str, wrap: Callable):
    """Replace every ``_impl_vNN`` of the ONNX converter ``class_name`` with
    ``wrap(original)``, a function ``(cls, bb, inputs, attr, params)``;
    ``original(bb, inputs, attr, params)`` is the stock converter of that version."""
    from tvm.relax.frontend.onnx import onnx_frontend

    cls = getattr(onnx_frontend, class_name)
    names = [n for n in dir(cls) if n.startswith("_impl_v")]
    saved = {n: cls.__dict__.get(n, _MISSING) for n in names}
    try:
        for name in names:
            setattr(cls, name, classmethod(wrap(getattr(cls, name))))
        yield
    finally:
        for name, value in saved.items():
            if value is _MISSING:
                delattr(cls, name)  # it was inherited: the base class's own is back
            else:
                setattr(cls, name, value)


def without_attributes(*names: str, **replaced) -> Callable:
    """An ONNX ``wrap`` whose converter never sees the attributes ``names``
    (it falls back to its own defaults) and sees ``replaced`` ones instead of the model's."""
    def wrap(original):
        def converter(cls, bb, inputs, attr, params):
            kept = {k: v for k, v in attr.items() if k not in names}
            kept.update(replaced)
            return original(bb, inputs, kept, params)
        return converter
    return wrap


def with_defaults(**defaults) -> Callable:
    """An ONNX ``wrap`` whose converter takes ``defaults`` for attributes the model leaves out."""
    def wrap(original):
        def converter(cls, bb, inputs, attr, params):
            return original(bb, inputs, {**defaults, **attr}, params)
        return converter
    return wrap


def with_inputs(change: Callable) -> Callable:
    """An ONNX ``wrap`` whose converter gets ``change(bb, list(inputs))`` as its inputs."""
    def wrap(original):
        def converter(cls, bb, inputs, attr, params):
            changed = type(inputs)()
            for value in change(bb, list(inputs)):
                changed.append(value)
            return original(bb, changed, attr, params)
        return converter
    return wrap


@contextlib.contextmanager
def torch_converter(key: str, make: Callable):
    """Replace the torch importer's converter for the ATen overload ``key``
    with ``make(importer, original)``, a function ``(node) -> relax.Var``."""
    from tvm.relax.frontend.torch.exported_program_translator import ExportedProgramImporter

    stock = ExportedProgramImporter.__dict__["create_convert_map"]

    def create_convert_map(self):
        table = stock(self)
        table[key] = make(self, table[key])
        return table

    ExportedProgramImporter.create_convert_map = create_convert_map
    try:
        yield
    finally:
        ExportedProgramImporter.create_convert_map = stock


def torch_argument(node, index: int, name: str, default):
    """An FX node's argument, positional or keyword, as the stock converters read it."""
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(name, default)


@contextlib.contextmanager
def op_attribute(op_name: str, attribute: str, value: Callable):
    """Replace TVM operator ``op_name``'s ``attribute`` with ``value`` for the block: a
    Relax operator's ``FLegalize`` (``value(bb, call) -> Expr``, what LegalizeOps emits)
    or a ``tirx`` intrinsic's lowering rule (``llvm.FLowerIntrinsic``, ``default.FLegalize``:
    ``value(call) -> PrimExpr``, what tirx.LowerIntrin substitutes). The stock
    attribute (or none) is back on the way out, an error inside the block included."""
    import tvm

    op = tvm.ir.Op.get(op_name)
    stock = op.get_attr(attribute)
    op.reset_attr(attribute)
    tvm.ir.register_op_attr(op_name, attribute, value)
    try:
        yield
    finally:
        op.reset_attr(attribute)
        if stock is not None:
            tvm.ir.register_op_attr(op_name, attribute, stock)


def legalized_as(compute: Callable, name: str) -> Callable:
    """A Relax ``FLegalize`` that emits ``compute`` (TE tensors and the call's attributes -> a TE
    tensor) as the operator's kernel, named ``name`` (as a TOPI function names its own)."""
    def legalize(bb, call):
        return bb.call_te(lambda *tensors: compute(*tensors, attrs=call.attrs), *call.args, primfunc_name_hint=name)
    return legalize
