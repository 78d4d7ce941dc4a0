"""One node of the model as the components judge it: its conversion (the
bindings of the imported ``main`` made from it), TVM's values on the witness,
and the framework's node.

``NodeCase.of(located, key, tol)`` reads what the import stage already has
(``import_stage.first_node.Located``: the framework's values, TVM's import
legalized, built plainly and run with every kernel captured) for the model's
value ``key``: nothing is built or run again to make it.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Optional

import numpy as np
import tvm
from tvm import relax

from ...base.tolerance import Tolerance
from ...ir.targets import target_of
from .kernels import KernelRun
from .values import Arguments, MissingValue

if TYPE_CHECKING:  # import_stage imports this package
    from ..import_stage.first_node import Located


@dataclasses.dataclass
class NodeCase:
    """The model's node computing value ``key``: ``bindings``, the unique names of
    main's bindings made while converting it (in order; ``output`` is the one
    that is its value); ``arguments``, TVM's captured values read as call
    arguments; ``legal``, TVM's import legalized; ``tol``, the node's tolerance
    (the narrowest float the model itself computes it in)."""

    located: Located
    key: str
    label: str
    bindings: list
    output: str
    arguments: Arguments
    legal: tvm.IRModule
    tol: Tolerance
    _kernels: dict = dataclasses.field(default_factory=dict)

    @classmethod
    def of(cls, located, key: str, tol: Tolerance) -> Optional["NodeCase"]:
        """The case of value ``key`` (None where TVM's import has no binding for it)."""
        found = located.named.get(key)
        if found is None or located.run is None:
            return None
        output_var_name, provenance = found
        main = located.model.mod["main"]
        arguments = Arguments(main, located.run.captured, located.computed)
        node = _node_of(provenance.label)
        bindings = [name for name, (var, value) in arguments.named.items() if value is not None
                    and _node_of(_label_of(located.model.provenance, var)) == node]
        output = next((name for name in bindings if arguments.named[name][0].name == output_var_name), None)
        if output is None:
            return None
        bindings = bindings[:bindings.index(output) + 1]
        case = cls(located, key, provenance.label, bindings, output, arguments, located.run.legal,
                   located.tolerance_of(key, tol))
        arguments.missing = case.folded_value
        return case

    @property
    def model(self):
        return self.located.model

    @property
    def target(self) -> tvm.target.Target:
        """The (CPU) target TVM's import was built for, as a Target."""
        return target_of(self.located.target)

    @property
    def framework(self):
        return self.located.framework

    @property
    def witness(self) -> dict:
        return self.located.witness

    def call(self, name: str):
        return self.arguments.call_of(name)

    def legal_call(self, name: str):
        """The ``call_tir`` that LegalizeOps made of binding ``name`` (None: not a kernel call)."""
        var = self.arguments.named[name][0]
        for block in self.legal["main"].body.blocks:
            for binding in block.bindings:
                if binding.var.name == var.name and isinstance(binding.value, relax.Call):
                    op = getattr(binding.value.op, "name", None)
                    return binding.value if op == "relax.call_tir" else None
        return None

    def kernel(self, name: str) -> Optional[KernelRun]:
        """Binding ``name``'s kernel, to build again alone (None: LegalizeOps made no kernel
        call of it); KernelError where its arguments' values were not captured."""
        if name not in self._kernels:
            call = self.legal_call(name)
            self._kernels[name] = None if call is None else KernelRun(self.legal, call, self.arguments, self.target)
        return self._kernels[name]

    def folded_value(self, name: str) -> np.ndarray:
        """TVM's value of binding ``name`` where no run captured it (a kernel of constants alone,
        which the plain build folded): its kernel run alone on those constants."""
        var = self.arguments.named.get(name, (None, None))[0]
        run = self.kernel(name) if var is not None else None
        if run is None:
            raise MissingValue(f"no captured value of {name}")
        return run.run(key="folded")[0]

    def framework_arguments(self, in_model_dtypes: bool = False) -> dict:
        """TVM's values of the node's arguments, by their names in the model (an
        input or a weight the framework reads from the model itself is left out;
        a value TVM folded into a constant at import is that constant: both sides
        read the same values, and a wrong fold is the fold's node's fault, found there).
        ``in_model_dtypes``: each rounded to the dtype the model itself has it in (TVM
        may hold a float16 model's value in float32), for the node run as the model runs it."""
        args = self._tvm_arguments()
        if in_model_dtypes:
            for name, value in args.items():
                own = self.located.expected.get(name)
                if own is not None and np.asarray(own).dtype != value.dtype:
                    args[name] = value.astype(np.asarray(own).dtype)
        return args

    def _tvm_arguments(self) -> dict:
        args = {}
        folded = self.model.folded
        for name in self.framework.node_arguments(self.key):
            binding = self.located.named.get(self.located.held_as(name), (None, None))[0]
            mine = None if binding is None else self.located.computed.get(binding)  # Located.tvm_value's
            if mine is None and binding in self.arguments.named:
                # a binding of TVM's no run captured: its own kernel run alone, never the framework's value
                mine = self.arguments.value_of(self.arguments.named[binding][0])
            elif mine is None and name in folded:
                mine = folded[name].value  # a constant TVM folded at import: TVM's own value of it
            elif mine is None and name in self.located.expected and name not in self.witness:
                mine = self.located.expected[name]  # a constant the frontend inlined, under no name of TVM's
            if mine is not None:
                args[name] = np.asarray(mine)
        return args

    def framework_value(self) -> np.ndarray:
        return np.asarray(self.located.expected[self.key])

    def tvm_value(self) -> np.ndarray:
        return np.asarray(self.located.computed[self.output])


def _node_of(label: Optional[str]) -> Optional[str]:
    """The node a label names, whichever of its outputs (an ONNX Split's outputs are one node)."""
    return None if label is None else label.split(" (output '")[0]


def _label_of(provenance: dict, var) -> Optional[str]:
    found = provenance.get(var.name)
    return None if found is None else found.label


__all__ = ["NodeCase"]
