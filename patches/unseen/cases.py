"""The red team's cases: name -> (model builder(directory) -> path, low, high, plant or None, expected).

``expected``: "import" for a planted defect (must be caught, exit 1); "clean" for an
unpatched TVM (must not be import / unjudged)."""

from __future__ import annotations

from functools import partial

import numpy as np

from . import models as m
from . import plants as p

F16 = np.float16
CASES = {}


def case(name, build, low, high, plant=None):
    CASES[name] = (build, low, high, plant, "import" if plant else "clean")


# 1. float16 models behind the precision / benign excuses
case("f16-onnx-layernorm-eps1e-2-[0,1]", partial(m.layernorm, dtype=F16), 0, 1, p.onnx_layernorm_eps_1e2)
case("f16-onnx-layernorm-eps1e-2-[-3,3]", partial(m.layernorm, dtype=F16), -3, 3, p.onnx_layernorm_eps_1e2)
case("f16-onnx-softmax-axis0", partial(m.softmax, dtype=F16), -3, 3, p.onnx_softmax_axis0)
case("f16-onnx-softmax-unstable-[-12,12]", partial(m.softmax, dtype=F16), -12, 12, p.onnx_softmax_unstable)
case("f16-onnx-gemm-no-bias", partial(m.gemm, dtype=F16), -1, 1, p.onnx_gemm_no_bias)
case("f16-torch-layernorm-eps1e-2", partial(m.torch_block, name="layernorm", half=True), 0, 1,
     p.torch_layernorm_eps_1e2)
case("f16-torch-layernorm-no-bias", partial(m.torch_block, name="layernorm", half=True), -3, 3,
     p.torch_layernorm_no_bias)
case("f16-torch-softmax-x0.995", partial(m.torch_block, name="softmax", half=True), -3, 3,
     p.torch_softmax_temperature)
case("f16-onnx-layernorm-one-pass-[50,52]", partial(m.layernorm, dtype=F16), 50, 52, p.onnx_layernorm_one_pass)
case("f16-onnx-layernorm-one-pass-[-3,3]", partial(m.layernorm, dtype=F16), -3, 3, p.onnx_layernorm_one_pass)
case("clean-f16-onnx-layernorm-[50,52]", partial(m.layernorm, dtype=F16), 50, 52)
case("f32-onnx-layernorm-one-pass-[1000,1001]", m.layernorm, 1000, 1001, p.onnx_layernorm_one_pass)
case("clean-f32-onnx-layernorm-[1000,1001]", m.layernorm, 1000, 1001)
case("f16-onnx-softmax-unstable-[-11,11]-16", partial(m.softmax, dtype=F16, shape=(4, 16)), -11, 11,
     p.onnx_softmax_unstable)
case("f16-onnx-layernorm-one-pass-[10,11]", partial(m.layernorm, dtype=F16), 10, 11, p.onnx_layernorm_one_pass)
case("clean-f16-onnx-layernorm-[10,11]", partial(m.layernorm, dtype=F16), 10, 11)
case("clean-f16-onnx-layernorm-[-3,3]", partial(m.layernorm, dtype=F16), -3, 3)
# 2. discontinuous nodes
case("onnx-floor-as-trunc", m.floor_of_scaled, -1, 1, p.onnx_floor_trunc)
case("onnx-greater-of-sigmoid-x1.001", m.greater_of_sigmoid, 0.84, 0.855, p.onnx_sigmoid_scaled)
case("onnx-cast-int-rounds", m.cast_int, -2, 2, p.onnx_cast_round)
case("onnx-argmax-select-last-ignored", m.argmax_last, 0, 2, p.onnx_argmax_first_index)
case("onnx-softmax-x0.95-after-floor", m.softmax_after_floor, -1, 1, p.onnx_softmax_temperature)
# 3. two scales in one output
case("onnx-two-scales-thresholdedrelu-alpha", partial(m.two_scales, op="ThresholdedRelu", alpha=0.5), 0, 1,
     p.onnx_thresholdedrelu_alpha)
case("onnx-two-scales-shrink-bias", partial(m.two_scales, op="Shrink", lambd=0.5, bias=0.1), -1, 1,
     p.onnx_shrink_bias)
case("f16-onnx-two-scales-shrink-bias", partial(m.two_scales, op="Shrink", dtype=F16, small=1e-2, lambd=0.5,
                                                 bias=0.1), -1, 1, p.onnx_shrink_bias)
# 4. shapes
case("f16-onnx-transpose-perm-beside-softmax", m.transpose_beside_softmax, -3, 3, p.onnx_transpose_perm)
case("onnx-unsqueeze-axis0-then-floor", m.unsqueeze_then_floor, -1, 1, p.onnx_unsqueeze_axis0)
# 5. transformers blocks
case("bert-onnx-erf-linear-tanh", partial(m.torch_block, name="bert", fmt="onnx"), -3, 3, p.onnx_erf_linear_tanh)
case("bert-onnx-softmax-x0.95", partial(m.torch_block, name="bert", fmt="onnx"), -3, 3, p.onnx_softmax_temperature)
case("bert-onnx-layernorm-eps1e-3", partial(m.torch_block, name="bert", fmt="onnx"), -3, 3, p.onnx_layernorm_eps_1e3)
case("gpt2-onnx-tanh-pade", partial(m.torch_block, name="gpt2", fmt="onnx"), -3, 3, p.onnx_tanh_pade)
case("vit-pt2-gelu-tanh", partial(m.torch_block, name="vit"), -3, 3, p.torch_gelu_tanh)
case("f16-vit-pt2-layernorm-eps1e-2", partial(m.torch_block, name="vit", half=True), -3, 3, p.torch_layernorm_eps_1e2)
case("f16-bert-onnx-erf-linear-tanh", partial(m.torch_block, name="bert", fmt="onnx", half=True), -3, 3,
     p.onnx_erf_linear_tanh)
# clean
for block, fmt in [("bert", "onnx"), ("gpt2", "onnx"), ("vit", "pt2"), ("bert", "pt2")]:
    for half in (False, True):
        for low, high in [(0, 1), (-3, 3), (-100, 100)]:
            case(f"clean-{'f16-' if half else ''}{block}-{fmt}-[{low},{high}]",
                 partial(m.torch_block, name=block, fmt=fmt, half=half), low, high)
for block in ["conv-bn-relu", "groupnorm", "attention", "attention-nobias", "layernorm", "softmax"]:
    for half in (False, True):
        if half and block in ("conv-bn-relu", "attention"):
            continue  # TVM 0.27 imports no float16 conv / linear with a bias (patches/imports/README.md)
        for low, high in [(0, 1), (-3, 3), (-100, 100)]:
            case(f"clean-{'f16-' if half else ''}{block}-pt2-[{low},{high}]",
                 partial(m.torch_block, name=block, half=half), low, high)
# tolerance history: a tiny float16 side branch
case("onnx-ln-eps1e-3-plus-f16-branch", m.layernorm_plus_f16_branch, -3, 3, p.onnx_layernorm_eps_1e3)
case("onnx-ln-eps1e-3-no-branch", partial(m.layernorm_plus_f16_branch, branch=False), -3, 3,
     p.onnx_layernorm_eps_1e3)
case("clean-onnx-ln-plus-f16-branch", m.layernorm_plus_f16_branch, -3, 3)
# framework error in float16: a long float16 dot product
case("f16-onnx-matmul256-x1.01", m.matmul_f16, -1, 1, p.onnx_matmul_scaled)
case("clean-f16-onnx-matmul256", m.matmul_f16, -1, 1)
# conditioning of one branch hiding a defect on another
case("onnx-ln-gamma1000-plus-gelu-x0.9-narrow", m.layernorm_plus_gelu, 1.0, 1.0001, p.onnx_gelu_scaled)
case("clean-onnx-ln-gamma1000-plus-gelu-narrow", m.layernorm_plus_gelu, 1.0, 1.0001)
case("clean-f16-mlp-ln-onnx-[-3,3]", partial(m.torch_block, name="mlp-ln", fmt="onnx", half=True), -3, 3)
case("clean-f16-linear2-onnx-[-3,3]", partial(m.torch_block, name="linear2", fmt="onnx", half=True), -3, 3)
case("clean-f16-onnx-matmul-add-2-[-3,3]", m.onnx_matmul_add_chain, -3, 3)
case("clean-f16-onnx-matmul-add-4-[-3,3]", partial(m.onnx_matmul_add_chain, depth=4), -3, 3)
case("f16-onnx-argmax-axis-ignored-square", m.argmax_square, -3, 3, p.onnx_argmax_axis_ignored)
case("f16-model-f32-softmax-narrowed-to-f16", m.f16_model_f32_softmax, -3, 3, p.onnx_softmax_narrowed_f16)
case("clean-f16-model-f32-softmax", m.f16_model_f32_softmax, -3, 3)
case("f16-torch-attention-nobias-softmax-x0.995", partial(m.torch_block, name="attention-nobias", half=True), -3, 3,
     p.torch_softmax_temperature)
case("bert-pt2-gelu-tanh", partial(m.torch_block, name="bert"), -3, 3, p.torch_gelu_tanh)
case("gpt2-pt2-softmax-x0.995", partial(m.torch_block, name="gpt2"), -3, 3, p.torch_softmax_temperature)
case("f16-bert-onnx-layernorm-eps1e-3", partial(m.torch_block, name="bert", fmt="onnx", half=True), -3, 3,
     p.onnx_layernorm_eps_1e3)
