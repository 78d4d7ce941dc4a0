"""A zoo of small transformer and vision blocks, exported with ``torch.export``.

Each entry is a torch module with random (seeded) weights, built from a
``transformers`` configuration (no download) or written here where a block
shape passes rewrite is wanted (a matmul chain, a sum of weights, parallel
projections with the weights as inputs, a hand-written variance norm). Needs
the ``zoo`` extra (torch 2.13.0 and transformers). What TVM 0.27 does with
them, measured: BERT, ViT and ResNet import and build; GPT-2 and Llama import
and fail inside ``tvm.compile`` (a dtype check), so their rows say "does not
build" rather than being left out.

``export(name, directory)`` writes ``<name>.pt2`` and returns its path.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Callable

SEED = 0


@dataclasses.dataclass(frozen=True)
class ZooEntry:
    """``make()`` -> (torch module, example args); ``ranges``: input name -> (low, high)."""

    name: str
    make: Callable
    ranges: tuple
    needs_transformers: bool = True
    note: str = ""


def _last_hidden(model, key: str):
    import torch

    class LastHidden(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, x):
            return self.model(**{key: x}).last_hidden_state

    return LastHidden()


def _bert():
    import torch
    import transformers as tf

    config = tf.BertConfig(vocab_size=64, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                           intermediate_size=64, max_position_embeddings=16)
    return _last_hidden(tf.BertModel(config, add_pooling_layer=False), "inputs_embeds"), (torch.randn(1, 8, 32),)


def _vit():
    import torch
    import transformers as tf

    config = tf.ViTConfig(image_size=16, patch_size=8, num_channels=3, hidden_size=32, num_hidden_layers=1,
                          num_attention_heads=2, intermediate_size=64)
    return _last_hidden(tf.ViTModel(config, add_pooling_layer=False), "pixel_values"), (torch.rand(1, 3, 16, 16),)


def _resnet():
    import torch
    import transformers as tf

    config = tf.ResNetConfig(num_channels=3, embedding_size=8, hidden_sizes=[8, 16], depths=[1, 1], layer_type="basic")
    return _last_hidden(tf.ResNetModel(config), "pixel_values"), (torch.rand(1, 3, 16, 16),)


def _gpt2():
    import torch
    import transformers as tf

    config = tf.GPT2Config(vocab_size=64, n_embd=32, n_layer=1, n_head=2, n_positions=16, use_cache=False,
                           bos_token_id=0, eos_token_id=0)
    return _last_hidden(tf.GPT2Model(config), "inputs_embeds"), (torch.randn(1, 8, 32),)


def _llama():
    import torch
    import transformers as tf

    config = tf.LlamaConfig(vocab_size=64, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                            num_key_value_heads=2, intermediate_size=64, max_position_embeddings=16, use_cache=False)
    return _last_hidden(tf.LlamaModel(config), "inputs_embeds"), (torch.randn(1, 8, 32),)


def _matmul_chain():
    import torch

    class LowRank(torch.nn.Module):  # x @ U @ V: a factorized projection, evaluated left to right
        def __init__(self):
            super().__init__()
            self.u = torch.nn.Parameter(torch.randn(32, 64) / 32 ** 0.5)
            self.v = torch.nn.Parameter(torch.randn(64, 4) / 8.0)

        def forward(self, x):
            return torch.matmul(torch.matmul(x, self.u), self.v)

    return LowRank(), (torch.randn(2, 32),)


def _lora_sum():
    import torch

    class Lora(torch.nn.Module):  # x @ (W + A @ B): a LoRA update merged into its weight
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(16, 16) / 4.0)
            self.a = torch.nn.Parameter(torch.randn(16, 2) / 4.0)
            self.b = torch.nn.Parameter(torch.randn(2, 16) / 2.0)

        def forward(self, x):
            return torch.matmul(x, self.w + torch.matmul(self.a, self.b))

    return Lora(), (torch.randn(4, 16),)


def _qkv_inputs():
    import torch

    class Attention(torch.nn.Module):  # q, k, v projections of one x, weights passed in (as LLM runtimes do)
        def forward(self, x, wq, wk, wv):
            q, k, v = torch.matmul(x, wq), torch.matmul(x, wk), torch.matmul(x, wv)
            return torch.matmul(torch.softmax(torch.matmul(q, k.transpose(0, 1)) / 4.0, dim=-1), v)

    return Attention(), (torch.randn(8, 16),) + tuple(torch.randn(16, 16) / 4.0 for _ in range(3))


def _variance_norm():
    import torch

    class Norm(torch.nn.Module):  # a norm written out by hand, as in older code bases
        def __init__(self):
            super().__init__()
            self.gamma = torch.nn.Parameter(torch.rand(32) + 0.5)

        def forward(self, x):
            centered = x - x.mean(dim=-1, keepdim=True)
            return centered / torch.sqrt(x.var(dim=-1, keepdim=True, unbiased=False) + 1e-5) * self.gamma

    return Norm(), (torch.randn(4, 32),)


ENTRIES = {e.name: e for e in (
    ZooEntry("bert-layer", _bert, (("x", -1.0, 1.0),)),
    ZooEntry("vit-layer", _vit, (("x", 0.0, 1.0),)),
    ZooEntry("resnet-basic", _resnet, (("x", 0.0, 1.0),), note="conv + batch norm"),
    ZooEntry("gpt2-layer", _gpt2, (("x", -1.0, 1.0),), note="TVM 0.27 does not build it"),
    ZooEntry("llama-layer", _llama, (("x", -1.0, 1.0),), note="TVM 0.27 does not build it"),
    ZooEntry("matmul-chain", _matmul_chain, (("x", -1.0, 1.0),), needs_transformers=False),
    ZooEntry("lora-sum", _lora_sum, (("x", -1.0, 1.0),), needs_transformers=False),
    ZooEntry("qkv-inputs", _qkv_inputs, (("x", -1.0, 1.0), ("wq", -0.5, 0.5), ("wk", -0.5, 0.5),
                                         ("wv", -0.5, 0.5)), needs_transformers=False),
    ZooEntry("variance-norm", _variance_norm, (("x", -2.0, 2.0),), needs_transformers=False),
)}


def missing_requirements() -> str:
    """Why the zoo cannot be built here ('' when it can)."""
    import importlib.util

    missing = [m for m in ("torch", "transformers") if importlib.util.find_spec(m) is None]
    return f"the zoo needs {' and '.join(missing)}: pip install 'tvm_numguard[zoo]'" if missing else ""


def export(name: str, directory: str) -> str:
    """Export zoo entry ``name`` (seeded weights) to ``directory/<name>.pt2``; its path."""
    import torch

    entry = ENTRIES[name]
    torch.manual_seed(SEED)
    module, args = entry.make()
    program = torch.export.export(module.eval(), args)
    path = os.path.join(directory, f"{name}.pt2")
    torch.export.save(program, path)
    return path
