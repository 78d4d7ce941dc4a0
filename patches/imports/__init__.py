"""Planted defects: small, realistic bugs in TVM 0.27's own ONNX and torch
converters (``onnx_*``, ``torch_*``), in a Relax operator's legalization
(``legal_*``: its ``FLegalize``) and in a ``tirx`` intrinsic's lowering
(``intrin_*``: its ``llvm.FLowerIntrinsic`` or ``default.FLegalize``), each
installed by monkeypatching the converter or the operator attribute
(``ATTRIBUTE``) for the length of a ``with`` block (``module.planted()``).
``COMPONENT`` is the part of TVM a judge must name (conversion when absent)
and ``SUBJECT`` what its verdict must name there (the Relax operator or the
intrinsic).

Each defect module says what it breaks (``FRONTEND``, ``OP``, ``CONVERTER``,
``KIND``, ``PLANTS``), where it shows (``SHAPE`` of the model's one float
input ``x`` and its ``RANGE``), builds the core of a model around the broken
operator (ONNX: ``core(graph, x)`` adds nodes to a ``_graph.OnnxGraph`` and
returns the planted node's output; torch: ``core()`` returns a module whose
forward is the planted operator), and names the contexts it is left out of:
``UNFAIR`` (context letter -> why no fair judge could catch it there) and
``UNBUILDABLE`` (context letter -> why TVM 0.27 itself, unpatched, does not
import or build that model). ``contexts.py`` places each core in the
contexts of the judge table; ``manifest()`` lists the defects.
"""

from __future__ import annotations

import importlib

DEFECTS = (
    "onnx_gemm_alpha", "onnx_gemm_transb", "onnx_leakyrelu_alpha", "onnx_clip_max", "onnx_layernorm_eps",
    "onnx_instancenorm_eps", "onnx_batchnorm_eps", "onnx_hardsigmoid_defaults", "onnx_elu_alpha",
    "onnx_softmax_axis", "onnx_logsoftmax_axis", "onnx_reducemean_negaxis", "onnx_cumsum_exclusive",
    "onnx_gelu_tanh", "onnx_gather_negative", "onnx_slice_negative", "onnx_reducesum_fp16", "onnx_avgpool_pad",
    "onnx_resize_coord", "onnx_prelu_axis", "onnx_selu_consts",
    "torch_leakyrelu_slope", "torch_elu_alpha", "torch_gelu_quick", "torch_softmax_dim", "torch_layernorm_eps",
    "torch_batchnorm_eps", "torch_slice_negative", "torch_cumsum_negdim", "torch_var_correction",
    "torch_addmm_coeffs", "torch_hardtanh_bounds", "torch_sigmoid_fast", "torch_groupnorm_eps", "torch_mean_fp16",
    # below the frontend: a Relax operator's legalization (LegalizeOps, TOPI/TE), a tirx intrinsic's lowering
    "legal_round_ties", "legal_layernorm_onepass", "legal_softmax_nomax", "legal_sigmoid_overflow",
    "legal_mean_f16acc", "legal_gelu_tanh", "legal_logsoftmax_naive", "legal_avgpool_countpad", "legal_sum_droplast",
    "legal_maxpool_padzero", "legal_matmul_f16acc", "legal_prelu_lastaxis", "legal_erf_approx",
    "intrin_tanh_expformula", "intrin_sinh_taylor", "intrin_cosh_taylor", "intrin_sigmoid_ratio", "intrin_erf_rational",
    "intrin_nearbyint_halfup", "intrin_pow_explog", "intrin_log_log10", "intrin_exp_poly", "intrin_sqrt_newton",
    "intrin_atan_poly", "intrin_rsqrt_fast",
)


def load(name: str):
    """The defect module ``name`` (one of ``DEFECTS``)."""
    if name not in DEFECTS:
        raise KeyError(f"no import defect {name!r}; the defects: {', '.join(DEFECTS)}")
    return importlib.import_module(f"{__name__}.{name}")


def manifest() -> list:
    """One entry per defect: its name and what its module declares."""
    entries = []
    for name in DEFECTS:
        module = load(name)
        entries.append({"name": name, "frontend": module.FRONTEND, "op": module.OP, "converter": module.CONVERTER,
                        "kind": module.KIND, "plants": module.PLANTS, "shape": list(module.SHAPE),
                        "component": getattr(module, "COMPONENT", "conversion"),
                        "subject": getattr(module, "SUBJECT", module.OP),
                        "attribute": getattr(module, "ATTRIBUTE", None),
                        "low": module.RANGE[0], "high": module.RANGE[1], "unfair": dict(module.UNFAIR),
                        "unbuildable": dict(module.UNBUILDABLE)})
    return entries
