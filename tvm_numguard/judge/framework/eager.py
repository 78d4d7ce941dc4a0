"""A torch ExportedProgram run eagerly (``ExportedProgram.module()``), its
truth the program's graph node by node in float64 (``fx_truth``)."""

from __future__ import annotations

import functools
import os
from typing import Mapping, Sequence

import numpy as np

from ..summation import SUMMING_ATEN_OPS
from .runtimes import Framework, FrameworkError, first_line, is_narrow_float, moved, note_list


class TorchEager(Framework):
    """A torch ExportedProgram in PyTorch eager."""

    def __init__(self, source, input_names: Sequence[str]):
        try:
            import torch
        except ImportError:
            raise FrameworkError("PyTorch is not installed: pip install torch") from None
        self.name = f"PyTorch {torch.__version__.split('+')[0]} eager"
        self._names = list(input_names)
        try:
            self._program = torch.export.load(os.fspath(source)) if isinstance(source, (str, os.PathLike)) else source
            self._module = self._program.module()
        except Exception as err:  # torch raises many types while loading
            raise FrameworkError(f"PyTorch cannot load the program: {first_line(err, 240)}") from None
        self._decomposed = None  # the graph TVM's importer reads, made on first use
        self._ran_in_float32: list = []

    def _args(self, inputs, dtype=None) -> list:
        import torch

        args = []
        for name in self._names:
            value = np.asarray(inputs[name])
            if dtype is not None and is_narrow_float(value):
                value = value.astype(dtype)
            args.append(torch.from_numpy(np.array(value, order="C")))  # writable: a witness is read-only
        return args

    @staticmethod
    def _leaves(result) -> list:
        import torch
        from torch.utils._pytree import tree_leaves

        return [leaf.detach().cpu().numpy() for leaf in tree_leaves(result) if isinstance(leaf, torch.Tensor)]

    def run(self, inputs, grafts=None):
        """The program's outputs on ``inputs``; each node named in ``grafts``
        (of the decomposed program TVM imports) takes the given value."""
        import torch

        from .fx_truth import grafted_interpreter

        try:
            with torch.no_grad():
                if not grafts:
                    return self._leaves(self._module(*self._args(inputs)))
                return self._leaves(grafted_interpreter(self._graph(), dict(grafts)).run(*self._args(inputs)))
        except Exception as err:  # a program that fails eagerly
            raise FrameworkError(f"PyTorch fails to run the program: {first_line(err, 240)}") from None

    def truth(self, inputs, move=None, rng=None):
        import torch

        from .fx_truth import float64_interpreter

        interpreter = float64_interpreter(self._module, move, rng)
        try:
            with torch.no_grad():
                outputs = self._leaves(interpreter.run(*self._args(inputs, np.float64)))
        except Exception as err:  # a node that runs in neither float64 nor float32
            raise FrameworkError(f"PyTorch fails to run the program in float64 node by node: "
                                 f"{first_line(err, 240)}") from None
        self._ran_in_float32 = list(interpreter.ran_in_float32)
        return [o.astype(np.float64) if o.dtype.kind == "f" else o for o in outputs]

    def moved_truth(self, inputs, seed, scale):
        import torch

        rng = np.random.default_rng(seed)
        given = {name: moved(value, rng, scale) for name, value in inputs.items()}

        def move(tensor):
            factor = torch.from_numpy(1.0 + rng.uniform(-scale, scale, size=tuple(tensor.shape)))
            return tensor * factor.to(tensor.dtype)
        # the sums move by draws of their own: the inputs' and narrow values' moves stay those of the seed
        return self.truth(given, move, np.random.default_rng((seed, 1)))

    @property
    def truth_name(self) -> str:
        ran = note_list("in float32", self._ran_in_float32)
        return f"{self.name}, the program node by node in float64" + (f" ({ran})" if ran else "")

    @property
    def truth_note(self):
        return None

    def _graph(self):
        if self._decomposed is None:
            self._decomposed = self._program.run_decompositions().module()
        return self._decomposed

    def values(self, inputs, grafts=None) -> dict:
        """{FX node name: value} of every call in the decomposed program (the
        graph TVM's importer reads), in execution order; each node named in
        ``grafts`` takes the given value instead of computing it."""
        import torch

        from .fx_truth import grafted_interpreter

        recorded: dict = {}
        try:
            with torch.no_grad():
                grafted_interpreter(self._graph(), dict(grafts or {}), recorded).run(*self._args(inputs))
        except Exception as err:
            raise FrameworkError(f"PyTorch fails to run the program node by node: {first_line(err, 240)}") from None
        return {k: v for k, v in recorded.items() if k not in (grafts or {})}

    def float_history(self, inputs) -> tuple:
        import torch

        from .history import fx_history

        graph = self._graph()
        history = fx_history(graph)
        output = next(n for n in graph.graph.nodes if n.op == "output")
        leaves: list = []
        torch.fx.node.map_arg(output.args, lambda n: leaves.append(n.name))
        return history, tuple(history.get(name) for name in leaves)

    def _node(self, key: str):
        node = next((n for n in self._graph().graph.nodes if n.name == key), None)
        if node is None:
            raise FrameworkError(f"no node of the program is named '{key}'")
        return node

    def node_arguments(self, key: str) -> list:
        import torch

        node = self._node(key)
        return [a.name for a in node.all_input_nodes if isinstance(a, torch.fx.Node)]

    def node_op(self, key: str) -> str:
        return str(self._node(key).target)

    def run_node(self, key: str, args: Mapping[str, np.ndarray], inputs: Mapping[str, np.ndarray],
                 double: bool = False) -> np.ndarray:
        """The FX node ``key`` called on ``args`` (its argument nodes' values by
        name); the program's inputs (``inputs``) and parameters fill the rest."""
        import torch

        node = self._node(key)
        call_args, call_kwargs = self._call_arguments(node, args, inputs, double)
        with torch.no_grad():
            result = node.target(*call_args, **call_kwargs)
        first = result[0] if isinstance(result, (tuple, list)) else result
        return first.detach().cpu().numpy()

    def node_summation_bound(self, key, args, inputs, value):
        import torch

        from .fx_truth import sum_bound

        node = self._node(key)
        if str(node.target) not in SUMMING_ATEN_OPS:
            return None
        call_args, call_kwargs = self._call_arguments(node, args, inputs, double=True)
        return sum_bound(torch, node, call_args, call_kwargs, torch.as_tensor(np.asarray(value, np.float64)))

    def _call_arguments(self, node, args: Mapping[str, np.ndarray], inputs: Mapping[str, np.ndarray],
                        double: bool) -> tuple:
        """(args, kwargs) of FX ``node``: ``args`` by argument name, the program's inputs and parameters
        for the rest; every float made float64 with ``double``."""
        import torch

        graph = self._graph()
        placeholders = [n.name for n in graph.graph.nodes if n.op == "placeholder"]
        given = dict(zip(placeholders, self._args(inputs)))

        def value(a):
            if not isinstance(a, torch.fx.Node):
                return a
            if a.name in args:
                return torch.from_numpy(np.array(args[a.name], order="C"))
            if a.op == "get_attr":
                return functools.reduce(getattr, str(a.target).split("."), graph)  # a get_attr's target: a path
            if a.name in given:
                return given[a.name]
            raise FrameworkError(f"no value for '{a.name}'")

        call_args = torch.fx.node.map_aggregate(node.args, value)
        call_kwargs = torch.fx.node.map_aggregate(node.kwargs, value)
        if double:
            from .fx_truth import _widen

            call_args, call_kwargs = _widen(torch, call_args, torch.float64), _widen(torch, call_kwargs, torch.float64)
        return call_args, call_kwargs
