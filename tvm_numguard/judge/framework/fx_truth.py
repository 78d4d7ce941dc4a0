"""A torch program in float64 node by node: the truth for a ``.pt2`` model.

``module.double()`` widens parameters, not what the program computes: a model
that casts to float16 inside (``x.half()``, ``.to(torch.float16)``, an
``autocast`` region captured by ``torch.export``) keeps computing that part in
float16, and one that mixes dtypes fails outright. Here the program's FX graph
is interpreted one node at a time with every floating tensor it reads made
float64 and every floating dtype it asks for (a cast's target, a factory's
``dtype``) made float64 too, so the whole program computes in double
precision. A node torch cannot run in float64 runs in float32 (reported in
``ran_in_float32``). Nothing here uses TVM.

``Grafted`` runs the same graph in the program's own dtypes with chosen nodes'
values given (TVM's values of a discontinuous node, to see what follows from
its flip alone).
"""

from __future__ import annotations

from typing import Mapping, Optional

import numpy as np

from ..summation import SUMMING_ATEN_OPS, aten_terms, is_mean, rounded, summation_bound


def _floating(torch, dtype) -> bool:
    return isinstance(dtype, torch.dtype) and dtype.is_floating_point


def _widen(torch, value, dtype):
    """``value`` (a tensor, a dtype, or a container of them) with floats made ``dtype``."""
    if isinstance(value, torch.Tensor):
        return value.to(dtype) if value.is_floating_point() else value
    if _floating(torch, value):
        return dtype
    if isinstance(value, (list, tuple)):
        return type(value)(_widen(torch, v, dtype) for v in value)
    if isinstance(value, dict):
        return {k: _widen(torch, v, dtype) for k, v in value.items()}
    return value


def float64_interpreter(module, move=None, rng=None):
    """An FX Interpreter of ``module`` (a GraphModule) computing every node in
    float64; ``move(tensor)``, where given, is applied to the result of every
    node the program computes in a narrow float (float16, bfloat16); with
    ``rng``, every sum the program computes moves by a random share of its
    summation bound (``judge/summation.py``)."""
    import torch

    narrow = (torch.float16, torch.bfloat16)

    def declared_narrow(node) -> bool:
        value = node.meta.get("val")
        return isinstance(value, torch.Tensor) and value.dtype in narrow

    class Float64(torch.fx.Interpreter):
        def __init__(self, gm):
            super().__init__(gm)
            self.ran_in_float32: list = []

        def run_node(self, node):
            result = self._computed(node)
            if move is not None and node.op == "call_function" and declared_narrow(node):
                result = move(result)
            # a float32/float64 sum moves within its summation bound; a narrow one moved by its own roundings above
            if (rng is not None and node.op == "call_function" and str(node.target) in SUMMING_ATEN_OPS
                    and isinstance(result, torch.Tensor) and not declared_narrow(node)):
                args, kwargs = self.fetch_args_kwargs_from_env(node)
                bound = sum_bound(torch, node, args, kwargs, result)
                if bound is not None:
                    result = torch.as_tensor(rounded(result.detach().cpu().numpy(), bound, rng)).to(result.dtype)
            return result

        def _computed(self, node):
            if node.op in ("placeholder", "output"):
                return super().run_node(node)
            if node.op == "get_attr":
                return _widen(torch, super().run_node(node), torch.float64)
            args, kwargs = self.fetch_args_kwargs_from_env(node)
            try:
                return getattr(self, node.op)(node.target, _widen(torch, args, torch.float64),
                                              _widen(torch, kwargs, torch.float64))
            except (RuntimeError, NotImplementedError, TypeError):  # no float64 kernel for it
                result = getattr(self, node.op)(node.target, _widen(torch, args, torch.float32),
                                                _widen(torch, kwargs, torch.float32))
                if node.name not in self.ran_in_float32:
                    self.ran_in_float32.append(node.name)
                return _widen(torch, result, torch.float64)

    return Float64(module)


def sum_bound(torch, node, args, kwargs, result) -> Optional[np.ndarray]:
    """The summation bound of ``node`` (an ATen call, ``args`` its arguments) where it sums, else None:
    the call on its arguments' magnitudes and on their squares, in float64 (``summation_bound``)."""
    target = str(node.target)
    declared = node.meta.get("val")
    # a float sum the program declares: an integer one is exact, and one of no known float is not excused
    if not (isinstance(declared, torch.Tensor) and declared.is_floating_point() and result.is_floating_point()):
        return None
    terms = aten_terms(target, args, result)
    if terms is None:
        return None

    def on(power: int):
        def to(v):
            if isinstance(v, float):  # alpha, beta: a negative one would cancel the magnitudes
                return abs(v) ** power
            return v.to(torch.float64).abs() ** power if isinstance(v, torch.Tensor) and v.is_floating_point() else v
        with torch.no_grad():
            out = node.target(*torch.fx.node.map_aggregate(args, to), **torch.fx.node.map_aggregate(kwargs, to))
        return out.detach().cpu().numpy()

    dtype = str(declared.dtype).replace("torch.", "")
    return summation_bound(on(1), terms, dtype, result.detach().cpu().numpy(), on(2), is_mean(target))


def grafted_interpreter(module, grafts: Mapping[str, np.ndarray], recorded: Optional[dict] = None):
    """An FX Interpreter of ``module`` in its own dtypes where each node named in
    ``grafts`` takes the given value instead of computing it; ``recorded``, where
    given, receives every call's (first) tensor result by node name."""
    import torch

    class Grafted(torch.fx.Interpreter):
        def run_node(self, node):
            if node.name in grafts:
                result = torch.from_numpy(np.array(grafts[node.name], order="C"))
            else:
                result = super().run_node(node)
            first = result[0] if isinstance(result, (tuple, list)) and result else result
            if recorded is not None and node.op == "call_function" and isinstance(first, torch.Tensor):
                recorded[node.name] = first.detach().cpu().numpy().copy()
            return result

    return Grafted(module)


__all__ = ["float64_interpreter", "grafted_interpreter"]
