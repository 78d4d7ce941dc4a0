"""Models for the red team: small ONNX graphs (patches.imports._graph) and
torch / transformers blocks, written to ``directory``; each builder returns a path."""

from __future__ import annotations

import os

import numpy as np

from patches.imports._graph import OnnxGraph

F16 = np.float16


def _rng(seed=0):
    return np.random.default_rng(seed)


def _save(graph, shape, outputs, directory, name):
    import onnx
    path = os.path.join(directory, name + ".onnx")
    onnx.save(graph.model(shape, outputs), path)
    return path


def layernorm(directory, dtype=np.float32, eps=1e-5):
    g = OnnxGraph(dtype)
    r = _rng(3)
    y = g.node("LayerNormalization", ["x", g.const(r.uniform(0.5, 1.5, 16)), g.const(r.uniform(-.1, .1, 16))],
               axis=-1, epsilon=eps)
    return _save(g, (4, 16), [y], directory, "layernorm")


def softmax(directory, dtype=np.float32, shape=(4, 8)):
    g = OnnxGraph(dtype)
    y = g.node("Softmax", ["x"], axis=-1)
    return _save(g, shape, [y], directory, "softmax")


def gemm(directory, dtype=np.float32):
    g = OnnxGraph(dtype)
    r = _rng(1)
    y = g.node("Gemm", ["x", g.const(r.uniform(-.5, .5, (16, 8))), g.const(r.uniform(-.02, .02, (8,)))])
    return _save(g, (4, 16), [y], directory, "gemm")


def floor_of_scaled(directory):
    g = OnnxGraph(np.float32)
    y = g.node("Floor", [g.node("Mul", ["x", g.const(4.0)])])
    return _save(g, (4, 16), [y], directory, "floor")


def greater_of_sigmoid(directory):
    g = OnnxGraph(np.float32)
    y = g.node("Greater", [g.node("Sigmoid", ["x"]), g.const(0.7)])
    return _save(g, (16, 16), [y], directory, "greater_sigmoid")


def cast_int(directory):
    from onnx import TensorProto
    g = OnnxGraph(np.float32)
    y = g.node("Cast", [g.node("Mul", ["x", g.const(4.0)])], to=TensorProto.INT32)
    return _save(g, (4, 16), [y], directory, "cast_int")


def argmax_last(directory):
    g = OnnxGraph(np.float32)
    y = g.node("ArgMax", [g.node("Floor", [g.node("Mul", ["x", g.const(2.0)])])], axis=-1, keepdims=0,
               select_last_index=1)
    return _save(g, (8, 16), [y], directory, "argmax_last")


def softmax_after_floor(directory):
    """Floor(sin(3.7 x) * 5) (flips on rounding) then a Softmax (planted wrong) of it plus x."""
    g = OnnxGraph(np.float32)
    f = g.node("Floor", [g.node("Mul", [g.node("Sin", [g.node("Mul", ["x", g.const(3.7)])]), g.const(5.0)])])
    y = g.node("Softmax", [g.node("Add", [g.node("Mul", [f, g.const(0.3)]), "x"])], axis=-1)
    return _save(g, (8, 16), [f, y], directory, "softmax_after_floor")


def two_scales(directory, op, dtype=np.float32, small=1e-4, **attrs):
    """Concat([op(x) * small, values in the thousands + mean(x)])."""
    g = OnnxGraph(dtype)
    big_scale = 1e3 if dtype == np.float32 else 1e2
    p = g.node(op, ["x"], **attrs)
    big = g.const(_rng(7).uniform(1, 4, (4, 16)) * big_scale)
    mean = g.node("ReduceMean", ["x"], keepdims=1)
    y = g.node("Concat", [g.node("Mul", [p, g.const(small)]), g.node("Add", [big, mean])], axis=-1)
    return _save(g, (4, 16), [y], directory, f"two_scales_{op}")


def transpose_beside_softmax(directory, dtype=F16):
    """fp16: output 1 a Softmax over 64 values (rounding a judge excuses), output 2 a Transpose."""
    g = OnnxGraph(dtype)
    s = g.node("Softmax", [g.node("Reshape", ["x", g.ints([1, 64])])], axis=-1)
    t = g.node("Transpose", [g.node("Mul", ["x", g.const(2.0)])], perm=[0, 2, 1])
    return _save(g, (4, 4, 4), [s, t], directory, "transpose_softmax")


def unsqueeze_then_floor(directory):
    """v = mean over axis 1 of x (4, 8); Floor((Unsqueeze(v, 1) + M) * 4), M (4, 4)."""
    g = OnnxGraph(np.float32)
    v = g.node("ReduceMean", ["x"], axes=[1], keepdims=0)
    u = g.node("Unsqueeze", [v, g.ints([1])])
    s = g.node("Mul", [g.node("Add", [u, g.const(_rng(2).uniform(-1, 1, (4, 4)))]), g.const(4.0)])
    return _save(g, (4, 8), [g.node("Floor", [s]), s], directory, "unsqueeze_floor")


# torch / transformers ----------------------------------------------------------

def _torch_save(module, shape, dtype, directory, name, low=-1.0, high=1.0):
    import torch
    module = module.eval().to(dtype)
    example = (torch.rand(shape, generator=torch.Generator().manual_seed(0)) * (high - low) + low).to(dtype)
    program = torch.export.export(module, (example,))
    path = os.path.join(directory, name + ".pt2")
    torch.export.save(program, path)
    return path


def _onnx_export(module, shape, dtype, directory, name):
    import torch
    module = module.eval().to(dtype)
    example = torch.rand(shape, generator=torch.Generator().manual_seed(0)).to(dtype)
    path = os.path.join(directory, name + ".onnx")
    torch.onnx.export(module, (example,), path, dynamo=False, opset_version=17,
                      input_names=["x"], output_names=["y"])
    return path


class First:
    pass


def _first(module):
    import torch

    class Wrapped(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = module

        def forward(self, x):
            out = self.inner(x)
            return out[0] if isinstance(out, tuple) else out
    return Wrapped()


def bert_layer():
    import torch
    from transformers import BertConfig
    from transformers.models.bert.modeling_bert import BertLayer
    torch.manual_seed(0)
    cfg = BertConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
                     hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, attn_implementation="eager")
    return _first(BertLayer(cfg)), (1, 6, 32)


def gpt2_block():
    import torch
    from transformers import GPT2Config
    from transformers.models.gpt2.modeling_gpt2 import GPT2Block
    torch.manual_seed(0)
    cfg = GPT2Config(n_embd=32, n_layer=1, n_head=2, n_positions=16, resid_pdrop=0.0, embd_pdrop=0.0,
                     attn_pdrop=0.0, attn_implementation="eager")
    return _first(GPT2Block(cfg)), (1, 6, 32)


def vit_layer():
    import torch
    from transformers import ViTConfig
    from transformers.models.vit.modeling_vit import ViTLayer
    torch.manual_seed(0)
    cfg = ViTConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
                    hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, attn_implementation="eager")
    return _first(ViTLayer(cfg)), (1, 5, 32)


def torch_layernorm():
    import torch
    norm = torch.nn.LayerNorm(16)
    with torch.no_grad():
        norm.weight.uniform_(0.5, 1.5)
        norm.bias.uniform_(-0.5, 0.5)
    return norm, (4, 16)


def torch_softmax():
    import torch

    class M(torch.nn.Module):
        def forward(self, x):
            return torch.softmax(x * 2, dim=-1)
    return M(), (4, 16)


def conv_bn_relu():
    from patches.imports._clean_torch import BLOCKS
    return BLOCKS["conv-bn-relu"]()


def groupnorm():
    import torch
    return torch.nn.Sequential(torch.nn.GroupNorm(2, 8), torch.nn.SiLU()), (1, 8, 4, 4)


def attention():
    from patches.imports._clean_torch import BLOCKS
    return BLOCKS["attention"]()


def attention_nobias():
    import torch

    class A(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.attention = torch.nn.MultiheadAttention(16, 2, batch_first=True, bias=False)

        def forward(self, x):
            return self.attention(x, x, x, need_weights=False)[0]
    return A(), (1, 6, 16)


TORCH_BLOCKS = {"bert": bert_layer, "gpt2": gpt2_block, "vit": vit_layer, "layernorm": torch_layernorm,
                "softmax": torch_softmax, "conv-bn-relu": conv_bn_relu, "groupnorm": groupnorm,
                "attention": attention, "attention-nobias": attention_nobias}


def torch_block(directory, name, fmt="pt2", half=False):
    import torch
    module, shape = TORCH_BLOCKS[name]()
    torch.manual_seed(0)
    dtype = torch.float16 if half else torch.float32
    if fmt == "onnx":
        return _onnx_export(module, shape, dtype, directory, name)
    return _torch_save(module, shape, dtype, directory, name)


def layernorm_plus_f16_branch(directory, branch=True):
    """float32 LayerNorm(x) + Cast(Cast(x, f16) * 1e-3, f32): a tiny side branch in float16."""
    from onnx import TensorProto
    g = OnnxGraph(np.float32)
    r = _rng(3)
    y = g.node("LayerNormalization", ["x", g.const(r.uniform(0.5, 1.5, 16)), g.const(r.uniform(-.1, .1, 16))],
               axis=-1, epsilon=1e-5)
    if branch:
        h = g.node("Mul", [g.node("Cast", ["x"], to=TensorProto.FLOAT16), g.const(1e-3, np.float16)])
        y = g.node("Add", [y, g.node("Cast", [h], to=TensorProto.FLOAT)])
    return _save(g, (4, 16), [y], directory, "ln_f16_branch")


def matmul_f16(directory, k=256):
    g = OnnxGraph(np.float16)
    y = g.node("MatMul", ["x", g.const(_rng(4).uniform(-1, 1, (k, 16)))])
    return _save(g, (4, k), [y], directory, "matmul_f16")


def layernorm_plus_gelu(directory, gamma=1000.0):
    """LayerNorm(x) * gamma (ill-conditioned on near-constant rows) + Gelu(x) (well conditioned)."""
    g = OnnxGraph(np.float32, opset=20)
    y = g.node("LayerNormalization", ["x", g.const(np.full(16, gamma)), g.const(np.zeros(16))], axis=-1,
               epsilon=1e-5)
    y = g.node("Add", [y, g.node("Gelu", ["x"])])
    return _save(g, (4, 16), [y], directory, "ln_plus_gelu")


def mlp_ln():
    import torch
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.Linear(64, 32),
                               torch.nn.LayerNorm(32)), (6, 32)


def linear2():
    import torch
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.Linear(32, 32)), (6, 32)


def onnx_matmul_add_chain(directory, depth=2, width=32):
    """float16: depth x (MatMul W + b), nothing else."""
    g = OnnxGraph(np.float16)
    y, r = "x", _rng(5)
    for _ in range(depth):
        w = g.const(r.uniform(-1, 1, (width, width)) / np.sqrt(width))
        y = g.node("Add", [g.node("MatMul", [y, w]), g.const(r.uniform(-.1, .1, (width,)))])
    return _save(g, (6, width), [y], directory, f"matmul_add_{depth}")


TORCH_BLOCKS.update({"mlp-ln": mlp_ln, "linear2": linear2})


def _decoder(layer, rotary=None):
    """A decoder layer that makes its own rotary position embeddings (Llama, Mistral), or none."""
    import torch

    class Decoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layer, self.rotary = layer, rotary

        def forward(self, x):
            if self.rotary is None:
                out = self.layer(x)
            else:
                positions = torch.arange(x.shape[1]).unsqueeze(0)
                out = self.layer(x, position_embeddings=self.rotary(x, positions), attention_mask=None)
            return out[0] if isinstance(out, tuple) else out
    return Decoder()


def llama_block():
    """A Llama decoder layer (RMSNorm, RoPE, SwiGLU) from a configuration: random weights, no download."""
    import torch
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaDecoderLayer, LlamaRotaryEmbedding
    torch.manual_seed(0)
    cfg = LlamaConfig(hidden_size=32, intermediate_size=64, num_attention_heads=4, num_key_value_heads=2,
                      num_hidden_layers=1, max_position_embeddings=32, attn_implementation="eager")
    return _decoder(LlamaDecoderLayer(cfg, 0), LlamaRotaryEmbedding(cfg)), (1, 6, 32)


def mistral_block():
    import torch
    from transformers import MistralConfig
    from transformers.models.mistral.modeling_mistral import MistralDecoderLayer, MistralRotaryEmbedding
    torch.manual_seed(0)
    cfg = MistralConfig(hidden_size=32, intermediate_size=64, num_attention_heads=4, num_key_value_heads=2,
                        num_hidden_layers=1, max_position_embeddings=32, sliding_window=None,
                        attn_implementation="eager")
    return _decoder(MistralDecoderLayer(cfg, 0), MistralRotaryEmbedding(cfg)), (1, 6, 32)


def t5_block():
    import torch
    from transformers import T5Config
    from transformers.models.t5.modeling_t5 import T5Block
    torch.manual_seed(0)
    cfg = T5Config(d_model=32, d_kv=8, d_ff=64, num_heads=4, num_layers=1, dropout_rate=0.0,
                   is_decoder=False, attn_implementation="eager")
    return _decoder(T5Block(cfg, has_relative_attention_bias=True)), (1, 6, 32)


TORCH_BLOCKS.update({"llama": llama_block, "mistral": mistral_block, "t5": t5_block})


def argmax_square(directory, dtype=F16):
    g = OnnxGraph(dtype)
    y = g.node("ArgMax", [g.node("Mul", ["x", g.const(3.0)])], axis=1, keepdims=0)
    s = g.node("Mul", ["x", g.const(2.0)])
    return _save(g, (8, 8), [y, s], directory, "argmax_square")


def f16_model_f32_softmax(directory):
    """A float16 model whose Softmax the model computes in float32 (Cast up, Softmax, Cast down)."""
    from onnx import TensorProto
    g = OnnxGraph(F16)
    up = g.node("Cast", [g.node("Mul", ["x", g.const(4.0)])], to=TensorProto.FLOAT)
    s = g.node("Softmax", [up], axis=-1)
    return _save(g, (4, 64), [g.node("Cast", [s], to=TensorProto.FLOAT16)], directory, "f16_f32_softmax")
